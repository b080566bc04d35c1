"""Pending calls and their deadlines: an ``invoke_request`` waiting for its response (PRD §4.4).

Each attempt of an invoke is one ``PendingCall`` keyed by its correlation id
(``<invoke_id>:<attempt>``). Its timer resolves the call with ``TIMED_OUT`` when the deadline
passes. While the callee waits for an operator (``waiting_user``, a tool confirmation) the
deadline is paused and later pushed back by the time spent waiting, so a confirmation does
not eat the invoke timeout.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, Final

from teamclaw.runtime.clock import Clock, TimerHandle
from teamclaw.runtime.config import CardSpec
from teamclaw.runtime.context import TaskState
from teamclaw.runtime.errors import AgentError
from teamclaw.runtime.instance import AgentInstance
from teamclaw.runtime.messages import AgentMessage, Party


class TimedOut:
    """The type of ``TIMED_OUT``."""

    def __repr__(self) -> str:
        return "TIMED_OUT"


TIMED_OUT: Final = TimedOut()
"""The outcome a PendingCall gets when its deadline passes."""

CallOutcome = tuple[Any, AgentError | None, str | None]
"""``(data, error, from_instance)``: what answered a pending call (data is None on error)."""


@dataclass(slots=True, eq=False)
class PendingCall:
    """One invoke attempt waiting for its response.

    ``deadline`` is clock seconds, ``timeout_s`` the attempt's timeout; ``paused_since`` is set
    while the callee waits for an operator. ``future`` resolves with a ``CallOutcome`` or
    ``TIMED_OUT``.
    """

    correlation_id: str
    invoke_id: str
    future: asyncio.Future[CallOutcome | TimedOut]
    card: CardSpec
    params: dict[str, Any]
    task: TaskState
    caller: Party
    message: AgentMessage
    instance: AgentInstance
    deadline: float
    timeout_s: float
    paused_since: float | None = None
    timer: TimerHandle | None = None
    cancelled_for_timeout: bool = False
    started: bool = False
    """Set when the callee's worker took the request from its mailbox."""

    def answer(self, outcome: CallOutcome) -> None:
        """Resolve the call with ``outcome`` unless it is already resolved."""
        if not self.future.done():
            self.future.set_result(outcome)


class PendingCalls:
    """The pending calls of one runtime, by correlation id, with their deadline timers."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self._calls: dict[str, PendingCall] = {}

    def __len__(self) -> int:
        return len(self._calls)

    def add(self, pending: PendingCall) -> None:
        """Track ``pending`` until ``discard``."""
        self._calls[pending.correlation_id] = pending

    def discard(self, pending: PendingCall) -> None:
        """Stop tracking ``pending`` (no error when it is not tracked)."""
        self._calls.pop(pending.correlation_id, None)

    def get(self, correlation_id: str | None) -> PendingCall | None:
        """The call waiting on ``correlation_id``, or None."""
        return self._calls.get(correlation_id or "")

    def waiting_for(self, message: AgentMessage) -> PendingCall | None:
        """The unresolved call whose request is ``message`` (None when there is none)."""
        pending = self.get(message.context.correlation_id)
        if pending is None or pending.future.done() or pending.message is not message:
            return None
        return pending

    def of_task(self, task_id: str) -> list[PendingCall]:
        """The unresolved calls made in task ``task_id``."""
        return [p for p in self._calls.values() if p.task.task_id == task_id and not p.future.done()]

    def arm(self, pending: PendingCall) -> None:
        """Start ``pending``'s deadline timer (``timeout_s`` from now)."""
        pending.timer = self.clock.call_later(pending.timeout_s, lambda: self._on_deadline(pending))

    def disarm(self, pending: PendingCall) -> None:
        """Cancel ``pending``'s deadline timer."""
        if pending.timer is not None:
            pending.timer.cancel()

    def _on_deadline(self, pending: PendingCall) -> None:
        """Timer callback: time the call out, unless its deadline moved (``waiting_user``)."""
        if pending.future.done() or pending.paused_since is not None:
            return  # resume() re-arms the timer
        remaining = pending.deadline - self.clock.now()
        if remaining > 0:
            pending.timer = self.clock.call_later(remaining, lambda: self._on_deadline(pending))
            return
        pending.future.set_result(TIMED_OUT)

    def pause(self, pending: PendingCall) -> None:
        """Stop the invoke timeout while the callee waits for an operator."""
        if pending.paused_since is None:
            pending.paused_since = self.clock.now()

    def resume(self, pending: PendingCall) -> None:
        """Restart the invoke timeout, pushed back by the time spent paused."""
        if pending.paused_since is None:
            return
        now = self.clock.now()
        pending.deadline += now - pending.paused_since
        pending.paused_since = None
        self.disarm(pending)
        pending.timer = self.clock.call_later(pending.deadline - now, lambda: self._on_deadline(pending))
