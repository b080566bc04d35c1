"""The team's A2A agent card (issue 16), served at ``/.well-known/agent-card.json``.

A2A 1.0 (the protocol ``a2a-sdk`` 1.3 speaks) and A2A 0.3 (``a2a-sdk`` 0.3, which frameworks
still use). The card names the JSON-RPC endpoint (``/a2a``) twice in ``supported_interfaces``:
protocol version 1.0 first (a 1.x client takes it), then 0.3 on the same URL, from which the
SDK's ``agent_card_to_dict`` writes the fields a 0.3 client requires at the card's top level
(``url``, ``preferredTransport``, ``protocolVersion``, ``security`` and each security scheme's
``type``); the endpoint answers 0.3's method names (``message/send``, ``tasks/get``,
``tasks/cancel``...) as well as 1.0's. The card says the team streams, declares bearer authentication with a role token
(``interop.role_tokens``), and lists as skills the capability cards callers may reach: the
enabled ENTRY and EXPOSED cards (seed 003 capability types; INTERNAL ones stay inside their
skill). An A2A skill has no schema field, so each skill's JSON Schemas (PRD §2.2
``input_schema`` / ``output_schema``) travel in the extension ``SKILL_SCHEMAS_EXTENSION``
declared in ``capabilities.extensions``: ``params.skills[<skill id>] = {"input_schema",
"output_schema", "owner_roles", "type"}``. The languages the team answers in travel in
``LANGUAGES_EXTENSION`` and the card's description.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version
from typing import Any

from a2a.server.request_handlers.response_helpers import agent_card_to_dict
from a2a.types.a2a_pb2 import (
    AgentCapabilities,
    AgentCard,
    AgentExtension,
    AgentInterface,
    AgentProvider,
    AgentSkill,
    HTTPAuthSecurityScheme,
    SecurityRequirement,
    SecurityScheme,
    StringList,
)
from google.protobuf.json_format import ParseDict
from google.protobuf.struct_pb2 import Struct

from capabilities.config import current_version
from capabilities.snapshot import governance_snapshot
from teamclaw.runtime.config import CapabilityType, CardSpec

CARD_PATH = "/.well-known/agent-card.json"
RPC_PATH = "/a2a"
PROTOCOL_VERSION = "1.0"
LEGACY_PROTOCOL_VERSION = "0.3"
"""A2A 0.3 (``a2a-sdk`` 0.3 clients): the same JSON-RPC endpoint, listed after 1.0 (module docstring)."""
SKILL_SCHEMAS_EXTENSION = "urn:teamclaw:a2a:skill-schemas:v1"
"""Extension URI: each skill's input and output JSON Schema (JSON Schema 2020-12)."""
LANGUAGES_EXTENSION = "urn:teamclaw:a2a:languages:v1"
"""Extension URI: the languages the team answers in (BCP 47) and how it picks one."""
LANGUAGES = ["en", "zh-CN"]
SECURITY_SCHEME = "role_token"
ENTRY_SKILL = "task_orchestration"
"""The skill every message reaches: main's orchestration of seed 002's requirement_review."""
MEDIA_IN = ["text/plain", "text/markdown", "application/json"]
MEDIA_OUT = ["text/plain", "text/markdown", "application/json"]
DESCRIPTION = (
    "TeamClaw's team of LLM agents (main, product manager, designer, architect, coders, DBA, DevOps and "
    "reviewers). A message starts the team's main job at main (skill task_orchestration, seed 002 "
    "requirement_review): a one-line idea starts the interview (the task then asks its questions as "
    "input-required), a Markdown document goes to the experts' review; the result is the reviewed "
    "requirement_final.md with its quality report, as artifacts. The other skills are what the team's agents "
    "do inside a task, listed with their schemas. The team answers in the user's language: English or "
    "Simplified Chinese (简体中文), the language the message is written in."
)


def product_version() -> str:
    """The installed TeamClaw version (``pyproject.toml``), e.g. ``0.1.0``."""
    try:
        return version("teamclaw")
    except PackageNotFoundError:
        return "0.0.0"


def card_skills(cards: list[CardSpec]) -> list[CardSpec]:
    """The cards that are skills: enabled, ENTRY or EXPOSED; the entry skill first, ENTRY
    before EXPOSED, then by id."""
    reachable = [c for c in cards if c.enabled and c.capability_type in (CapabilityType.ENTRY, CapabilityType.EXPOSED)]
    return sorted(
        reachable,
        key=lambda c: (c.capability_id != ENTRY_SKILL, c.capability_type != CapabilityType.ENTRY, c.capability_id),
    )


