"""Export the configuration as a document (US-10), globally or one project's overrides.

The document follows ``team.config_schema`` and re-imports to no change. It holds
roles, capability cards (skill cards travel with their skill package, seed 003), the invoke
and tool matrices (PRD §4.7), constraints and the active prompt versions (PRD §4.5), with
``history=True`` every version. Never exported: ``executor_config`` (plugin URLs, keys,
credentials), users, tokens, settings - an export holds no secret.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import yaml

from capabilities.config import current_version
from capabilities.matrices import INVOKE, TOOL, layers, role_slugs
from capabilities.models import (
    AgentRole,
    CapabilityCard,
    Project,
    ProjectCapabilityOverride,
    ProjectRoleOverride,
    RoleConstraint,
)
from capabilities.snapshot import CONSTRAINT_FIELDS, effective_constraints
from prompts.models import TEMPLATE_TYPES, PromptTemplate
from team.config_schema import FORMAT
from teamclaw.runtime.config import TOOLS


def _prompt_version(version: Any) -> dict[str, Any]:
    return {
        "version": version.version,
        "content": version.content,
        "variables": list(version.variables or []),
        "language": version.language,
    }


def _prompts(project: Project | None, history: bool) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    templates = (
        PromptTemplate.objects.filter(project=project)
        .select_related("role")
        .prefetch_related("versions")
        .order_by("role__sort_order", "role__role")
    )
    order = {t: i for i, t in enumerate(TEMPLATE_TYPES)}
    for template in sorted(templates, key=lambda t: (t.role.sort_order, t.role.role, order[t.template_type])):
        versions = sorted(template.versions.all(), key=lambda v: (v.created_at, v.pk))
        active = next((v for v in versions if v.is_active), None)
        if active is None:
            continue
        entry = _prompt_version(active)
        if history:
            entry["history"] = [_prompt_version(v) for v in versions]
        out.setdefault(template.role.role, {})[template.template_type] = entry
    return out


def _nested(cells: dict[tuple[str, str], Any], rows: list[str], cols: list[str]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for row in rows:
        values = {col: cells[(row, col)] for col in cols if (row, col) in cells}
        if values:
            out[row] = values
    return out


def export_global(history: bool = False) -> dict[str, Any]:
    """The global configuration document (``scope: global``)."""
    roles = list(AgentRole.objects.order_by("sort_order", "role"))
    slugs = [r.role for r in roles]
    invoke_global, _ = layers(INVOKE, None)
    tool_global, _ = layers(TOOL, None)
    cards = CapabilityCard.objects.filter(skill__isnull=True).prefetch_related("owner_roles").order_by("capability_id")
    return {
        "format": FORMAT,
        "scope": "global",
        "config_version": current_version(),
        "exported_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "roles": {
            r.role: {
                "display_name": r.display_name,
                "emoji": r.emoji,
                "description": r.description,
                "responsibilities": list(r.responsibilities),
                "enabled": r.enabled,
            }
            for r in roles
        },
        "capabilities": {
            c.capability_id: {
                "name": c.name,
                "description": c.description,
                "category": c.category,
                "input_schema": c.input_schema,
                "output_schema": c.output_schema,
                "version": c.version,
                "owner_roles": sorted(r.role for r in c.owner_roles.all()),
                "required_tools": list(c.required_tools),
                "timeout": c.timeout_s,
                "tags": list(c.tags),
                "enabled": c.enabled,
                "executor": c.executor,
                "idempotent": c.idempotent,
            }
            for c in cards
        },
        "invoke_matrix": {
            caller: {callee: invoke_global.get((caller, callee), False) for callee in slugs} for caller in slugs
        },
        "tool_matrix": {role: {tool: tool_global.get((role, tool), "deny") for tool in TOOLS} for role in slugs},
        "constraints": {r.role: effective_constraints(r, None).as_dict() for r in roles},
        "prompts": _prompts(None, history),
    }


def export_project(project: Project, history: bool = False) -> dict[str, Any]:
    """``project``'s overrides (``scope: project``): only what differs from global."""
    slugs = role_slugs()
    _, invoke_overrides = layers(INVOKE, project)
    _, tool_overrides = layers(TOOL, project)
    constraints = {}
    for row in RoleConstraint.objects.filter(project=project).select_related("role").order_by("role__sort_order"):
        values = {name: getattr(row, name) for name in CONSTRAINT_FIELDS if getattr(row, name) is not None}
        if values:
            constraints[row.role.role] = values
    return {
        "format": FORMAT,
        "scope": "project",
        "config_version": current_version(),
        "exported_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "project": {
            "slug": project.slug,
            "name": project.name,
            "description": project.description,
            "tech_stack": project.tech_stack,
            "working_directory": project.working_directory,
        },
        "roles": {
            o.role.role: {"enabled": o.enabled}
            for o in ProjectRoleOverride.objects.filter(project=project).select_related("role").order_by("role__role")
        },
        "capabilities": {
            o.card.capability_id: {"enabled": o.enabled}
            for o in ProjectCapabilityOverride.objects.filter(project=project)
            .select_related("card")
            .order_by("card__capability_id")
        },
        "invoke_matrix": _nested(invoke_overrides, slugs, slugs),
        "tool_matrix": _nested(tool_overrides, slugs, list(TOOLS)),
        "constraints": constraints,
        "prompts": _prompts(project, history),
    }


def export_document(project: Project | None = None, history: bool = False) -> dict[str, Any]:
    """The global document, or ``project``'s."""
    return export_project(project, history) if project is not None else export_global(history)


class _Dumper(yaml.SafeDumper):
    """Safe dumper: never anchors/aliases, multi-line strings as ``|`` blocks."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _str(dumper: yaml.SafeDumper, data: str) -> yaml.ScalarNode:
    style = "|" if "\n" in data else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


_Dumper.add_representer(str, _str)


def dump(document: dict[str, Any], fmt: str = "yaml") -> str:
    """``document`` as YAML (safe dumper, readable blocks) or JSON (UTF-8, indented)."""
    if fmt == "json":
        return json.dumps(document, ensure_ascii=False, indent=2) + "\n"
    return yaml.dump(document, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100)
