"""Roles with their prompts (PRD §4.1, US-09): the AgentRoleDefinition of a role, which
includes its prompt config, and creating or editing a custom role together with its six
prompt templates, as one config version (the role's rows are ``capabilities.roles``)."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from capabilities.matrices import SaveResult
from capabilities.models import AgentRole, Project, ProjectRoleOverride
from capabilities.registry import role_definition
from capabilities.roles import add_role, check_new_role, edit_role
from capabilities.versions import commit_change, document_version, lock_config
from prompts.builtin import seed_prompts
from team.snapshot import build_snapshot


def role_document(
    role: AgentRole, project: Project | None = None, definition: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The role's AgentRoleDefinition (PRD §4.1) as ``project`` sees it (``definition`` when
    the caller already built it), plus ``version``, ``global_enabled`` and, for a project,
    ``project_enabled`` (``None`` = inherits)."""
    if definition is None:
        definition = role_definition(build_snapshot(project.slug if project else None), role)
    doc = dict(definition)
    doc["version"] = document_version(f"role:{role.role}", project)
    doc["global_enabled"] = role.enabled
    if project is not None:
        override = ProjectRoleOverride.objects.filter(project=project, role=role).first()
        doc["project_enabled"] = override.enabled if override else None
    return doc


def create_role(data: Any, *, note: str = "", actor: Any = None) -> SaveResult:
    """Create a custom role (US-09) with its matrix cells, tool modes, constraints, cards
    and prompts (copies of ``copy_prompts_from``'s, else the standard templates), as one
    config version. Raises ConfigInvalid (nothing created)."""
    with transaction.atomic():
        lock_config()
        spec = check_new_role(data)
        new = add_role(spec)
        changes = {**new.changes, **seed_prompts(new.role, source=spec["copy_prompts_from"], actor=actor)}
        change = commit_change(
            "role", documents=new.documents, changes=changes, role=new.role.role, note=note, actor=actor
        )
    return SaveResult(change, role_document(new.role))


def update_role(
    role: AgentRole,
    *,
    project: Project | None,
    version: int | None,
    data: Any,
    note: str = "",
    actor: Any = None,
) -> SaveResult:
    """Edit a role, or switch it on/off for ``project`` (PRD §4.1), and its document as saved.
    Raises ConfigInvalid or StaleVersion; nothing is saved then."""
    change, saved = edit_role(role, project=project, version=version, data=data, note=note, actor=actor)
    return SaveResult(change, role_document(saved, project))
