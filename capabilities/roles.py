"""Role actions: add custom roles (US-09), edit, enable/disable per project, delete custom roles.

PRD §4.1: a role is an ``AgentRoleDefinition`` (display name, emoji, description,
responsibilities, capabilities, permissions, constraints, prompt config). The 8 built-in
roles can be disabled (globally or per project, 角色启用/禁用, 项目级角色配置覆盖) but never
deleted. A disabled role's capabilities are refused at invoke time with
``capability_disabled`` (the runtime reads the snapshot's enabled flags).

Every action is one config version with one audit row (``role``) and one
ConfigChangeEvent after commit (PRD §4.8). A new role's prompts and the role's document (its
AgentRoleDefinition, prompt config included) are the team app's (``team.roles``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.db.models import Max
from django.utils.translation import gettext_lazy as _lazy

from capabilities.errors import ConfigInvalid, Problems
from capabilities.matrices import SelfInvocationConflict
from capabilities.models import (
    ROLE_SLUG,
    AgentRole,
    CapabilityCard,
    ConfigChange,
    InvokePermission,
    Project,
    ProjectRoleOverride,
    RoleConstraint,
    ToolPermission,
)
from capabilities.role_constraints import check_values
from capabilities.switches import set_enabled_override
from capabilities.versions import commit_change, expect_version, lock_config
from teamclaw.api_fields import unknown_field_errors, unknown_field_reason
from teamclaw.json_types import json_type_name
from teamclaw.labels import worded
from teamclaw.plain_text import hidden_character_problem
from teamclaw.runtime.config import TOOLS, Constraints, ToolMode

RESERVED_SLUGS = frozenset({"user", "system", "operator", "new"})
"""Slugs the runtime uses for parties that are not roles (the operator is ``user``) and
``new``, which the pages use for the creation form (``/roles/new/``)."""
EDITABLE_FIELDS = (
    "display_name",
    "emoji",
    "description",
    "responsibilities",
    "display_name_zh",
    "description_zh",
    "responsibilities_zh",
    "enabled",
)
"""What an edit may set; the ``*_zh`` fields are the Chinese text pages show (blank: the English)."""
NEW_ROLE_FIELDS = (
    "role",
    "display_name",
    "emoji",
    "description",
    "responsibilities",
    "capabilities",
    "permissions",
    "constraints",
    "copy_prompts_from",
)
"""The fields ``check_new_role`` reads; a request may also carry its ``note``, any other key is refused."""
EDIT_REQUEST_FIELDS = ("version", *EDITABLE_FIELDS, "note")
TEXT_LIMITS = (
    ("display_name", 100),
    ("emoji", 16),
    ("description", 2000),
    ("display_name_zh", 100),
    ("description_zh", 2000),
)
"""The text fields of an edit and their longest length in characters."""
"""The keys of an edit request: the version loaded, the fields, the note (the caller takes
``version`` and ``note``; any other key is refused)."""
MAX_RESPONSIBILITIES = 20
DEFAULT_TOOLS = {"file_read": ToolMode.ALLOW.value}
"""Tool modes of a new role when none are given: read files, everything else denied."""
_SLUG = re.compile(ROLE_SLUG)


def _text(problems: Problems, data: dict[str, Any], name: str, limit: int, *, required: bool = False) -> str | None:
    if name not in data:
        if required:
            problems.add(name, "this field is required")
        return None
    value = data[name]
    if not isinstance(value, str):
        problems.add(name, f"must be a string, not {json_type_name(value)}")
        return None
    value = value.strip()
    if required and not value:
        problems.add(name, "must not be blank")
    elif len(value) > limit:
        problems.add(name, f"must be at most {limit} characters")
    elif reason := hidden_character_problem(value):
        problems.add(name, reason)
    else:
        return value
    return None


def _responsibilities(problems: Problems, value: Any, field: str = "responsibilities") -> list[str] | None:
    """The lines of ``value`` (a list of strings, or one text with a line each), or None
    with the problem added under ``field``."""
    if isinstance(value, str):
        value = [line.strip() for line in value.splitlines() if line.strip()]
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        problems.add(field, "must be a list of strings")
        return None
    items = [item.strip() for item in value if item.strip()]
    if len(items) > MAX_RESPONSIBILITIES:
        problems.add(field, f"at most {MAX_RESPONSIBILITIES} items")
        return None
    for index, item in enumerate(items):
        if len(item) > 200:
            problems.add(f"{field}[{index}]", "must be at most 200 characters")
            return None
        if reason := hidden_character_problem(item):
            problems.add(f"{field}[{index}]", reason)
            return None
    return items


def absent_as(value: Any, default: Any) -> Any:
    """``value``, or ``default`` when it is ``null`` (left out): ``false``, ``0`` or ``""`` in
    place of a list or an object is a wrong type, refused naming the field, not "none"."""
    return default if value is None else value


def _role_list(problems: Problems, path: str, value: Any, known: set[str]) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        problems.add(path, "must be a list of role slugs")
        return []
    for item in value:
        if item not in known:
            problems.add(path, f"unknown role {item!r}")
    return list(dict.fromkeys(value))


def _tool_modes(problems: Problems, permissions: dict[str, Any]) -> dict[str, str]:
    lists = {
        "allowed_tools": ToolMode.ALLOW.value,
        "denied_tools": ToolMode.DENY.value,
        "requires_user_confirmation": ToolMode.CONFIRM.value,
    }
    if not any(name in permissions for name in lists):
        return {tool: DEFAULT_TOOLS.get(tool, ToolMode.DENY.value) for tool in TOOLS}
    modes: dict[str, str] = {}
    for name, mode in lists.items():
        value = absent_as(permissions.get(name), [])
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            problems.add(f"permissions.{name}", "must be a list of tool names")
            continue
        for tool in value:
            if tool not in TOOLS:
                problems.add(f"permissions.{name}", f"unknown tool {tool!r}; tools are {', '.join(TOOLS)}")
            elif tool in modes and modes[tool] != mode:
                problems.add(f"permissions.{name}", f"tool {tool!r} is also listed with mode {modes[tool]}")
            else:
                modes[tool] = mode
    return {tool: modes.get(tool, ToolMode.DENY.value) for tool in TOOLS}


PERMISSION_FIELDS = frozenset(
    {
        "can_invoke",
        "can_be_invoked_by",
        "allowed_tools",
        "denied_tools",
        "requires_user_confirmation",
        "max_concurrent_instances",
    }
)
"""The fields of a new role's ``permissions`` (PRD §4.1 PermissionSet)."""


