"""Tool confirmations: a tool use waiting for an operator's approval (PRD §4.7 ⚠️).

While it waits, the agent's context is ``waiting_user`` with the question in its
``pending_questions`` and the invoke's deadline is paused. An operator approves or rejects
it (``resolve``); after ``timeout_s`` (600 s by default) without a decision it expires as a
rejection. Every state is emitted as ``ConfirmationChanged``.

In a resumed task (``teamclaw.runtime.resume``) the same tool use asks the same
confirmation again: one the operator already decided is answered by that decision at once,
one still pending keeps its id and its original deadline and waits on.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from teamclaw.runtime.clock import Clock
from teamclaw.runtime.context import ContextStatus
from teamclaw.runtime.emission import Emitter
from teamclaw.runtime.events import ConfirmationChanged, ConfirmationState
from teamclaw.runtime.messages import new_id
from teamclaw.runtime.pending import PendingCalls

if TYPE_CHECKING:
    from teamclaw.runtime.execution import ExecutionCall


@dataclass(slots=True, eq=False)
class PendingConfirmation:
    """A tool use waiting for an operator; ``future`` resolves True when approved."""

    id: str
    context_id: str
    instance_id: str
    role: str
    task_id: str
    project_id: str | None
    tool: str
    args: dict[str, Any]
    created_at: float
    expires_at: float
    future: asyncio.Future[bool]
    status: str = "pending"
    decided_by: str | None = None

    def state(self) -> ConfirmationState:
        """What the confirmation is now (immutable, for an event or an answer)."""
        return ConfirmationState(
            id=self.id,
            context_id=self.context_id,
            instance_id=self.instance_id,
            role=self.role,
            task_id=self.task_id,
            project_id=self.project_id,
            tool=self.tool,
            args=self.args,
            status=self.status,
            created_at=self.created_at,
            expires_at=self.expires_at,
            decided_by=self.decided_by,
        )

    def as_dict(self) -> dict[str, Any]:
        """JSON shape: ``{id, context_id, ..., tool, args, status, decided_by}``."""
        return self.state().as_dict()


class Confirmations:
    """The tool confirmations waiting in one runtime, by id (``waiting``)."""

    def __init__(self, clock: Clock, emitter: Emitter, pending: PendingCalls, timeout_s: float) -> None:
        self.clock = clock
        self.emitter = emitter
        self.pending = pending
        self.timeout_s = timeout_s
        self.waiting: dict[str, PendingConfirmation] = {}

    def _changed(self, confirmation: PendingConfirmation) -> None:
        self.emitter.emit(ConfirmationChanged, confirmation=confirmation.state())

    async def request(self, call: ExecutionCall, tool: str, args: dict[str, Any]) -> bool:
        """Ask an operator to approve ``tool`` for ``call``; the context is ``waiting_user``
        until a decision or ``timeout_s``. Returns True only when approved."""
        now = self.clock.now()
        confirmation_id, created_at, expires_at = new_id(), now, now + self.timeout_s
        recorded = call.task.journal.confirmation(call.role, tool, args) if call.task.journal else None
        if recorded is not None:
            if recorded.status != "pending":
                return recorded.status == "approved"
            confirmation_id = recorded.id
            if recorded.expires_at is not None:
                expires_at = recorded.expires_at
            if recorded.created_at is not None:
                created_at = recorded.created_at
        confirmation = PendingConfirmation(
            id=confirmation_id,
            context_id=call.context.id,
            instance_id=call.instance.instance_id,
            role=call.role,
            task_id=call.task.task_id,
            project_id=call.task.project_id,
            tool=tool,
            args=args,
            created_at=created_at,
            expires_at=expires_at,
            future=asyncio.get_running_loop().create_future(),
        )
        self.waiting[confirmation.id] = confirmation
        previous = call.context.status
        call.context.status = ContextStatus.WAITING_USER
        call.context.pending_questions.append(f"Approve {tool} for {call.role}? ({confirmation.id})")
        if call.pending is not None:
            self.pending.pause(call.pending)
        self._changed(confirmation)
        self.emitter.context_changed(call.context)
        try:
            await self.clock.wait_any([confirmation.future], max(0.0, expires_at - now))
            if not confirmation.future.done():
                confirmation.status = "expired"
                self._changed(confirmation)
                return False
            return confirmation.future.result()
        finally:
            self.waiting.pop(confirmation.id, None)
            if call.pending is not None:
                self.pending.resume(call.pending)
            call.context.pending_questions = [q for q in call.context.pending_questions if confirmation.id not in q]
            if call.context.status == ContextStatus.WAITING_USER:
                call.context.status = previous
            self.emitter.context_changed(call.context)

    def resolve(self, confirmation_id: str, approve: bool, decided_by: str) -> dict[str, Any]:
        """Approve or reject a waiting confirmation; returns its JSON shape. KeyError when it
        is not waiting (unknown, decided or expired)."""
        confirmation = self.waiting.get(confirmation_id)
        if confirmation is None or confirmation.future.done():
            raise KeyError(confirmation_id)
        confirmation.status = "approved" if approve else "rejected"
        confirmation.decided_by = decided_by
        confirmation.future.set_result(approve)
        self._changed(confirmation)
        return confirmation.as_dict()

    def expire_task(self, task_id: str) -> None:
        """Expire every confirmation waiting in task ``task_id`` (the task was cancelled)."""
        for confirmation in list(self.waiting.values()):
            if confirmation.task_id == task_id and not confirmation.future.done():
                confirmation.future.set_result(False)
                confirmation.status = "expired"
                self._changed(confirmation)

    def expire_overdue(self) -> None:
        """Expire every confirmation past ``expires_at`` (the health loop calls this)."""
        now = self.clock.now()
        for confirmation in list(self.waiting.values()):
            if now > confirmation.expires_at and not confirmation.future.done():
                confirmation.future.set_result(False)
                confirmation.status = "expired"
                self._changed(confirmation)
