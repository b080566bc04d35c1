"""Projects: create and edit them, and count what each overrides (PRD §4.1, §4.5, §4.7).

``members`` (usernames) are who may start tasks in the project and read its knowledge,
besides staff and the users who may see every task (``monitoring.access``, issue 31); a
non-staff user who creates a project is one of its members.

A project (name, description, tech stack, working directory) may override role and card
switches, invoke and tool matrix cells, constraints and prompts; the effective value is the
project's override else the global one. ``name``, ``description`` and ``tech_stack`` feed the
PRD §4.5 prompt variables; ``working_directory`` is where file tools are confined (§4.7
文件范围), blank = ``<data>/projects/<slug>``.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath
from typing import Any

from django.contrib.auth import get_user_model
from django.db import transaction

from capabilities.errors import ConfigInvalid, Problems
from capabilities.models import (
    ConfigChange,
    InvokePermission,
    Project,
    ProjectCapabilityOverride,
    ProjectRoleOverride,
    RoleConstraint,
    ToolPermission,
)
from capabilities.versions import commit_change, document_version, expect_version, lock_config
from teamclaw.api_fields import unknown_field_reason
from teamclaw.json_types import json_type_name
from teamclaw.plain_text import hidden_character_problem

SLUG = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
FIELDS = {"name": 200, "description": 5000, "tech_stack": 500, "working_directory": 1000}
MAX_MEMBERS = 500
"""Most users one project may list as members."""


def override_counts(project: Project) -> dict[str, int]:
    """How many governed values ``project`` overrides, per kind (``team.projects`` adds its
    prompt overrides)."""
    return {
        "roles": ProjectRoleOverride.objects.filter(project=project).count(),
        "capabilities": ProjectCapabilityOverride.objects.filter(project=project).count(),
        "invoke_matrix": InvokePermission.objects.filter(project=project).count(),
        "tool_matrix": ToolPermission.objects.filter(project=project).count(),
        "constraints": RoleConstraint.objects.filter(project=project).count(),
    }


def project_document(project: Project) -> dict[str, Any]:
    """``{slug, name, description, tech_stack, working_directory, members (usernames), version,
    created_at, updated_at}`` (``team.projects.project_document`` adds the override counts)."""
    doc: dict[str, Any] = {
        "slug": project.slug,
        "name": project.name,
        "description": project.description,
        "tech_stack": project.tech_stack,
        "working_directory": project.working_directory,
        "members": member_names(project),
        "version": document_version("project", project),
        "created_at": project.created_at.isoformat(),
        "updated_at": project.updated_at.isoformat(),
    }
    return doc


def member_names(project: Project) -> list[str]:
    """The usernames of ``project``'s members, sorted (who may use it besides staff, issue 31)."""
    return sorted(project.members.values_list("username", flat=True))


def _check_members(value: Any, problems: Problems, clean: dict[str, Any]) -> None:
    """``members``: a list of at most MAX_MEMBERS usernames of existing users (duplicates
    folded), naming the first one that is not (cut at 150 characters)."""
    if not isinstance(value, list) or not all(isinstance(name, str) for name in value):
        problems.add("members", "must be a list of usernames")
        return
    names = sorted(set(value))
    if len(names) > MAX_MEMBERS:
        problems.add("members", f"at most {MAX_MEMBERS} members")
        return
    # an inactive user may stay listed (it cannot sign in), so a round trip of the document works
    known = set(get_user_model().objects.filter(username__in=names).values_list("username", flat=True))
    if missing := [name for name in names if name not in known]:
        problems.add("members", f"there is no user {missing[0][:150]!r}")
        return
    clean["members"] = names


def _set_members(project: Project, names: list[str]) -> dict[str, dict[str, Any]]:
    """Make ``names`` the members of ``project``; the change ``{old, new}`` when they differ."""
    old = member_names(project)
    if old == names:
        return {}
    project.members.set(get_user_model().objects.filter(username__in=names))
    return {f"projects.{project.slug}.members": {"old": old, "new": names}}


def working_directory_problem(value: str) -> str | None:
    """Why ``value`` cannot be a project's working directory, or None (blank is allowed)."""
    if not value:
        return None
    if "\x00" in value:
        return "must not contain NUL"
    path = PurePosixPath(value)
    if not path.is_absolute():
        return "must be an absolute path such as /srv/projects/shop"
    if ".." in path.parts:
        return "must not contain '..'"
    if len(path.parts) < 2:
        return "must not be the filesystem root"
    return None


