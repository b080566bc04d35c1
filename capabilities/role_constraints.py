"""Role constraints as editable documents, globally and per project (PRD §4.7 约束条件).

Fields and defaults (PRD §4.7): ``timeout_s`` 60 s per invoke, ``max_retries`` 3,
``file_scope`` "." (a directory inside the project directory), ``token_budget`` 50,000
tokens per task, ``max_concurrent_instances`` 4 per role; and ``memory_tokens``, the
estimated tokens of history a model-backed agent of the role replays (seed 003
MemoryContext; ``null`` = the process default ``TEAMCLAW_MEMORY_TOKENS``). Bounds come from
the model's validators, so the API, the pages, the import schema and the database agree.

A global row sets every field (``memory_tokens`` may stay ``null``: the process default); a
project row's ``null`` field inherits the global value.
"""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any

from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import transaction
from django.utils.translation import gettext_lazy

from capabilities.errors import ConfigInvalid, Problems
from capabilities.matrices import SaveResult, self_invocation_conflicts
from capabilities.models import AgentRole, Project, RoleConstraint
from capabilities.snapshot import CONSTRAINT_FIELDS, DEFAULT_WHEN_NULL, effective_constraints
from capabilities.versions import commit_change, document_version, expect_version, lock_config
from teamclaw.json_types import json_type_name
from teamclaw.runtime.config import Constraints

FILE_SCOPE_MAX = RoleConstraint._meta.get_field("file_scope").max_length or 500
UNITS = {
    "timeout_s": "s",
    "max_retries": "retries",
    "file_scope": "",
    "token_budget": "tokens",
    "max_concurrent_instances": "instances",
    "memory_tokens": "tokens",
}
UNIT_LABELS = {
    "timeout_s": gettext_lazy("s"),
    "max_retries": gettext_lazy("retries"),
    "file_scope": "",
    "token_budget": gettext_lazy("tokens"),
    "max_concurrent_instances": gettext_lazy("instances"),
    "memory_tokens": gettext_lazy("tokens"),
}
"""``UNITS`` as the constraints page shows them, in the page's language (the API's
messages keep ``UNITS``)."""
LABELS = {
    "timeout_s": gettext_lazy("Timeout"),
    "max_retries": gettext_lazy("Retries"),
    "file_scope": gettext_lazy("File scope"),
    "token_budget": gettext_lazy("Token budget"),
    "max_concurrent_instances": gettext_lazy("Max concurrent instances"),
    "memory_tokens": gettext_lazy("Memory budget"),
}


def bounds() -> dict[str, dict[str, int]]:
    """``field -> {minimum, maximum}`` for the numeric fields, read from the model validators
    (``file_scope`` gets ``{maxLength}``)."""
    out: dict[str, dict[str, int]] = {}
    for name in CONSTRAINT_FIELDS:
        field = RoleConstraint._meta.get_field(name)
        if name == "file_scope":
            out[name] = {"maxLength": FILE_SCOPE_MAX}
            continue
        limits = {"minimum": 0}
        for validator in getattr(field, "validators", ()):
            if isinstance(validator, MinValueValidator):
                limits["minimum"] = int(validator.limit_value)
            elif isinstance(validator, MaxValueValidator):
                limits["maximum"] = int(validator.limit_value)
        out[name] = limits
    return out


def file_scope_problem(value: str) -> str | None:
    """Why ``value`` is not a usable file scope (a relative directory inside the project
    directory: no absolute path, no ``..``, no ``~``), or None."""
    if not value.strip():
        return "must not be blank; use '.' for the whole project directory"
    if len(value) > FILE_SCOPE_MAX:
        return f"must be at most {FILE_SCOPE_MAX} characters"
    if "\x00" in value or "\\" in value:
        return "must be a plain relative path (no NUL or backslash)"
    path = PurePosixPath(value)
    if path.is_absolute() or value.startswith("~"):
        return "must be relative to the project directory, not absolute"
    if ".." in path.parts:
        return "must stay inside the project directory ('..' is not allowed)"
    return None


