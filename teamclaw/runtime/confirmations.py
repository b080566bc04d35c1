"""Confirmations: a tool use waiting for an operator's approval (PRD §4.7 ⚠️), or a
workflow waiting for an operator's answer (``ask``: interview questions, confirm-mode
decisions, the phase 5 choice of seed 002). Both are the PRD §4.6 human-in-the-loop.

While it waits, the agent's context is ``waiting_user`` with the question in its
``pending_questions`` and the deadlines of the task's invokes are paused (the asker's and
every caller's up the chain, so an operator who takes an hour does not time out main). An operator approves or rejects
it, or answers it (``resolve``); after ``timeout_s`` (600 s by default for a tool; the asker's
own for an answer) without a decision it expires as a rejection. Every state is emitted as ``ConfirmationChanged``.

In a resumed task (``teamclaw.runtime.resume``) the same tool use asks the same
confirmation again: one the operator already decided is answered by that decision at once,
one still pending keeps its id and its original deadline and waits on.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from teamclaw.runtime.clock import Clock
from teamclaw.runtime.context import ContextStatus, SnapshotType
from teamclaw.runtime.emission import Emitter
from teamclaw.runtime.events import ConfirmationChanged, ConfirmationState
from teamclaw.runtime.invocation import OperatorAnswer
from teamclaw.runtime.messages import new_id
from teamclaw.runtime.pending import PendingCall, PendingCalls

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
    kind: str = "tool"
    """``tool`` (approve / reject) or ``input`` (an answer to ``args``, the request)."""
    answer: dict[str, Any] | None = None

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
            kind=self.kind,
            answer=self.answer,
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
        self._paused: dict[str, list[PendingCall]] = {}
        self.on_held: Callable[[], object] | None = None
        """Called when an instance starts waiting for an operator (the runtime moves what is
        queued behind it: ``InstanceWorkers.reroute_held``)."""
        self.on_released: Callable[[], object] | None = None
        """Called when an instance stops waiting for an operator (the instances that gave
        their slot up while held take one back: ``InstanceWorkers.reclaim_slots``)."""
        """Per task, the invoke attempts whose deadlines wait with the operator."""

    def _pause_task(self, task_id: str) -> None:
        """Stop the deadline of every invoke waiting in the task (the whole chain up to main,
        not only the asker's own), the first time something in it waits for an operator."""
        if task_id not in self._paused:
            calls = self.pending.of_task(task_id)
            for pending in calls:
                self.pending.pause(pending)
            self._paused[task_id] = calls

    def _resume_task(self, task_id: str) -> None:
        """Restart those deadlines once nothing in the task waits for an operator any more."""
        if any(c.task_id == task_id for c in self.waiting.values()):
            return
        for pending in self._paused.pop(task_id, []):
            self.pending.resume(pending)

    def _changed(self, confirmation: PendingConfirmation) -> None:
        self.emitter.emit(ConfirmationChanged, confirmation=confirmation.state())

    async def request(self, call: ExecutionCall, tool: str, args: dict[str, Any]) -> bool:
        """Ask an operator to approve ``tool`` for ``call``; the context is ``waiting_user``
        until a decision or ``timeout_s``. Returns True only when approved."""
        confirmation = await self._wait(call, "tool", tool, args, self.timeout_s, f"Approve {tool} for {call.role}?")
        return confirmation.status == "approved"

    async def ask(
        self, call: ExecutionCall, what: str, request: dict[str, Any], timeout_s: float, question: str
    ) -> OperatorAnswer | None:
        """Ask an operator for an answer (kind ``input``): ``what`` names it (``interview``,
        ``decisions``, ``next_action``), ``request`` is what the operator is shown (with the
        ``answer_schema`` the answer must match, checked by whoever takes the answer), and
        ``question`` is the line in the context's ``pending_questions``. The context is
        ``waiting_user`` until an answer or ``timeout_s`` (s). Returns the answer and who gave
        it, or None when it expired, was refused or the task was cancelled."""
        confirmation = await self._wait(call, "input", what, request, timeout_s, question)
        if confirmation.status != "answered" or confirmation.answer is None:
            return None
        return OperatorAnswer(confirmation.answer, confirmation.decided_by or "")

    async def _wait(
        self, call: ExecutionCall, kind: str, tool: str, args: dict[str, Any], timeout_s: float, question: str
    ) -> PendingConfirmation:
        now = self.clock.now()
        confirmation_id, created_at, expires_at = new_id(), now, now + timeout_s
        recorded = call.task.journal.confirmation(call.role, tool, args) if call.task.journal else None
        if recorded is not None:
            if recorded.status != "pending":
                return PendingConfirmation(
                    id=recorded.id,
                    context_id=call.context.id,
                    instance_id=call.instance.instance_id,
                    role=call.role,
                    task_id=call.task.task_id,
                    project_id=call.task.project_id,
                    tool=tool,
                    args=args,
                    created_at=recorded.created_at or now,
                    expires_at=recorded.expires_at or now,
                    future=asyncio.get_running_loop().create_future(),
                    status=recorded.status,
                    decided_by=recorded.decided_by,
                    kind=kind,
                    answer=dict(recorded.answer) if recorded.answer is not None else None,
                )
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
            kind=kind,
        )
        self.waiting[confirmation.id] = confirmation
        previous = call.context.status
        call.context.status = ContextStatus.WAITING_USER
        call.context.pending_questions.append(f"{question} ({confirmation.id})")
        self._pause_task(call.task.task_id)
        call.instance.waiting_operator += 1
        self._changed(confirmation)
        if self.on_held is not None:
            self.on_held()
        self.emitter.context_changed(call.context)
        # The wait and its end are replay steps with the state of their own (issue 30).
        self.emitter.snapshot(call.context, SnapshotType.AUTO, f"waiting for operator: {tool}", kind)
        try:
            await self.clock.wait_any([confirmation.future], max(0.0, expires_at - now))
            if not confirmation.future.done():
                confirmation.status = "expired"
                self._changed(confirmation)
            return confirmation
        finally:
            self.waiting.pop(confirmation.id, None)
            call.instance.waiting_operator -= 1
            self._resume_task(call.task.task_id)
            call.context.pending_questions = [q for q in call.context.pending_questions if confirmation.id not in q]
            if call.context.status == ContextStatus.WAITING_USER:
                call.context.status = previous
            self.emitter.snapshot(call.context, SnapshotType.AUTO, f"operator {confirmation.status}: {tool}", kind)
            self.emitter.context_changed(call.context)
            if self.on_released is not None and not call.instance.waiting_operator:
                self.on_released()

    def resolve(
        self, confirmation_id: str, approve: bool, decided_by: str, answer: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """Approve or reject a waiting confirmation, or give an ``input`` its ``answer``
        (``approve`` True: ``answered``); returns its JSON shape. KeyError when it is not
        waiting (unknown, decided or expired)."""
        confirmation = self.waiting.get(confirmation_id)
        if confirmation is None or confirmation.future.done():
            raise KeyError(confirmation_id)
        if confirmation.kind == "input":
            confirmation.status = "answered" if approve and answer is not None else "rejected"
            confirmation.answer = answer if approve else None
        else:
            confirmation.status = "approved" if approve else "rejected"
            confirmation.answer = answer  # a tool decision's note: {"reason": ...} or None
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
