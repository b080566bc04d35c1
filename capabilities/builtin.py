"""The built-in team (capabilities/builtin/*.yaml): roles, cards, both matrices, constraints.

``load_builtin_team`` creates only missing rows: a role, card, matrix cell or constraint that
already exists is left exactly as the operator last saved it. ``team.builtin.load_builtin``
adds the prompts and records the change.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from capabilities.models import (
    AgentRole,
    CapabilityCard,
    InvokePermission,
    RoleConstraint,
    ToolPermission,
)
from capabilities.snapshot import CONSTRAINT_FIELDS
from teamclaw.runtime.schemas import validate_card

BUILTIN_DIR = Path(__file__).resolve().parent / "builtin"


def read_builtin() -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """``(team, cards)`` from the YAML files (safe loading)."""
    team = yaml.safe_load((BUILTIN_DIR / "team.yaml").read_text(encoding="utf-8"))
    cards = yaml.safe_load((BUILTIN_DIR / "cards.yaml").read_text(encoding="utf-8"))["cards"]
    return team, cards


CHINESE_FIELDS = {
    "roles": ("display_name", "description", "responsibilities"),
    "cards": ("name", "description"),
}
"""The fields ``names_zh.yaml`` gives per role and per card; each fills ``<field>_zh``."""


def read_chinese_names() -> dict[str, dict[str, dict[str, Any]]]:
    """``{"roles": {slug: {field: text}}, "cards": {capability_id: {field: text}}}`` from
    ``builtin/names_zh.yaml`` (the built-in team's names and descriptions in Chinese)."""
    data = yaml.safe_load((BUILTIN_DIR / "names_zh.yaml").read_text(encoding="utf-8"))
    return {kind: data.get(kind) or {} for kind in CHINESE_FIELDS}


def fill_chinese_names(role_model: Any, card_model: Any) -> int:
    """Set the ``*_zh`` fields of the built-in roles and cards that are still blank from
    ``names_zh.yaml`` (never one an operator wrote); the number of rows changed. Takes the
    model classes so that migration 0012 can pass its historical models."""
    names = read_chinese_names()
    changed = 0
    for kind, model, key in (("roles", role_model, "role"), ("cards", card_model, "capability_id")):
        for row in model.objects.filter(**{f"{key}__in": list(names[kind])}):
            texts = names[kind][getattr(row, key)]
            blank = [f for f in CHINESE_FIELDS[kind] if f in texts and not getattr(row, f"{f}_zh")]
            for field in blank:
                setattr(row, f"{field}_zh", texts[field])
            if blank:
                row.save(update_fields=[f"{f}_zh" for f in blank])
                changed += 1
    return changed


@dataclass(frozen=True)
class BuiltinTeam:
    """What ``load_builtin_team`` did: rows ``created`` per kind, and every built-in role with
    its YAML spec (``responsibilities``, ``persona``...), in the YAML's order."""

    created: dict[str, int]
    roles: list[tuple[AgentRole, dict[str, Any]]]


def load_builtin_team() -> BuiltinTeam:
    """Create whatever built-in roles, cards, matrix cells and constraints are missing (call
    it inside a transaction). Raises ValueError if a built-in card is invalid (a packaging
    bug, caught by the tests)."""
    team, cards = read_builtin()
    chinese = read_chinese_names()
    created = {"roles": 0, "cards": 0, "invoke_cells": 0, "tool_cells": 0, "constraints": 0}
    all_roles = [(r, True) for r in team["roles"]] + [(r, False) for r in team.get("custom_roles", [])]
    roles: dict[str, AgentRole] = {}
    for order, (spec, builtin) in enumerate(all_roles):
        role, made = AgentRole.objects.get_or_create(
            role=spec["role"],
            defaults={
                "display_name": spec["display_name"],
                "emoji": spec["emoji"],
                "description": spec["description"],
                "responsibilities": spec["responsibilities"],
                **{f"{f}_zh": v for f, v in chinese["roles"].get(spec["role"], {}).items()},
                "is_builtin": builtin,
                "sort_order": order,
                "metadata": {
                    "core_capabilities": spec["core_capabilities"],
                    "persona": spec["persona"],
                    "source": "PRD §4.1" if builtin else "seed 002 reviewer",
                },
            },
        )
        roles[role.role] = role
        created["roles"] += made
    known = set(roles) | set(AgentRole.objects.values_list("role", flat=True))
    for card in cards:
        card = {"version": "1.0.0", **card}
        problems = validate_card(card, known)
        if problems:
            raise ValueError(f"built-in card {card.get('id')} is invalid: {problems}")
        obj, made = CapabilityCard.objects.get_or_create(
            capability_id=card["id"],
            defaults={
                "name": card["name"],
                "description": card["description"],
                **{f"{f}_zh": v for f, v in chinese["cards"].get(card["id"], {}).items()},
                "category": card["category"],
                "input_schema": card["input_schema"],
                "output_schema": card["output_schema"],
                "version": card.get("version", "1.0.0"),
                "required_tools": card.get("required_tools", []),
                "timeout_s": card.get("timeout", 60),
                "tags": card.get("tags", []),
                "is_builtin": True,
            },
        )
        if made:
            obj.owner_roles.set([roles[r] for r in card["owner_roles"]])
            created["cards"] += 1
    for caller, targets in team["invoke_matrix"].items():
        for target in roles:
            _, made = InvokePermission.objects.get_or_create(
                project=None,
                caller=roles[caller],
                target=roles[target],
                defaults={"allowed": target in targets},
            )
            created["invoke_cells"] += made
    for role_name, cells in team["tool_matrix"].items():
        for tool, mode in cells.items():
            _, made = ToolPermission.objects.get_or_create(
                project=None, role=roles[role_name], tool=tool, defaults={"mode": mode}
            )
            created["tool_cells"] += made
    defaults = {name: team["constraints"][name] for name in CONSTRAINT_FIELDS}
    for role in roles.values():
        _, made = RoleConstraint.objects.get_or_create(project=None, role=role, defaults=defaults)
        created["constraints"] += made
    fill_chinese_names(AgentRole, CapabilityCard)  # rows made before the Chinese names were
    return BuiltinTeam(created, [(roles[spec["role"]], spec) for spec, _builtin in all_roles])