def _check_slug(problems: Problems, slug: Any) -> None:
    """A new role's slug: given, well formed, not reserved, not taken (ignoring case)."""
    if not isinstance(slug, str) or not slug:
        problems.add("role", "this field is required")
    elif not _SLUG.match(slug):
        problems.add("role", "use 2-40 letters, digits or '_', starting with a lowercase letter")
    elif slug in RESERVED_SLUGS:
        problems.add("role", f"{slug!r} is reserved")
    else:
        clash = AgentRole.objects.filter(role__iexact=slug).values_list("role", flat=True).first()
        if clash == slug:
            problems.add("role", f"role {slug!r} already exists")
        elif clash:
            problems.add("role", f"role {clash!r} already exists; slugs may not differ only in case")


def _capabilities(problems: Problems, capabilities: Any) -> list[str]:
    """The cards a new role will also offer: known ones, not a skill's; without repeats."""
    if not isinstance(capabilities, list) or not all(isinstance(c, str) for c in capabilities):
        problems.add("capabilities", "must be a list of capability ids")
        return []
    cards = {c.capability_id: c for c in CapabilityCard.objects.filter(capability_id__in=capabilities)}
    for capability_id in capabilities:
        card = cards.get(capability_id)
        if card is None:
            problems.add("capabilities", f"unknown capability {capability_id!r}")
        elif card.skill_id:
            problems.add("capabilities", f"{capability_id!r} belongs to a skill; its owners come from the skill")
    return list(dict.fromkeys(capabilities))