def check_values(values: Any, *, allow_null: bool, prefix: str = "constraints") -> dict[str, Any]:
    """Validate ``{field: value}``; returns the cleaned values.

    Raises ConfigInvalid listing every bad field (``constraints.<field>``): unknown fields,
    wrong types, values outside the bounds, ``null`` outside a project (except for the
    fields of ``DEFAULT_WHEN_NULL``, where a global ``null`` means the process default).
    """
    problems = Problems()
    if not isinstance(values, dict):
        raise ConfigInvalid({prefix: ["must be an object {field: value}"]})
    limits = bounds()
    clean: dict[str, Any] = {}
    for name, value in values.items():
        path = f"{prefix}.{name}"
        if name not in CONSTRAINT_FIELDS:
            problems.add(path, f"unknown constraint; the constraints are {', '.join(CONSTRAINT_FIELDS)}")
            continue
        if value is None:
            if allow_null or name in DEFAULT_WHEN_NULL:
                clean[name] = None
            else:
                problems.add(path, "is required globally; null (inherit) only applies to a project")
            continue
        if name == "file_scope":
            if not isinstance(value, str):
                problems.add(path, f"must be a string, not {json_type_name(value)}")
            elif reason := file_scope_problem(value):
                problems.add(path, reason)
            else:
                clean[name] = value.strip()
            continue
        if isinstance(value, bool) or not isinstance(value, int):
            problems.add(path, "must be a whole number")
            continue
        low, high = limits[name]["minimum"], limits[name].get("maximum")
        if value < low or (high is not None and value > high):
            unit = f" {UNITS[name]}" if UNITS[name] else ""
            problems.add(path, f"must be between {low} and {high}{unit}")
            continue
        clean[name] = value
    problems.raise_if_any()
    return clean


def _row(role: AgentRole, project: Project | None) -> RoleConstraint | None:
    return RoleConstraint.objects.filter(role=role, project=project).first()


def constraints_document(role: AgentRole, project: Project | None = None) -> dict[str, Any]:
    """``{version, role, project, constraints (effective), global, overrides, bounds, defaults}``;
    ``overrides`` (project only) has ``null`` for inherited fields."""
    global_values = effective_constraints(role, None).as_dict()
    doc: dict[str, Any] = {
        "version": document_version(f"constraints:{role.role}", project),
        "role": role.role,
        "project": project.slug if project else None,
        "constraints": effective_constraints(role, project).as_dict(),
        "global": global_values,
        "bounds": bounds(),
        "defaults": Constraints().as_dict(),
    }
    if project is not None:
        row = _row(role, project)
        doc["overrides"] = {name: getattr(row, name) if row else None for name in CONSTRAINT_FIELDS}
    return doc


def apply_values(role: AgentRole, project: Project | None, values: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Write cleaned ``values`` to the layer; returns ``{constraints.<role>.<field>: {old, new}}``.

    Globally the row gets every field (missing ones from the current effective values); in a
    project a value equal to the global one is stored as ``null`` (inherit).
    """
    changes: dict[str, dict[str, Any]] = {}
    row = _row(role, project)
    global_values = effective_constraints(role, None).as_dict()
    if project is None:
        current = global_values
        target = {**current, **values}
    else:
        current = {name: getattr(row, name) if row else None for name in CONSTRAINT_FIELDS}
        target = dict(current)
        for name, value in values.items():
            target[name] = None if value is None or value == global_values[name] else value
    for name in CONSTRAINT_FIELDS:
        if target[name] != current[name]:
            changes[f"constraints.{role.role}.{name}"] = {"old": current[name], "new": target[name]}
    if not changes:
        return changes
    if project is not None and all(v is None for v in target.values()):
        RoleConstraint.objects.filter(role=role, project=project).delete()
    else:
        RoleConstraint.objects.update_or_create(role=role, project=project, defaults=target)
    return changes


def save_constraints(
    role: AgentRole,
    *,
    project: Project | None,
    version: int | None,
    values: Any,
    note: str = "",
    actor: Any = None,
) -> SaveResult:
    """Save some or all constraint fields of ``role`` as one change (PRD §4.7, §4.8).

    Raises ConfigInvalid (every bad field, nothing saved; a ``max_concurrent_instances``
    below 2 for a role allowed to invoke itself, here or in a project inheriting it,
    ``matrices.self_invocation_conflicts``) or StaleVersion.
    """
    clean = check_values(values, allow_null=project is not None)
    name = f"constraints:{role.role}"
    with transaction.atomic():
        lock_config()
        expect_version(name, project, version)
        if not AgentRole.objects.filter(pk=role.pk).exists():
            raise ConfigInvalid({"role": [f"role {role.role!r} no longer exists"]})
        limited = [role.role] if "max_concurrent_instances" in clean else []
        before = self_invocation_conflicts(limited, project)
        changes = apply_values(role, project, clean)
        if conflicts := self_invocation_conflicts(limited, project, excluding=before):
            raise ConfigInvalid({"constraints.max_concurrent_instances": [c.reason() for c in conflicts]})
        change = commit_change(
            "constraint", documents=[name], changes=changes, project=project, role=role.role, note=note, actor=actor
        )
    return SaveResult(change, constraints_document(role, project))