def check_fields(data: Any, *, creating: bool) -> dict[str, Any]:
    """Validate project fields; ``slug`` only when creating. Any other key is refused, naming
    the keys of the request (which also carries a ``note``, and ``version`` for an edit, that
    the caller takes). Raises ConfigInvalid."""
    if not isinstance(data, dict):
        raise ConfigInvalid({"non_field_errors": ["expected an object"]})
    problems = Problems()
    clean: dict[str, Any] = {}
    request_fields = ("slug", *FIELDS, "members", "note") if creating else ("version", *FIELDS, "members", "note")
    for name in data:
        if name not in FIELDS and name not in ("slug", "members"):
            problems.add(name, unknown_field_reason(request_fields))
    if creating:
        _check_slug(data, problems, clean)
    elif "slug" in data:
        problems.add("slug", "a project's slug cannot change")
    for name, limit in FIELDS.items():
        if name in data:
            _check_text(name, data[name], limit, problems, clean)
    if "members" in data:
        _check_members(data["members"], problems, clean)
    problems.raise_if_any()
    return clean


def _check_slug(data: dict[str, Any], problems: Problems, clean: dict[str, Any]) -> None:
    """A new project's slug (required, well formed, not taken) and its required name."""
    slug = data.get("slug")
    if not isinstance(slug, str) or not slug:
        problems.add("slug", "this field is required")
    elif not SLUG.match(slug):
        problems.add("slug", "use 1-64 lowercase letters, digits, '-' or '_', starting with a letter or digit")
    elif Project.objects.filter(slug=slug).exists():
        problems.add("slug", f"project {slug!r} already exists")
    else:
        clean["slug"] = slug
    if "name" not in data:
        problems.add("name", "this field is required")


def _check_text(name: str, value: Any, limit: int, problems: Problems, clean: dict[str, Any]) -> None:
    """One text field: a string of at most ``limit`` characters once stripped; ``name`` not
    blank; ``working_directory`` a usable absolute path."""
    if not isinstance(value, str):
        problems.add(name, f"must be a string, not {json_type_name(value)}")
        return
    value = value.strip()
    if name == "name" and not value:
        problems.add(name, "must not be blank")
    elif len(value) > limit:
        problems.add(name, f"must be at most {limit} characters")
    elif reason := hidden_character_problem(value):
        problems.add(name, reason)
    elif name == "working_directory" and (reason := working_directory_problem(value)):
        problems.add(name, reason)
    else:
        clean[name] = value


def add_project(data: Any, *, note: str = "", actor: Any = None) -> tuple[ConfigChange | None, Project]:
    """Create a project (audited as ``project``, one config version): the audit row and the
    project. Raises ConfigInvalid."""
    with transaction.atomic():
        lock_config()
        clean = check_fields(data, creating=True)
        members = clean.pop("members", [])
        if getattr(actor, "is_authenticated", False) and not actor.is_staff and actor.username not in members:
            members = sorted([*members, actor.username])  # a non-staff creator may use what it made
        project = Project.objects.create(**clean)
        changes = {f"projects.{project.slug}.created": {"old": None, "new": project.name}}
        changes.update(
            {f"projects.{project.slug}.{k}": {"old": None, "new": v} for k, v in clean.items() if k != "slug" and v}
        )
        changes.update(_set_members(project, members))
        change = commit_change(
            "project", documents=["project"], changes=changes, project=project, note=note, actor=actor
        )
    return change, project


def edit_project(
    project: Project, *, version: int | None, data: Any, note: str = "", actor: Any = None
) -> tuple[ConfigChange | None, Project]:
    """Edit a project's fields as one change: the audit row (None when nothing changed) and
    the project as saved. Raises ConfigInvalid or StaleVersion."""
    clean = check_fields(data, creating=False)
    with transaction.atomic():
        lock_config()
        expect_version("project", project, version)
        project = Project.objects.filter(pk=project.pk).first() or _gone(project)
        changes = _set_members(project, clean.pop("members")) if "members" in clean else {}
        for name, value in clean.items():
            if getattr(project, name) != value:
                changes[f"projects.{project.slug}.{name}"] = {"old": getattr(project, name), "new": value}
                setattr(project, name, value)
        if any(not key.endswith(".members") for key in changes):
            project.save()
        change = commit_change(
            "project", documents=["project"], changes=changes, project=project, note=note, actor=actor
        )
    return change, project


def _gone(project: Project) -> Project:
    raise ConfigInvalid({"project": [f"project {project.slug!r} no longer exists"]})