def _permissions(problems: Problems, permissions: Any) -> dict[str, Any]:
    """A new role's ``permissions`` object, its unknown fields refused ({} if not an object)."""
    if not isinstance(permissions, dict):
        problems.add("permissions", "must be an object (PRD §4.1 PermissionSet)")
        return {}
    for name in permissions:
        if name not in PERMISSION_FIELDS:
            problems.add(f"permissions.{name}", "unknown permission field")
    return permissions


def check_new_role(data: Any) -> dict[str, Any]:
    """Validate a US-09 custom role request; returns the cleaned spec.

    Fields: ``role`` (slug ``^[a-z][A-Za-z0-9_]{1,39}$``, unique ignoring case, not
    ``user``/``system``/``operator``), ``display_name``, ``emoji``, ``description``,
    ``responsibilities`` (list or one per line), ``capabilities`` (card ids this role will
    also offer), ``permissions`` (PRD §4.1 PermissionSet: ``can_invoke``,
    ``can_be_invoked_by`` (default ``[main]``), ``allowed_tools``, ``denied_tools``,
    ``requires_user_confirmation``, ``max_concurrent_instances``), ``constraints``
    (PRD §4.7 fields; defaults for the rest), ``copy_prompts_from`` (a role whose active
    prompt templates are copied; default: the standard templates). Raises ConfigInvalid,
    also for a role that may invoke itself with one instance (``matrices.
    SelfInvocationConflict``).
    """
    if not isinstance(data, dict):
        raise ConfigInvalid({"non_field_errors": [worded(_lazy("expected an object"))]})
    problems = Problems()
    problems.extend(unknown_field_errors(data, (*NEW_ROLE_FIELDS, "note")))
    slug = data.get("role")
    _check_slug(problems, slug)
    spec: dict[str, Any] = {"role": slug}
    spec["display_name"] = _text(problems, data, "display_name", 100, required=True)
    spec["emoji"] = _text(problems, data, "emoji", 16) or ""
    spec["description"] = _text(problems, data, "description", 2000) or ""
    spec["responsibilities"] = _responsibilities(problems, absent_as(data.get("responsibilities"), []))
    known = set(AgentRole.objects.values_list("role", flat=True))
    if isinstance(slug, str):
        known.add(slug)
    spec["capabilities"] = _capabilities(problems, absent_as(data.get("capabilities"), []))
    permissions = _permissions(problems, absent_as(data.get("permissions"), {}))
    spec["can_invoke"] = _role_list(problems, "permissions.can_invoke", permissions.get("can_invoke"), known)
    default_callers = ["main"] if "main" in known else []
    spec["can_be_invoked_by"] = _role_list(
        problems,
        "permissions.can_be_invoked_by",
        permissions.get("can_be_invoked_by", default_callers),
        known,
    )
    spec["tools"] = _tool_modes(problems, permissions)
    constraints = absent_as(data.get("constraints"), {})
    if "max_concurrent_instances" in permissions and isinstance(constraints, dict):
        constraints = {**constraints, "max_concurrent_instances": permissions["max_concurrent_instances"]}
    try:
        spec["constraints"] = {**Constraints().as_dict(), **check_values(constraints, allow_null=False)}
    except ConfigInvalid as exc:
        for path, reasons in exc.errors.items():
            for reason in reasons:
                problems.add(path, reason)
    limit = spec.get("constraints", {}).get("max_concurrent_instances")
    if isinstance(slug, str) and slug in spec["can_invoke"] and isinstance(limit, int) and limit < 2:
        given = "permissions" if "max_concurrent_instances" in permissions else "constraints"
        problems.add(f"{given}.max_concurrent_instances", SelfInvocationConflict(slug, None, limit).reason())
    source = data.get("copy_prompts_from")
    source = None if source is None or source == "" else source
    if source is not None and (not isinstance(source, str) or source not in known - {slug}):
        problems.add("copy_prompts_from", f"unknown role {source!r}")
    spec["copy_prompts_from"] = source
    problems.raise_if_any()
    return spec


