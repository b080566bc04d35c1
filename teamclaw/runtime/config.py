"""The immutable, versioned configuration the runtime reads (docs/architecture.md §4, PRD §4.7, §4.8).

The apps build a ``ConfigSnapshot`` from the database for one project (or the global
configuration when ``project_id`` is None). A task pins the snapshot current at its start and
keeps it to the end, so a config change takes effect at the next task start (PRD §4.8).
Nothing here touches the ORM.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType
from typing import Any

from teamclaw.runtime.address import AddressError, CapAddress, is_address, parse_address
from teamclaw.runtime.errors import AgentFailure, ErrorCode

TOOLS: tuple[str, ...] = ("file_read", "file_write", "code_execution", "database", "deployment", "network")
"""The tool names of the PRD §4.7 tool permission matrix, in table order."""

CATEGORIES: tuple[str, ...] = (
    "analysis",
    "design",
    "generation",
    "execution",
    "review",
    "communication",
    "coordination",
)
"""The seven capability categories of PRD §4.2."""


class ToolMode(StrEnum):
    """A tool matrix cell (PRD §4.7): ✅ allow, ❌ deny, ⚠️ confirm (operator approval)."""

    ALLOW = "allow"
    DENY = "deny"
    CONFIRM = "confirm"


class CapabilityType(StrEnum):
    """Who may call a capability (seed 003): ENTRY user-facing, EXPOSED other skills and
    roles per the matrix, INTERNAL only from inside its own skill."""

    ENTRY = "ENTRY"
    EXPOSED = "EXPOSED"
    INTERNAL = "INTERNAL"


@dataclass(frozen=True, slots=True)
class Constraints:
    """Per-role limits (PRD §4.7 constraint table; units in the names)."""

    timeout_s: int = 60
    max_retries: int = 3
    file_scope: str = "."
    """Directory inside the project working directory that file tools may touch ('.' = all)."""
    token_budget: int = 50_000
    max_concurrent_instances: int = 4
    memory_tokens: int | None = None
    """Estimated tokens of history a model-backed agent of this role replays (seed 003
    MemoryContext); None = the runtime's default (``TEAMCLAW_MEMORY_TOKENS``)."""

    def as_dict(self) -> dict[str, Any]:
        return {
            "timeout_s": self.timeout_s,
            "max_retries": self.max_retries,
            "file_scope": self.file_scope,
            "token_budget": self.token_budget,
            "max_concurrent_instances": self.max_concurrent_instances,
            "memory_tokens": self.memory_tokens,
        }


@dataclass(frozen=True, slots=True)
class RoleSpec:
    """One role as the runtime sees it for a project (PRD §4.1 ``AgentRoleDefinition``)."""

    role: str
    display_name: str
    emoji: str = ""
    description: str = ""
    enabled: bool = True
    is_builtin: bool = False
    constraints: Constraints = field(default_factory=Constraints)
    executor: str | None = None
    """Executor kind that overrides the cards' own for this role (None = the card's)."""
    capabilities: tuple[str, ...] = ()
    executor_config: Mapping[str, Any] = field(default_factory=dict)
    """Model options chosen for this role (project override, else global): ``model``,
    ``endpoint`` (a configured endpoint name). Never holds a key."""