def _struct(data: dict[str, Any]) -> Struct:
    struct = Struct()
    ParseDict(data, struct)
    return struct


def skill_of(card: CardSpec) -> AgentSkill:
    """A capability card as an A2A skill (its schemas go in the extension, not here)."""
    examples = (
        ["Add a CSV export of the order list for shop admins", "给订单列表增加导出功能"]
        if card.capability_id == ENTRY_SKILL
        else []
    )
    return AgentSkill(
        id=card.capability_id,
        name=card.name,
        description=card.description,
        tags=sorted({card.category, str(card.capability_type), *card.tags}),
        examples=examples,
        input_modes=MEDIA_IN,
        output_modes=MEDIA_OUT,
    )


def agent_card(base_url: str) -> AgentCard:
    """The team's card with its endpoint under ``base_url`` (``scheme://host[:port]``, no
    trailing slash), from the global configuration as it is now (PRD §4.2 discovery)."""
    snapshot = governance_snapshot(None)
    skills = card_skills(list(snapshot.cards.values()))
    schemas = {
        c.capability_id: {
            "input_schema": dict(c.input_schema),
            "output_schema": dict(c.output_schema),
            "owner_roles": list(c.owner_roles),
            "type": str(c.capability_type),
        }
        for c in skills
    }
    return AgentCard(
        name="TeamClaw team",
        description=DESCRIPTION,
        supported_interfaces=[
            AgentInterface(url=base_url + RPC_PATH, protocol_binding="JSONRPC", protocol_version=version)
            for version in (PROTOCOL_VERSION, LEGACY_PROTOCOL_VERSION)
        ],
        provider=AgentProvider(organization="TeamClaw", url=base_url + "/"),
        version=product_version(),
        capabilities=AgentCapabilities(
            streaming=True,
            push_notifications=False,
            extensions=[
                AgentExtension(
                    uri=SKILL_SCHEMAS_EXTENSION,
                    description="Each skill's input and output JSON Schema (2020-12), by skill id, in params.skills.",
                    required=False,
                    params=_struct({"skills": schemas}),
                ),
                AgentExtension(
                    uri=LANGUAGES_EXTENSION,
                    description="The team answers in the language the user writes in: English or Simplified Chinese.",
                    required=False,
                    params=_struct({"languages": LANGUAGES, "choice": "the language of the user's message"}),
                ),
            ],
        ),
        security_schemes={
            SECURITY_SCHEME: SecurityScheme(
                http_auth_security_scheme=HTTPAuthSecurityScheme(
                    scheme="Bearer",
                    bearer_format="TeamClaw role token (tcr_...)",
                    description="A role-bound token issued by staff (POST /api/v1/auth/role-tokens); the caller "
                    "acts as that role. Only the card is public.",
                )
            )
        },
        security_requirements=[SecurityRequirement(schemes={SECURITY_SCHEME: StringList()})],
        default_input_modes=MEDIA_IN,
        default_output_modes=MEDIA_OUT,
        skills=[skill_of(c) for c in skills],
    )


CARD_CACHE_SIZE = 8
"""How many ``(config version, base URL)`` cards ``card_document`` keeps."""
_cards: dict[tuple[int, str], dict[str, Any]] = {}


def card_document(base_url: str) -> dict[str, Any]:
    """The card of ``agent_card`` as served (JSON, with the SDK's A2A 0.3 compatibility
    fields), remembered per config version (PRD §4.8: every change bumps it), since building
    it reads the whole configuration."""
    key = (current_version(), base_url)
    if key not in _cards:
        if len(_cards) >= CARD_CACHE_SIZE:
            _cards.clear()
        _cards[key] = agent_card_to_dict(agent_card(base_url))
    return _cards[key]


def handler_card() -> AgentCard:
    """The card the SDK's request handler checks requests against (streaming yes, push no):
    built without the database, so the handler can be made before any request."""
    return AgentCard(
        name="TeamClaw team",
        description=DESCRIPTION,
        version=product_version(),
        capabilities=AgentCapabilities(streaming=True, push_notifications=False),
        default_input_modes=MEDIA_IN,
        default_output_modes=MEDIA_OUT,
    )