@dataclass(frozen=True)
class NewRole:
    """A custom role just added (not yet committed): the row, the audit ``changes``
    (``{path: {old, new}}``) and the config ``documents`` it touched."""

    role: AgentRole
    changes: dict[str, dict[str, Any]]
    documents: list[str]


def add_role(spec: dict[str, Any]) -> NewRole:
    """Add a custom role (US-09) checked by ``check_new_role``: its row, its invoke matrix
    cells (both directions), tool modes, constraints and the cards it owns. Call it inside a
    transaction holding ``lock_config``; ``team.roles.create_role`` adds its prompts and
    commits the change."""
    slug = spec["role"]
    order = (AgentRole.objects.aggregate(top=Max("sort_order"))["top"] or 0) + 1
    role = AgentRole.objects.create(
        role=slug,
        display_name=spec["display_name"],
        emoji=spec["emoji"],
        description=spec["description"],
        responsibilities=spec["responsibilities"],
        is_builtin=False,
        sort_order=order,
        metadata={"source": "custom role (US-09)"},
    )
    roles = {r.role: r for r in AgentRole.objects.all()}
    changes: dict[str, dict[str, Any]] = {f"roles.{slug}.created": {"old": None, "new": spec["display_name"]}}
    cells = {(slug, target): target in spec["can_invoke"] for target in roles}
    cells.update({(caller, slug): caller in spec["can_be_invoked_by"] for caller in roles})
    cells[(slug, slug)] = slug in spec["can_invoke"]
    InvokePermission.objects.bulk_create(
        InvokePermission(project=None, caller=roles[c], target=roles[t], allowed=allowed)
        for (c, t), allowed in cells.items()
    )
    for (caller, target), allowed in sorted(cells.items()):
        if allowed:
            changes[f"invoke_matrix.{caller}.{target}"] = {"old": None, "new": True}
    ToolPermission.objects.bulk_create(
        ToolPermission(project=None, role=role, tool=tool, mode=mode) for tool, mode in spec["tools"].items()
    )
    for tool, mode in spec["tools"].items():
        changes[f"tool_matrix.{slug}.{tool}"] = {"old": None, "new": mode}
    RoleConstraint.objects.create(project=None, role=role, **spec["constraints"])
    for name, value in spec["constraints"].items():
        changes[f"constraints.{slug}.{name}"] = {"old": None, "new": value}
    documents = [f"role:{slug}", "invoke_matrix", "tool_matrix", f"constraints:{slug}"]
    for card in CapabilityCard.objects.filter(capability_id__in=spec["capabilities"]):
        old = sorted(card.owner_roles.values_list("role", flat=True))
        card.owner_roles.add(role)
        changes[f"capabilities.{card.capability_id}.owner_roles"] = {"old": old, "new": sorted([*old, slug])}
        documents.append(f"capability:{card.capability_id}")
    return NewRole(role, changes, documents)


def check_role_edit(data: Any, project: Project | None) -> dict[str, Any]:
    """Validate a role edit: globally any of ``display_name``, ``emoji``, ``description``,
    ``responsibilities``, their Chinese ``display_name_zh``, ``description_zh``,
    ``responsibilities_zh`` (blank: pages show the English), ``enabled``; in a project only
    ``enabled`` (``null`` = inherit).
    Raises ConfigInvalid."""
    if not isinstance(data, dict):
        raise ConfigInvalid({"non_field_errors": [worded(_lazy("expected an object"))]})
    problems = Problems()
    clean: dict[str, Any] = {}
    for name in data:
        if name == "role":
            problems.add(name, "a role's slug cannot change; create a new role instead")
        elif name not in EDITABLE_FIELDS:
            problems.add(name, unknown_field_reason(EDIT_REQUEST_FIELDS))
        elif project is not None and name != "enabled":
            problems.add(name, "only 'enabled' can be set per project; edit the other fields globally")
    if "enabled" in data:
        value = data["enabled"]
        if value is None and project is not None:
            clean["enabled"] = None
        elif not isinstance(value, bool):
            problems.add("enabled", "must be true or false" + (" (or null to inherit)" if project else ""))
        else:
            clean["enabled"] = value
    if project is None:
        clean.update(_global_fields(problems, data))
    problems.raise_if_any()
    return clean


