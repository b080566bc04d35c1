"""Test helpers: ConfigSnapshots without the database, built from the shipped built-in YAML."""

from __future__ import annotations

from typing import Any

from capabilities.builtin import read_builtin
from teamclaw.runtime import CardSpec, ConfigSnapshot, Constraints, RoleSpec, ToolMode


def builtin_snapshot(version: int = 1, **constraint_overrides: Any) -> ConfigSnapshot:
    """The built-in team (roles, cards, both matrices, constraints) as a snapshot."""
    team, cards = read_builtin()
    constraints = Constraints(**{**team["constraints"], **constraint_overrides})
    roles = [
        RoleSpec(r["role"], r["display_name"], r["emoji"], r["description"], constraints=constraints, is_builtin=True)
        for r in team["roles"] + team["custom_roles"]
    ]
    specs = [
        CardSpec(
            c["id"],
            c["name"],
            c["description"],
            c["category"],
            c["input_schema"],
            c["output_schema"],
            c.get("version", "1.0.0"),
            tuple(c["owner_roles"]),
            tuple(c.get("required_tools", [])),
            c.get("timeout", 60),
            tuple(c.get("tags", [])),
        )
        for c in cards
    ]
    allowed = [(caller, target) for caller, targets in team["invoke_matrix"].items() for target in targets]
    tools = {
        (role, tool): ToolMode(mode) for role, cells in team["tool_matrix"].items() for tool, mode in cells.items()
    }
    return ConfigSnapshot.build(version=version, roles=roles, cards=specs, invoke_allowed=allowed, tool_modes=tools)


def object_schema(**properties: Any) -> dict[str, Any]:
    """``{"type": "object", "properties": ..., "required": [all]}``."""
    return {"type": "object", "properties": properties, "required": list(properties)}


def small_snapshot(
    *,
    version: int = 1,
    cards: list[CardSpec] | None = None,
    roles: list[str] | None = None,
    allowed: list[tuple[str, str]] | None = None,
    tool_modes: dict[tuple[str, str], str] | None = None,
    constraints: Constraints | None = None,
    project_dir: str | None = None,
) -> ConfigSnapshot:
    """A minimal team for focused runtime tests (roles a, b by default; a may invoke b)."""
    role_names = roles or ["a", "b"]
    specs = [RoleSpec(r, r.upper(), constraints=constraints or Constraints()) for r in role_names]
    return ConfigSnapshot.build(
        version=version,
        roles=specs,
        cards=cards or [echo_card()],
        invoke_allowed=allowed if allowed is not None else [("a", "b")],
        tool_modes={k: ToolMode(v) for k, v in (tool_modes or {}).items()},
        project_dir=project_dir,
    )


def echo_card(
    capability_id: str = "echo",
    owners: tuple[str, ...] = ("b",),
    timeout_s: int = 60,
    output_schema: dict[str, Any] | None = None,
    **extra: Any,
) -> CardSpec:
    """A card taking ``{text}`` and returning ``{text}``."""
    return CardSpec(
        capability_id,
        capability_id.title(),
        "echoes its input",
        "communication",
        object_schema(text={"type": "string"}),
        output_schema or object_schema(text={"type": "string"}),
        "1.0.0",
        owners,
        timeout_s=timeout_s,
        **extra,
    )


def plan_card(owners: tuple[str, ...] = ("b",), input_field: str = "goal", **extra: Any) -> CardSpec:
    """A ``plan`` card taking ``{<input_field>}`` and returning ``{summary}`` (strings)."""
    return CardSpec(
        "plan",
        "Plan",
        "Make a plan",
        "analysis",
        object_schema(**{input_field: {"type": "string"}}),
        object_schema(summary={"type": "string"}),
        "1.0.0",
        owners,
        **extra,
    )


PLUGIN = {
    "id": "invoice_total",
    "name": "Invoice total",
    "description": "Sums an invoice",
    "category": "analysis",
    "version": "1.0.0",
    "owner_roles": ["coderB"],
    "input_schema": {"type": "object", "properties": {"lines": {"type": "array"}}, "required": ["lines"]},
    "output_schema": {"type": "object", "properties": {"total": {"type": "number"}}, "required": ["total"]},
    "executor": "http",
    "executor_config": {"url": "http://plugins.internal:9000/total"},
}
"""A plugin capability registration body (US-12, POST /api/v1/capabilities) for an http executor."""
