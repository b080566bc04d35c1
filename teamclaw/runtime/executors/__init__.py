"""Executors: what turns (capability, params, context) into a result (DESIGN.md §5).

An executor is any object with ``async execute(call: ExecutionCall) -> dict`` (the result
is then validated against the card's ``output_schema``) and optionally
``async on_hook(call: ExecutionCall, event: dict) -> dict | None``. The registry picks one
per call: the role's executor override (per project) if set, else the card's ``executor``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from teamclaw.runtime.errors import AgentFailure, ErrorCode

if TYPE_CHECKING:
    from teamclaw.runtime.config import CardSpec, RoleSpec
    from teamclaw.runtime.execution import ExecutionCall


class Executor(Protocol):
    """Runs one capability call. Raise AgentFailure for a coded failure; any other
    exception becomes ``executor_error`` for the caller."""

    kind: str

    async def execute(self, call: ExecutionCall) -> dict[str, Any]: ...


class ExecutorRegistry:
    """Executors by kind (``offline``, ``openai``, ``http``, entry-point names)."""

    def __init__(self, executors: dict[str, Executor] | None = None, default: str = "offline") -> None:
        self._executors: dict[str, Executor] = dict(executors or {})
        self.default = default

    def register(self, kind: str, executor: Executor) -> None:
        self._executors[kind] = executor

    def kinds(self) -> list[str]:
        return sorted(self._executors)

    def get(self, kind: str) -> Executor | None:
        return self._executors.get(kind)

    def resolve(self, card: CardSpec, role: RoleSpec | None) -> Executor:
        """The executor for ``card`` run by ``role``; raises AgentFailure(executor_error)
        when that kind is not installed on this server."""
        kind = (role.executor if role and role.executor else None) or card.executor or self.default
        executor = self._executors.get(kind)
        if executor is None:
            raise AgentFailure(
                ErrorCode.EXECUTOR_ERROR,
                f"executor {kind!r} is not available on this server (installed: {', '.join(self.kinds())})",
                {"executor": kind},
                retryable=False,
            )
        return executor
