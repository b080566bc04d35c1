"""Event emission: how the runtime's parts tell the sinks what happened (docs/architecture.md).

``Emitter`` stamps each event with the clock and hands it to the ``EventBus``. Changes to an
execution context are coalesced: every change within one event-loop step becomes one
``ContextChanged``, emitted before the next event of any other kind or at the end of the
step, whichever comes first, so the order the sinks see is the order things happened.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from teamclaw.runtime.clock import Clock
from teamclaw.runtime.context import ExecutionContext, SnapshotType
from teamclaw.runtime.events import (
    AlertRaised,
    ContextChanged,
    ContextSnapshot,
    EventBus,
    InstanceChanged,
    InstanceReport,
    MessageSent,
    MessageStatusChanged,
    RuntimeEvent,
    SnapshotTaken,
)
from teamclaw.runtime.instance import AgentInstance
from teamclaw.runtime.messages import AgentMessage, DeliveryStatus, new_id
from teamclaw.runtime.progress import SNAPSHOT_FINAL


class Emitter:
    """Builds and emits the runtime's events (see module docstring).

    ``project_of(task_id)`` names the project of a running task (None when unknown), for
    message status changes whose sender did not say.
    """

    def __init__(self, bus: EventBus, clock: Clock, project_of: Callable[[str], str | None]) -> None:
        self.bus = bus
        self.clock = clock
        self._project_of = project_of
        self._changed_contexts: dict[str, ExecutionContext] = {}
        self._flush_scheduled = False

    def emit(self, event_type: type[RuntimeEvent], /, **fields: Any) -> None:
        """Emit ``event_type(**fields)`` stamped now; pending context changes go out first."""
        if self._changed_contexts:
            self.flush_contexts()  # keep emit order: a context change precedes what follows it
        self.bus.emit(event_type(at=self.clock.now(), **fields))

    def message(
        self, message: AgentMessage, status: DeliveryStatus, project_id: str | None, reason: str | None = None
    ) -> None:
        """``MessageSent``: ``message`` was sent and is now ``status``."""
        self.emit(MessageSent, message=message, status=status, reason=reason, project_id=project_id)

    def message_status(self, message: AgentMessage, status: DeliveryStatus, reason: str | None = None) -> None:
        """``MessageStatusChanged``: a queued ``message`` left its mailbox as ``status``."""
        project_id = self._project_of(message.context.task_id)
        self.emit(MessageStatusChanged, message=message, status=status, reason=reason, project_id=project_id)

    def context_changed(self, context: ExecutionContext, *, at_once: bool = False) -> None:
        """Note that ``context`` changed; its ``ContextChanged`` goes out before the next other
        event or at the end of the current loop step (``at_once``: now, for a progress report
        a sink should see as it happens).

        The context object itself travels and sinks read its fields when they flush, so the
        changes that finish an invoke (tokens charged, ready) are one event, not two.
        """
        context.updated_at = self.clock.now()
        self._changed_contexts[context.id] = context
        if at_once:
            self.flush_contexts()
        elif not self._flush_scheduled:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:  # called outside the loop (sync callers): emit now
                self.flush_contexts()
                return
            self._flush_scheduled = True
            loop.call_soon(self._scheduled_flush)

    def _scheduled_flush(self) -> None:
        self._flush_scheduled = False
        self.flush_contexts()

    def flush_contexts(self) -> None:
        """Emit one ``ContextChanged`` per context changed since its last one (in change order)."""
        changed, self._changed_contexts = self._changed_contexts, {}
        now = self.clock.now()
        for context in changed.values():
            self.bus.emit(ContextChanged(at=now, context=context))

    def instance_changed(self, instance: AgentInstance) -> None:
        """``InstanceChanged`` with what ``instance`` is now."""
        self.emit(
            InstanceChanged,
            instance=InstanceReport(
                instance_id=instance.instance_id,
                role=instance.role,
                status=str(instance.status),
                healthy=instance.healthy,
                queued=len(instance.mailbox),
                busy_with=instance.busy_with,
                processed=instance.processed,
                created_at=instance.created_at,
                last_heartbeat=instance.last_heartbeat,
            ),
        )

    def alert(self, kind: str, severity: str, message: str, **details: Any) -> None:
        """``AlertRaised``: ``kind`` (``queue_full``, ``health``, ``budget``...), ``severity``
        (``info | warning | critical``), a sentence for the operator and JSON ``details``."""
        self.emit(AlertRaised, alert_kind=kind, severity=severity, message=message, details=details)

    def snapshot(
        self, context: ExecutionContext, snapshot_type: SnapshotType, trigger: str, label: str = ""
    ) -> ContextSnapshot:
        """Record the whole state of ``context`` (PRD §4.6) as ``SnapshotTaken``; returns it."""
        context.snapshot_count += 1
        snapshot = ContextSnapshot(
            id=new_id(),
            context_id=context.id,
            task_id=context.task_id,
            type=str(snapshot_type),
            trigger=trigger,
            label=label,
            sequence=context.snapshot_count,
            state=context.state(),
            created_at=self.clock.now(),
            messages_stream=context.messages_stream,
            messages_end=context.messages_total,
        )
        self.emit(SnapshotTaken, snapshot=snapshot)
        return snapshot

    def final_snapshot(self, context: ExecutionContext) -> ContextSnapshot:
        """The ``auto`` snapshot taken when ``context`` reaches a final status (PRD §4.6:
        completed, failed, terminated): its trigger is that status, its label ``final state``,
        so a replay's last step shows the state the context ended in (progress, errors,
        artifacts), not the one before its last invoke."""
        return self.snapshot(context, SnapshotType.AUTO, str(context.status), SNAPSHOT_FINAL)