def _digest(*parts: Any) -> str:
    blob = json.dumps(parts, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha1(blob.encode(), usedforsecurity=False).hexdigest()[:16]


@dataclass(frozen=True, slots=True)
class CardSpec:
    """A capability card (PRD §2.2 ``CapabilityCard``) plus runtime bindings.

    ``timeout_s`` is seconds; ``schema_digest`` identifies the schemas so validators are
    compiled once per card version and content.
    """

    capability_id: str
    name: str
    description: str
    category: str
    input_schema: Mapping[str, Any]
    output_schema: Mapping[str, Any]
    version: str
    owner_roles: tuple[str, ...]
    required_tools: tuple[str, ...] = ()
    timeout_s: int = 60
    tags: tuple[str, ...] = ()
    enabled: bool = True
    executor: str = "offline"
    executor_config: Mapping[str, Any] = field(default_factory=dict)
    skill_id: str | None = None
    capability_type: CapabilityType = CapabilityType.EXPOSED
    address: str | None = None
    schema_digest: str = ""
    idempotent: bool | None = None
    """Whether running the capability twice does no harm, so a failure after its request
    reached the executor may be retried; None: the executor's default (``is_idempotent``)."""

    @property
    def is_idempotent(self) -> bool:
        """``idempotent``, else False for ``http`` plugins (a POST may have done its work
        before it failed) and True for in-process executors."""
        return self.idempotent if self.idempotent is not None else self.executor != "http"

    def __post_init__(self) -> None:
        if not self.schema_digest:
            object.__setattr__(self, "schema_digest", _digest(self.input_schema, self.output_schema))


@dataclass(frozen=True, slots=True)
class PromptSpec:
    """One active prompt template version (PRD §4.5 ``PromptTemplate``)."""

    template_type: str
    version: str
    content: str
    variables: tuple[Mapping[str, Any], ...] = ()
    language: str = "en"


@dataclass(frozen=True, slots=True)
class LayeredPrompt:
    """Base template plus the project override, if any (PRD §4.5 layering)."""

    base: PromptSpec
    project: PromptSpec | None = None


def prompt_versions(layers: Mapping[str, LayeredPrompt]) -> dict[str, dict[str, str | None]]:
    """``{template_type: {"global": version, "project": version or None}}`` of one role's
    layered prompts (what a context records having rendered, PRD §4.5)."""
    return {
        name: {"global": layer.base.version, "project": layer.project.version if layer.project else None}
        for name, layer in sorted(layers.items())
    }


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool beyond the six of ``TOOLS``, offered by an external tool source (an MCP server
    registered by an operator, issue 16) and governed by the same tool matrix (PRD §4.7).

    - ``name``: its name in the matrix and the runtime, ``mcp:<source>/<tool>``;
    - ``remote_name``: the tool's own name on its server;
    - ``description`` and ``input_schema``: as the server listed them (``inputSchema``);
    - ``server``: how to reach the server, ``{"transport": "stdio", "command", "args"}`` (a
      command name from the stdio allowlist, never a path from a request) or
      ``{"transport": "http", "url"}`` (Streamable HTTP, under the http executor's host
      allowlist); the runtime's ``ExternalTools`` checks both allowlists again at every call.
    """

    name: str
    remote_name: str
    description: str
    input_schema: Mapping[str, Any]
    server: Mapping[str, Any]
    source: str = ""


@dataclass(frozen=True, slots=True)
class ConfigSnapshot:
    """Everything the runtime needs to govern calls for one project, frozen at ``version``.

    - ``invoke_allowed``: pairs ``(caller_role, target_role)`` the effective matrix allows.
    - ``tool_modes``: ``(role, tool) -> ToolMode``; a missing cell is ``deny``.
    - ``prompts``: ``role -> template_type -> LayeredPrompt``.
    - ``project_dir``: the project's working directory (file tools are confined to it).
    - ``tool_specs``: the external tools (MCP, issue 16) by matrix name; each is a tool of
      the matrix like the six PRD §4.7 ones, ``deny`` until an operator changes its cells.
    """

    version: int
    project_id: str | None
    roles: Mapping[str, RoleSpec]
    cards: Mapping[str, CardSpec]
    invoke_allowed: frozenset[tuple[str, str]]
    tool_modes: Mapping[tuple[str, str], ToolMode]
    prompts: Mapping[str, Mapping[str, LayeredPrompt]] = field(default_factory=dict)
    project_dir: str | None = None
    project_name: str = ""
    project_description: str = ""
    tech_stack: str = ""
    addresses: Mapping[str, str] = field(default_factory=dict)
    tool_specs: Mapping[str, ToolSpec] = field(default_factory=dict)

    @classmethod
    def build(
        cls,
        *,
        version: int,
        roles: Iterable[RoleSpec],
        cards: Iterable[CardSpec],
        invoke_allowed: Iterable[tuple[str, str]],
        tool_modes: Mapping[tuple[str, str], ToolMode | str],
        project_id: str | None = None,
        prompts: Mapping[str, Mapping[str, LayeredPrompt]] | None = None,
        tool_specs: Iterable[ToolSpec] = (),
        **project: Any,
    ) -> ConfigSnapshot:
        """Assemble a snapshot from plain iterables; indexes cards by cap:// address too."""
        card_map = {card.capability_id: card for card in cards}
        # A skill card answers at its declared address and at cap://<skillId>/<name> (seed 003);
        # where a disabled card and an enabled one share an address, the enabled one wins.
        addresses: dict[str, str] = {}
        for card in sorted(card_map.values(), key=lambda c: c.enabled):
            if card.skill_id:
                addresses[f"cap://{card.skill_id}/{card.name}"] = card.capability_id
            if card.address:
                addresses[card.address] = card.capability_id
        return cls(
            version=version,
            project_id=project_id,
            roles=MappingProxyType({spec.role: spec for spec in roles}),
            cards=MappingProxyType(card_map),
            invoke_allowed=frozenset(invoke_allowed),
            tool_modes=MappingProxyType({key: ToolMode(value) for key, value in tool_modes.items()}),
            prompts=MappingProxyType(dict(prompts or {})),
            addresses=MappingProxyType(addresses),
            tool_specs=MappingProxyType({spec.name: spec for spec in tool_specs}),
            **project,
        )

    def can_invoke(self, caller_role: str, target_role: str) -> bool:
        """True when the effective invoke matrix (PRD §4.7) allows caller -> target."""
        return (caller_role, target_role) in self.invoke_allowed

    def tool_mode(self, role: str, tool: str) -> ToolMode:
        """The tool matrix cell for ``role`` x ``tool``; unknown cells are ``deny``."""
        return self.tool_modes.get((role, tool), ToolMode.DENY)

    def constraints_for(self, role: str) -> Constraints:
        """The role's constraints, or the PRD defaults for an unknown role."""
        spec = self.roles.get(role)
        return spec.constraints if spec else Constraints()

    def resolve(self, reference: str) -> tuple[CardSpec, dict[str, str]]:
        """Find the card a ``capability_id`` or ``cap://skill/capability`` names.

        Returns ``(card, default_params)``; default params come from the address query.
        Raises AgentFailure(capability_not_found) for an unknown id or a malformed address.
        """
        if is_address(reference):
            try:
                address: CapAddress = parse_address(reference)
            except AddressError as exc:
                raise AgentFailure(
                    ErrorCode.CAPABILITY_NOT_FOUND,
                    f"malformed address: {exc}",
                    {"address": reference},
                    retryable=False,
                ) from None
            capability_id = self.addresses.get(address.base)
            if capability_id is None:
                raise AgentFailure(
                    ErrorCode.CAPABILITY_NOT_FOUND,
                    f"no capability at {address.base}",
                    {"address": reference},
                    retryable=False,
                )
            return self.cards[capability_id], dict(address.params)
        card = self.cards.get(reference)
        if card is None:
            raise AgentFailure(
                ErrorCode.CAPABILITY_NOT_FOUND,
                f"no capability {reference!r}",
                {"capability_id": reference},
                retryable=False,
            )
        return card, {}
