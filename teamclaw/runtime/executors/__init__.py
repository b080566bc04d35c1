"""Executors: what turns (capability, params, context) into a result (docs/architecture.md §8).

An executor is any object with ``async execute(call: ExecutionCall) -> dict`` (the result
is then validated against the card's ``output_schema``) and optionally
``async on_hook(call: ExecutionCall, event: dict) -> dict | None``.

Kinds (docs/architecture.md §8): ``offline`` (embedded, deterministic) and ``openai`` (a model behind
any OpenAI-compatible chat-completions endpoint) are *brains*: any capability can run on
either. ``http`` (plugin capabilities registered through the API, PRD §3 US-12) and the
kinds installed through the ``teamclaw.executors`` entry-point group are *bound*: the card
names them because only they can run it.

Choosing the executor for one call (``choose_kind``), PRD §4.7 "可在项目级配置中覆盖":

1. a card bound to a plugin kind always runs on it;
2. else the role's effective executor (project override, else the role's own), if set;
3. else the card's own kind, except that ``offline`` (the card default) follows the
   server's default brain (``TEAMCLAW_EXECUTOR``; ``openai`` when OPENAI_BASE_URL is set).
"""

from __future__ import annotations

from teamclaw.runtime.config import CardSpec, RoleSpec
from teamclaw.runtime.errors import AgentFailure, ErrorCode
from teamclaw.runtime.execution import Executor

__all__ = ["BRAIN_KINDS", "BUILTIN_KINDS", "Executor", "ExecutorRegistry", "choose_kind"]

BRAIN_KINDS: frozenset[str] = frozenset({"offline", "openai"})
"""Executor kinds that can run any capability; a role or project may switch between them."""

BUILTIN_KINDS: tuple[str, ...] = ("offline", "openai", "http")
"""The kinds TeamClaw ships; an entry-point plugin may not take one of these names."""


def choose_kind(card: CardSpec, role: RoleSpec | None, default: str = "offline") -> str:
    """The executor kind for ``card`` run by ``role`` (rules in the module docstring).

    ``default`` is the server's default brain; returns a kind name (it may not be installed).
    """
    if card.executor and card.executor not in BRAIN_KINDS:
        return card.executor
    if role is not None and role.executor:
        return role.executor
    if not card.executor or card.executor == "offline":
        return default
    return card.executor


class ExecutorRegistry:
    """Executors by kind (``offline``, ``openai``, ``http``, entry-point names).

    ``default`` is the server's default brain (see ``choose_kind``). ``problems`` lists
    executors that could not be installed (a broken plugin), for the dashboard.
    """

    def __init__(self, executors: dict[str, Executor] | None = None, default: str = "offline") -> None:
        self._executors: dict[str, Executor] = dict(executors or {})
        self.default = default
        self.problems: list[str] = []

    def register(self, kind: str, executor: Executor) -> None:
        self._executors[kind] = executor

    def kinds(self) -> list[str]:
        return sorted(self._executors)

    def get(self, kind: str) -> Executor | None:
        return self._executors.get(kind)

    def resumable(self, kind: str) -> bool:
        """Whether a task run by executor ``kind`` may resume after its worker stopped
        (``teamclaw.runtime.resume``). An executor declares ``resumable = False`` when
        running an interrupted call again is not safe; unknown kinds are not resumable."""
        executor = self._executors.get(kind)
        return executor is not None and bool(getattr(executor, "resumable", True))

    def kind_for(self, card: CardSpec, role: RoleSpec | None) -> str:
        """The kind ``resolve`` would pick (installed or not)."""
        return choose_kind(card, role, self.default)

    def resolve(self, card: CardSpec, role: RoleSpec | None) -> Executor:
        """The executor for ``card`` run by ``role``; raises AgentFailure(executor_error)
        when that kind is not installed on this server."""
        kind = self.kind_for(card, role)
        executor = self._executors.get(kind)
        if executor is None:
            raise AgentFailure(
                ErrorCode.EXECUTOR_ERROR,
                f"executor {kind!r} is not available on this server (installed: {', '.join(self.kinds())})",
                {"executor": kind},
                retryable=False,
            )
        return executor
