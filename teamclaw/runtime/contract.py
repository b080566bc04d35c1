"""What the rest of the product may ask of a runtime, and what an executing agent may ask.

Two Protocols, kept apart from their implementation (``teamclaw.runtime.runtime.Runtime``);
``AgentPort`` is defined beside ``ExecutionCall`` (``teamclaw.runtime.execution``), the one
thing that talks to it:

- ``AgentRuntime``: the product's side. The runtime host, the API views, the management
  commands (and a client of a runtime in another process) speak only this: start a task,
  invoke, hook, instruct a running agent, decide a tool confirmation, take a snapshot,
  cancel a task, subscribe a sink to the events, and ask about health and configuration.
- ``AgentPort``: the agent's side. An ``ExecutionCall`` (what an executor gets for one
  capability call) reaches the runtime only through this small port: invoke and hook as
  the calling agent, ask an operator, report context changes, emit artifacts and alerts,
  take snapshots, and read the clock, the validators, the tools and the prompt renderer.

Units: durations are seconds, ``latency_ms`` milliseconds, token counts tokens.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from teamclaw.runtime.config import ConfigSnapshot
from teamclaw.runtime.events import EventSink
from teamclaw.runtime.execution import AgentPort, PromptRenderer
from teamclaw.runtime.invocation import HookAck, HookEvent, InvokeRequest, InvokeResult

__all__ = ["AgentPort", "AgentRuntime", "PromptRenderer"]


class AgentRuntime(Protocol):
    """The runtime as the product sees it (module docstring). Every failure of a call
    between agents is an ``InvokeResult.error``; the exceptions listed are about the request."""

    async def start(self) -> None:
        """Start the background loops (heartbeats, PRD §4.2)."""

    async def stop(self) -> None:
        """Terminate every instance and stop the loops; the last events reach the sinks."""

    async def run_task(
        self,
        *,
        capability_id: str,
        params: dict[str, Any],
        task_id: str | None = None,
        project_id: str | None = None,
        description: str = "",
        entry_role: str = "main",
        prompt_enhancement: str = "",
    ) -> InvokeResult:
        """Run a whole task: hand ``capability_id`` to ``entry_role`` (PRD §4.1 main: 任务接收).
        Raises ValueError when ``task_id`` is already running."""

    async def invoke(
        self,
        request: InvokeRequest,
        *,
        from_role: str,
        project_id: str | None = None,
        task_id: str | None = None,
        description: str = "",
    ) -> InvokeResult:
        """Invoke as ``from_role`` from outside any agent (PRD §4.4); joins running task
        ``task_id`` or runs in a short task of its own. Raises TaskNotRunning."""

    async def hook(
        self, event: HookEvent, *, from_role: str, project_id: str | None = None, task_id: str | None = None
    ) -> list[HookAck]:
        """Fire a hook as ``from_role`` (PRD §4.3); the receivers' acks. Raises TaskNotRunning,
        AgentFailure (a target role unknown or disabled)."""

    def add_user_instruction(self, context_id: str, text: str, *, author: str = "operator") -> dict[str, Any]:
        """Instruct a running agent (PRD §4.6); the snapshot it took. KeyError when the
        context is not live here."""

    def resolve_confirmation(
        self, confirmation_id: str, approve: bool, decided_by: str, answer: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """Approve or reject a waiting tool confirmation (PRD §4.7 ⚠️), or give a waiting
        ``input`` its ``answer``. KeyError when it is not waiting here."""

    def manual_snapshot(self, context_id: str, label: str) -> dict[str, Any]:
        """A ``manual`` snapshot of a live context (PRD §4.6). KeyError when it is not live."""

    def cancel_task(self, task_id: str, reason: str = "cancelled by the operator") -> bool:
        """End a running task as ``terminated`` with ``cancelled``; False when it is not running."""

    def add_sink(self, sink: EventSink) -> None:
        """Send every later event to ``sink``."""

    def apply_config_change(self, change: Mapping[str, Any]) -> None:
        """Take a ConfigChangeEvent (PRD §4.8): later task starts use the new version."""

    async def snapshot_for(self, project_id: str | None) -> ConfigSnapshot:
        """The newest configuration snapshot of a project (None = global)."""

    def capability_health(self, snapshot: ConfigSnapshot, capability_id: str) -> dict[str, Any]:
        """``{capability_id, status: available|unavailable, enabled, instances}`` (PRD §4.2).
        KeyError for an unknown capability."""