def _global_fields(problems: Problems, data: dict[str, Any]) -> dict[str, Any]:
    """The texts and responsibilities (both languages) of a global role edit, checked; what
    is wrong is added to ``problems``."""
    clean: dict[str, Any] = {}
    for name, limit in TEXT_LIMITS:
        if name in data:
            value = _text(problems, data, name, limit, required=name == "display_name")
            if value is not None:
                clean[name] = value
    for name in ("responsibilities", "responsibilities_zh"):
        if name in data:
            items = _responsibilities(problems, data[name], name)
            if items is not None:
                clean[name] = items
    return clean


def edit_role(
    role: AgentRole,
    *,
    project: Project | None,
    version: int | None,
    data: Any,
    note: str = "",
    actor: Any = None,
) -> tuple[ConfigChange | None, AgentRole]:
    """Edit a role, or switch it on/off for ``project`` (PRD §4.1): the audit row (None when
    nothing changed) and the role as saved. Raises ConfigInvalid or StaleVersion; nothing is
    saved then."""
    clean = check_role_edit(data, project)
    name = f"role:{role.role}"
    with transaction.atomic():
        lock_config()
        expect_version(name, project, version)
        role = AgentRole.objects.filter(pk=role.pk).first() or _gone(role)
        changes: dict[str, dict[str, Any]] = {}
        if project is None:
            for field, value in clean.items():
                if getattr(role, field) != value:
                    changes[f"roles.{role.role}.{field}"] = {"old": getattr(role, field), "new": value}
                    setattr(role, field, value)
            if changes:
                role.save()
        elif "enabled" in clean:
            switched = set_enabled_override(ProjectRoleOverride, project, "role", role, role.enabled, clean["enabled"])
            if switched:
                changes[f"roles.{role.role}.enabled"] = switched
        change = commit_change(
            "role", documents=[name], changes=changes, project=project, role=role.role, note=note, actor=actor
        )
    return change, role


def _gone(role: AgentRole) -> AgentRole:
    raise ConfigInvalid({"role": [worded(_lazy("role %(role)r no longer exists"), role=role.role)]})


def delete_role(role: AgentRole, *, version: int | None, note: str = "", actor: Any = None) -> None:
    """Delete a custom role with its cells, constraints, overrides and prompts (US-09).

    Refused (ConfigInvalid) for a built-in role ("can be disabled but not deleted") and
    while the role is the only owner of a capability. Raises StaleVersion too.
    """
    name = f"role:{role.role}"
    with transaction.atomic():
        lock_config()
        expect_version(name, None, version)
        role = AgentRole.objects.filter(pk=role.pk).first() or _gone(role)
        if role.is_builtin:
            raise ConfigInvalid({"role": [worded(_lazy("built-in roles can be disabled but not deleted"))]})
        sole = [
            card.capability_id
            for card in CapabilityCard.objects.filter(owner_roles=role).prefetch_related("owner_roles")
            if len(card.owner_roles.all()) == 1
        ]
        if sole:
            raise ConfigInvalid(
                {
                    "role": [
                        worded(
                            _lazy("%(role)s is the only owner of %(capabilities)s; give them another owner first"),
                            role=role.role,
                            capabilities=", ".join(sorted(sole)),
                        )
                    ]
                }
            )
        slug = role.role
        changes: dict[str, dict[str, Any]] = {f"roles.{slug}.deleted": {"old": role.display_name, "new": None}}
        for card in CapabilityCard.objects.filter(owner_roles=role):
            owners = sorted(card.owner_roles.values_list("role", flat=True))
            changes[f"capabilities.{card.capability_id}.owner_roles"] = {
                "old": owners,
                "new": [o for o in owners if o != slug],
            }
        role.delete()
        commit_change(
            "role",
            documents=[name, "invoke_matrix", "tool_matrix", f"constraints:{slug}"],
            changes=changes,
            role=slug,
            note=note,
            actor=actor,
        )
