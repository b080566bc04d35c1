"""Registry queries (PRD §4.2 发现接口) and the AgentRoleDefinition view (PRD §4.1).

These read the effective configuration (a ConfigSnapshot), so project overrides show.
"""

from __future__ import annotations

from typing import Any

from capabilities.models import AgentRole, CapabilityCard
from capabilities.snapshot import card_spec
from teamclaw.runtime.config import TOOLS, CardSpec, ConfigSnapshot, ToolMode


def card_document(card: CardSpec | CapabilityCard) -> dict[str, Any]:
    """A card in the API's shape (PRD §2.2 field names; ``timeout`` in seconds)."""
    if isinstance(card, CapabilityCard):
        card = card_spec(card)
    return {
        "id": card.capability_id,
        "name": card.name,
        "description": card.description,
        "category": card.category,
        "input_schema": dict(card.input_schema),
        "output_schema": dict(card.output_schema),
        "version": card.version,
        "owner_roles": list(card.owner_roles),
        "required_tools": list(card.required_tools),
        "timeout": card.timeout_s,
        "tags": list(card.tags),
        "enabled": card.enabled,
        "executor": card.executor,
        "skillId": card.skill_id,
        "type": str(card.capability_type),
        "address": card.address,
        "idempotent": card.is_idempotent,
    }


def query_capability(snapshot: ConfigSnapshot, capability_id: str) -> CardSpec | None:
    """``query_capability(capabilityId)``: the card, or None."""
    return snapshot.cards.get(capability_id)


def query_capabilities_by_role(snapshot: ConfigSnapshot, role: str) -> list[CardSpec]:
    """``query_capabilities_by_role(role)``: cards the role owns."""
    return sorted((c for c in snapshot.cards.values() if role in c.owner_roles), key=lambda c: c.capability_id)


def query_capabilities_by_category(snapshot: ConfigSnapshot, category: str) -> list[CardSpec]:
    """``query_capabilities_by_category(category)``."""
    return sorted((c for c in snapshot.cards.values() if c.category == category), key=lambda c: c.capability_id)


def search_capabilities(snapshot: ConfigSnapshot, keyword: str) -> list[CardSpec]:
    """``search_capabilities(keyword)``: case-insensitive match on id, name, description, tags."""
    needle = keyword.strip().lower()
    return sorted(
        (
            c
            for c in snapshot.cards.values()
            if needle in c.capability_id.lower()
            or needle in c.name.lower()
            or needle in c.description.lower()
            or any(needle in tag.lower() for tag in c.tags)
        ),
        key=lambda c: c.capability_id,
    )


def filter_capabilities(
    snapshot: ConfigSnapshot,
    *,
    role: str = "",
    category: str = "",
    q: str = "",
    skill_id: str = "",
    capability_type: str = "",
) -> list[CardSpec]:
    """Cards matching every given filter (blank filters match all), sorted by id."""
    cards = search_capabilities(snapshot, q) if q else sorted(snapshot.cards.values(), key=lambda c: c.capability_id)
    return [
        c
        for c in cards
        if (not role or role in c.owner_roles)
        and (not category or c.category == category)
        and (not skill_id or c.skill_id == skill_id)
        and (not capability_type or c.capability_type == capability_type)
    ]


def get_capability_dependency_graph(snapshot: ConfigSnapshot) -> dict[str, Any]:
    """``get_capability_dependency_graph()``: nodes are roles and cards; edges say which role
    owns a card (``owns``) and which role may invoke which role's cards (``may_invoke``)."""
    nodes = [
        {"id": f"role:{r}", "kind": "role", "label": spec.display_name, "enabled": spec.enabled}
        for r, spec in snapshot.roles.items()
    ]
    nodes += [
        {"id": f"cap:{c}", "kind": "capability", "label": card.name, "enabled": card.enabled}
        for c, card in snapshot.cards.items()
    ]
    edges = [
        {"from": f"role:{owner}", "to": f"cap:{c}", "kind": "owns"}
        for c, card in snapshot.cards.items()
        for owner in card.owner_roles
    ]
    edges += [
        {"from": f"role:{caller}", "to": f"role:{target}", "kind": "may_invoke"}
        for caller, target in sorted(snapshot.invoke_allowed)
    ]
    return {"nodes": nodes, "edges": edges}


def role_definition(snapshot: ConfigSnapshot, role: AgentRole) -> dict[str, Any]:
    """``AgentRoleDefinition`` (PRD §4.1) of ``role`` under ``snapshot``'s effective config."""
    name = role.role
    spec = snapshot.roles.get(name)
    modes = {tool: snapshot.tool_mode(name, tool) for tool in TOOLS}
    prompts = snapshot.prompts.get(name, {})
    constraints = spec.constraints.as_dict() if spec else {}
    return {
        "role": name,
        "display_name": role.display_name,
        "emoji": role.emoji,
        "description": role.description,
        "responsibilities": list(role.responsibilities),
        "display_name_zh": role.display_name_zh,
        "description_zh": role.description_zh,
        "responsibilities_zh": list(role.responsibilities_zh),
        "capabilities": [c.capability_id for c in query_capabilities_by_role(snapshot, name)],
        "permissions": {
            "can_invoke": sorted(t for c, t in snapshot.invoke_allowed if c == name),
            "can_be_invoked_by": sorted(c for c, t in snapshot.invoke_allowed if t == name),
            "allowed_tools": [t for t, m in modes.items() if m == ToolMode.ALLOW],
            "denied_tools": [t for t, m in modes.items() if m == ToolMode.DENY],
            "requires_user_confirmation": [t for t, m in modes.items() if m == ToolMode.CONFIRM],
            "max_concurrent_instances": constraints.get("max_concurrent_instances", 4),
        },
        "constraints": constraints,
        "prompt_config": {
            template_type: {
                "version": layer.base.version,
                "project_version": layer.project.version if layer.project else None,
                "language": layer.base.language,
                "is_active": True,
            }
            for template_type, layer in prompts.items()
        },
        "tool_bindings": [{"tool": t, "mode": str(m)} for t, m in modes.items()],
        "metadata": {
            **role.metadata,
            "is_builtin": role.is_builtin,
            "executor": (spec.executor if spec else role.executor) or "per card",
        },
        "enabled": spec.enabled if spec else role.enabled,
        "is_builtin": role.is_builtin,
    }
