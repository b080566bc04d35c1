"""The MCP tools a role sees: the capability cards it may reach through the invoke permission
matrix (PRD §4.7), one tool per card (issue 16; served by ``interop.mcp_server``).

A card is a tool of role R when it is enabled, not INTERNAL to a skill (an MCP client is inside
no skill, so the runtime would refuse it: seed 003), and at least one of its enabled owner roles
is a role R may invoke in the global configuration (PRD §4.7 invoke matrix; ``main`` may invoke
everyone). These are the same checks ``teamclaw.runtime.policy.check_policy`` makes when the
call arrives, so the list never offers a tool whose call the matrix would refuse; a call to a
tool not in the list still goes to the runtime, which answers with the PRD error code, unless
the name is no tool at all (``is_tool``: no enabled, non-INTERNAL card has it), which the MCP
spec makes a protocol error (``interop.mcp_server``).

Each tool carries (PRD §2.2 card fields):

- ``name`` the ``capability_id``, ``title`` and ``annotations.title`` the card's ``name``,
  ``description`` the card's description (plus its category and owners);
- ``inputSchema`` / ``outputSchema`` the card's ``input_schema`` / ``output_schema`` as written
  (an ``outputSchema`` only when its root is an object, which MCP requires up to 2025-11-25);
- ``annotations`` (hints, see ``tool_annotations``) derived from the category (PRD §4.2), the
  tools the card requires (PRD §4.7 tool matrix names) and its ``idempotent`` flag.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from typing import Any

import mcp_types as types

from teamclaw.runtime.config import CapabilityType, CardSpec, ConfigSnapshot

READ_ONLY_CATEGORIES = frozenset({"analysis", "review"})
"""PRD §4.2 categories whose capabilities report on what they are given and change nothing."""

READ_ONLY_TOOLS = frozenset({"file_read"})
"""PRD §4.7 tools that only read; a card needing any other tool may change its environment."""

DESTRUCTIVE_TOOLS = frozenset({"file_write", "code_execution", "database", "deployment"})
"""PRD §4.7 tools that can overwrite or remove what exists (files, data, deployments)."""

OPEN_WORLD_TOOLS = frozenset({"network"})
"""PRD §4.7 tools that reach outside TeamClaw and the project folder."""


def reachable_cards(snapshot: ConfigSnapshot, role: str) -> list[CardSpec]:
    """The cards ``role`` may invoke under ``snapshot``, sorted by ``capability_id``.

    Empty for an unknown or disabled role."""
    spec = snapshot.roles.get(role)
    if spec is None or not spec.enabled:
        return []
    reachable = []
    for capability_id in sorted(snapshot.cards):
        card = snapshot.cards[capability_id]
        if not card.enabled or card.capability_type == CapabilityType.INTERNAL:
            continue
        owners = [snapshot.roles[r] for r in card.owner_roles if r in snapshot.roles]
        if any(owner.enabled and snapshot.can_invoke(role, owner.role) for owner in owners):
            reachable.append(card)
    return reachable


def is_tool(snapshot: ConfigSnapshot, name: str) -> bool:
    """True when ``name`` is the ``capability_id`` of an enabled card that is not INTERNAL: a
    tool some role may be offered. Anything else is an unknown tool for every caller."""
    card = snapshot.cards.get(name)
    return card is not None and card.enabled and card.capability_type != CapabilityType.INTERNAL


def tool_annotations(card: CardSpec) -> types.ToolAnnotations:
    """MCP hints for ``card`` (all are hints a client must not rely on for safety):

    - ``readOnlyHint``: the category is ``analysis`` or ``review`` and the card needs no tool
      but ``file_read``;
    - ``destructiveHint`` (only when not read-only): the card needs ``file_write``,
      ``code_execution``, ``database`` or ``deployment``;
    - ``idempotentHint`` (only when not read-only): the card's ``idempotent`` flag, else the
      runtime's default (``CardSpec.is_idempotent``: no for ``http`` plugins, yes otherwise);
    - ``openWorldHint``: the card runs on an ``http`` plugin or needs the ``network`` tool.
    """
    tools = set(card.required_tools)
    read_only = card.category in READ_ONLY_CATEGORIES and tools <= READ_ONLY_TOOLS
    return types.ToolAnnotations(
        title=card.name,
        read_only_hint=read_only,
        destructive_hint=None if read_only else bool(tools & DESTRUCTIVE_TOOLS),
        idempotent_hint=None if read_only else card.is_idempotent,
        open_world_hint=card.executor == "http" or bool(tools & OPEN_WORLD_TOOLS),
    )


def _object_schema(schema: Mapping[str, Any]) -> bool:
    return schema.get("type") == "object"


def card_tool(card: CardSpec) -> types.Tool:
    """The MCP tool for ``card``. A card whose ``input_schema`` root is not an object (MCP
    requires one) gets ``{"type": "object", "properties": {}}`` plus the card's schema under
    ``allOf``, so the runtime's own validation still decides."""
    input_schema: dict[str, Any] = json.loads(json.dumps(card.input_schema))
    if not _object_schema(input_schema):
        input_schema = {"type": "object", "properties": {}, "allOf": [input_schema]}
    output_schema = json.loads(json.dumps(card.output_schema)) if _object_schema(card.output_schema) else None
    owners = ", ".join(card.owner_roles)
    description = f"{card.description}\n\nCategory: {card.category}. Runs on: {owners}. Version {card.version}."
    return types.Tool(
        name=card.capability_id,
        title=card.name,
        description=description,
        input_schema=input_schema,
        output_schema=output_schema,
        annotations=tool_annotations(card),
    )


def tools_for_role(snapshot: ConfigSnapshot, role: str) -> list[types.Tool]:
    """The tools ``role`` sees (``reachable_cards`` as ``card_tool``), in ``capability_id`` order."""
    return [card_tool(card) for card in reachable_cards(snapshot, role)]


def tools_digest(tools: Iterable[types.Tool]) -> str:
    """A short hex digest of the tools' wire form: equal digests mean an identical list."""
    wire = [tool.model_dump(by_alias=True, mode="json", exclude_none=True) for tool in tools]
    blob = json.dumps(wire, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]
