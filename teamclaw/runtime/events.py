"""The runtime's one event stream and its sinks (DESIGN.md §3.3).

The runtime emits a ``RuntimeEvent`` for everything worth recording or showing live;
each sink's ``publish`` must return at once (queue the event, never do I/O inline), so the
hot path never waits on a database or a browser.

Event kinds and their ``data``:

- ``message``: ``{"message": AgentMessage, "status": DeliveryStatus, "reason": str|None,
  "project_id": str|None}`` - a message was sent (queued, delivered at once, denied or
  refused).
- ``message_status``: ``{"message": AgentMessage, "status", "reason", "project_id"}`` - a
  queued message was delivered, dropped (evicted or instance gone) or expired.
- ``context``: ``{"context": ExecutionContext}`` - a context was created or changed; sinks
  call ``state()`` when they flush (the latest state wins).
- ``snapshot``: ``{"snapshot": dict}`` - a context snapshot (PRD §4.6).
- ``instance``: ``{"instance": dict}`` - spawned, status or health changed, terminated.
- ``task``: ``{"task_id", "status", "project_id", "error", ...}`` - task lifecycle.
- ``artifact``: ``{"task_id", "name", "content", "content_type", "context_id", "role"}``.
- ``confirmation``: ``{"confirmation": dict}`` - a tool confirmation was requested/decided.
- ``alert``: ``{"alert": dict}`` - queue drop, health change, budget stop.
- ``config_change``: ``{"event": dict}`` - a ConfigChangeEvent (PRD §4.8) was applied.
"""

from __future__ import annotations

import itertools
import logging
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol

log = logging.getLogger(__name__)


class EventKind(StrEnum):
    MESSAGE = "message"
    MESSAGE_STATUS = "message_status"
    CONTEXT = "context"
    SNAPSHOT = "snapshot"
    INSTANCE = "instance"
    TASK = "task"
    ARTIFACT = "artifact"
    CONFIRMATION = "confirmation"
    ALERT = "alert"
    CONFIG_CHANGE = "config_change"


_event_seq = itertools.count(1)


@dataclass(slots=True)
class RuntimeEvent:
    """One event: its ``kind``, ``data`` (see module docstring), emit order ``seq``, time ``at`` (s)."""

    kind: EventKind
    data: dict[str, Any]
    at: float
    seq: int = field(default_factory=lambda: next(_event_seq))


class EventSink(Protocol):
    """Receives every event in emit order. ``publish`` must not block or raise."""

    def publish(self, event: RuntimeEvent) -> None: ...


class EventBus:
    """Fans each event out to the registered sinks; a failing sink is logged, not fatal."""

    def __init__(self) -> None:
        self._sinks: list[EventSink] = []

    def add_sink(self, sink: EventSink) -> None:
        self._sinks.append(sink)

    def remove_sink(self, sink: EventSink) -> None:
        if sink in self._sinks:
            self._sinks.remove(sink)

    def emit(self, kind: EventKind, data: dict[str, Any], at: float) -> RuntimeEvent:
        event = RuntimeEvent(kind, data, at)
        for sink in self._sinks:
            try:
                sink.publish(event)
            except Exception:  # a sink must never break the runtime
                log.exception("event sink %r failed on %s", sink, kind)
        return event


class CollectingSink:
    """Keeps every event in a list (tests, the management command's progress output)."""

    def __init__(self) -> None:
        self.events: list[RuntimeEvent] = []

    def publish(self, event: RuntimeEvent) -> None:
        self.events.append(event)

    def of(self, kind: EventKind) -> list[RuntimeEvent]:
        return [e for e in self.events if e.kind == kind]
