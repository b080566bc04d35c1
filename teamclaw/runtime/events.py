"""The runtime's one event stream: a typed event per kind, and the sinks that receive them.

The runtime emits an event for everything worth recording or showing live (see
docs/architecture.md, "Events"); each sink's ``publish`` must return at once (queue the
event, never do I/O inline), so the hot path never waits on a database or a browser.

Every event is a frozen, slotted dataclass with the emit time ``at`` (clock seconds) and a
process-wide emit order ``seq``; sinks ``match`` on the class:

- ``MessageSent``: a message was sent: queued, delivered at once, denied or refused.
- ``MessageStatusChanged``: a queued message was delivered, dropped or expired.
- ``ContextChanged``: an execution context was created or changed. It carries the live
  context object; sinks read its fields when they flush, so the latest state wins.
- ``SnapshotTaken``: a context snapshot (PRD §4.6).
- ``InstanceChanged``: an instance was spawned, changed status or health, or terminated.
- ``TaskStarted`` / ``TaskFinished``: a task's lifecycle.
- ``ArtifactWritten``: a task artifact was stored (a later write replaces it).
- ``ConfirmationChanged``: a tool confirmation was requested or decided (PRD §4.7).
- ``AlertRaised``: a queue drop, a health change, a budget stop, a failover.
- ``ConfigApplied``: a ``ConfigChangeEvent`` (PRD §4.8) reached the runtime.
- ``ToolUsed``: an agent used a tool under the tool matrix (PRD §4.7), with when it started.
- ``ModelCalled``: an agent asked its model once (one chat-completions request, retries
  included), with when it started, the model and the token usage.

``ToolUsed`` and ``ModelCalled`` carry the ``correlation_id`` of the invoke (or hook) the agent
was serving, so a sink can put them under that call (the OpenTelemetry traces,
``monitoring.tracing``); the record keeps them in the context's messages as before.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, ClassVar, Protocol

from teamclaw.runtime.context import ExecutionContext
from teamclaw.runtime.messages import AgentMessage, DeliveryStatus

log = logging.getLogger(__name__)


class EventKind(StrEnum):
    """The kind of an event, as the live page and the recorder name it."""

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
    TOOL = "tool"
    MODEL_CALL = "model_call"


_event_seq = itertools.count(1)


def next_event_seq() -> int:
    """The next emit order number (one counter for the whole process)."""
    return next(_event_seq)


@dataclass(frozen=True, slots=True, kw_only=True)
class RuntimeEvent:
    """What every event has: ``at`` (clock seconds) and ``seq`` (emit order in this process)."""

    kind: ClassVar[EventKind]
    at: float
    seq: int = field(default_factory=next_event_seq)


@dataclass(frozen=True, slots=True)
class MessageSent(RuntimeEvent):
    """``message`` was sent with delivery ``status`` (``reason`` for a refusal)."""

    kind: ClassVar[EventKind] = EventKind.MESSAGE
    message: AgentMessage
    status: DeliveryStatus
    reason: str | None = None
    project_id: str | None = None


@dataclass(frozen=True, slots=True)
class MessageStatusChanged(RuntimeEvent):
    """A queued ``message`` left its mailbox: ``delivered``, ``dropped`` or ``expired``."""

    kind: ClassVar[EventKind] = EventKind.MESSAGE_STATUS
    message: AgentMessage
    status: DeliveryStatus
    reason: str | None = None
    project_id: str | None = None


@dataclass(frozen=True, slots=True)
class ContextChanged(RuntimeEvent):
    """``context`` was created or changed; read its fields when you write it (latest wins)."""

    kind: ClassVar[EventKind] = EventKind.CONTEXT
    context: ExecutionContext


@dataclass(frozen=True, slots=True)
class ContextSnapshot:
    """The whole state of a context at one moment (PRD §4.6 ``ContextSnapshot``).

    ``type`` is ``auto | error | manual``; ``trigger`` says what took it (``start``,
    ``before invoke X``, ``user_instruction``...); ``sequence`` counts the context's snapshots
    from 1; ``created_at`` is clock seconds.
    """

    id: str
    context_id: str
    task_id: str
    type: str
    trigger: str
    label: str
    sequence: int
    state: Mapping[str, Any]
    created_at: float
    messages_stream: str = ""
    """The context's ``messages_stream`` and the position after the last reference in
    ``state``'s ``input_context.messages`` (``messages_end``): the references are positions
    ``messages_end - len(messages)`` up to ``messages_end`` of that stream, which lets the
    recorder store each once, not once per snapshot (empty stream: store them as they are)."""
    messages_end: int = 0

    def as_dict(self) -> dict[str, Any]:
        """JSON shape of the snapshot (the API's and the live page's)."""
        return {
            "id": self.id,
            "context_id": self.context_id,
            "task_id": self.task_id,
            "type": self.type,
            "trigger": self.trigger,
            "label": self.label,
            "sequence": self.sequence,
            "state": self.state,
            "created_at": self.created_at,
        }


@dataclass(frozen=True, slots=True)
class SnapshotTaken(RuntimeEvent):
    """A snapshot of a context was taken."""

    kind: ClassVar[EventKind] = EventKind.SNAPSHOT
    snapshot: ContextSnapshot


@dataclass(frozen=True, slots=True)
class InstanceReport:
    """An agent instance as last seen: ``queued`` and ``processed`` are message counts,
    ``created_at`` and ``last_heartbeat`` clock seconds."""

    instance_id: str
    role: str
    status: str
    healthy: bool
    queued: int
    busy_with: str | None
    processed: int
    created_at: float
    last_heartbeat: float


@dataclass(frozen=True, slots=True)
class InstanceChanged(RuntimeEvent):
    """An instance was spawned, changed status or health, beat, or was terminated."""

    kind: ClassVar[EventKind] = EventKind.INSTANCE
    instance: InstanceReport


@dataclass(frozen=True, slots=True)
class TaskStarted(RuntimeEvent):
    """A task began with the config ``config_version`` pinned (PRD §4.8).

    ``task_kind`` is ``task``, or ``invoke`` / ``hook`` for the short task around a call made
    from outside any agent; ``token_budget`` is tokens; ``started_at`` clock seconds.
    """

    kind: ClassVar[EventKind] = EventKind.TASK
    task_id: str
    project_id: str | None
    description: str
    config_version: int
    task_kind: str
    token_budget: int
    started_at: float

    def as_dict(self) -> dict[str, Any]:
        """The task fields this event sets: ``{task_id, status: running, ...}``."""
        return {
            "task_id": self.task_id,
            "status": "running",
            "project_id": self.project_id,
            "description": self.description,
            "config_version": self.config_version,
            "kind": self.task_kind,
            "token_budget": self.token_budget,
            "started_at": self.started_at,
        }


@dataclass(frozen=True, slots=True)
class TaskProgress(RuntimeEvent):
    """A running task's token count moved (tokens; at most one a second per task,
    ``TaskState.TOKEN_PROGRESS_S``, and never for the implicit task around a standalone
    invoke): the pages show what it has spent so far instead of 0 until it ends, and the
    record keeps it should the process stop first. ``TaskFinished`` carries the final count."""

    kind: ClassVar[EventKind] = EventKind.TASK
    task_id: str
    project_id: str | None
    description: str
    tokens_used: int
    token_budget: int
    tokens_estimated: bool

    def as_dict(self) -> dict[str, Any]:
        """The task fields this event sets (no ``status``: a progress event never changes it)."""
        return {
            "task_id": self.task_id,
            "project_id": self.project_id,
            "description": self.description,
            "tokens_used": self.tokens_used,
            "token_budget": self.token_budget,
            "tokens_estimated": self.tokens_estimated,
        }


@dataclass(frozen=True, slots=True)
class TaskFinished(RuntimeEvent):
    """A task ended ``completed`` or ``failed`` (``error`` is an AgentError's JSON shape)."""

    kind: ClassVar[EventKind] = EventKind.TASK
    task_id: str
    status: str
    project_id: str | None
    error: Mapping[str, Any] | None
    tokens_used: int
    token_budget: int
    finished_at: float
    tokens_estimated: bool = False
    """Whether any of ``tokens_used`` is an estimate (pages mark it "est.")."""
    description: str = ""
    """The task's description, so a page that shows the event keeps the task's title."""

    def as_dict(self) -> dict[str, Any]:
        """The task fields this event sets: ``{task_id, status, error, tokens_used, ...}``."""
        return {
            "task_id": self.task_id,
            "description": self.description,
            "status": self.status,
            "project_id": self.project_id,
            "error": dict(self.error) if self.error is not None else None,
            "tokens_used": self.tokens_used,
            "token_budget": self.token_budget,
            "finished_at": self.finished_at,
            "tokens_estimated": self.tokens_estimated,
        }


@dataclass(frozen=True, slots=True)
class ArtifactWritten(RuntimeEvent):
    """Agent ``role`` (``instance_id``, context ``context_id``) stored artifact ``name``."""

    kind: ClassVar[EventKind] = EventKind.ARTIFACT
    task_id: str
    project_id: str | None
    name: str
    content: str
    content_type: str
    context_id: str | None
    role: str
    instance_id: str

    def as_dict(self) -> dict[str, Any]:
        """JSON shape of the artifact (the live page's)."""
        return {
            "task_id": self.task_id,
            "project_id": self.project_id,
            "name": self.name,
            "content": self.content,
            "content_type": self.content_type,
            "context_id": self.context_id,
            "role": self.role,
            "instance_id": self.instance_id,
        }


@dataclass(frozen=True, slots=True)
class ConfirmationState:
    """An operator's confirmation as it stands (PRD §4.6 ``waiting_user``): a tool use
    (``kind`` ``tool``, PRD §4.7 ⚠️: ``status`` ``pending``, ``approved``, ``rejected`` or
    ``expired``) or an answer a workflow asks for (``kind`` ``input``: ``tool`` names what is
    asked, e.g. ``interview``; ``args`` is the request with its ``answer_schema``; ``status``
    ``answered`` with the ``answer``). Times are clock seconds."""

    id: str
    context_id: str
    instance_id: str
    role: str
    task_id: str
    project_id: str | None
    tool: str
    args: Mapping[str, Any]
    status: str
    created_at: float
    expires_at: float
    decided_by: str | None
    kind: str = "tool"
    answer: Mapping[str, Any] | None = None

    def as_dict(self) -> dict[str, Any]:
        """JSON shape of the confirmation (the API's and the live page's)."""
        return {
            "id": self.id,
            "context_id": self.context_id,
            "instance_id": self.instance_id,
            "role": self.role,
            "task_id": self.task_id,
            "project_id": self.project_id,
            "tool": self.tool,
            "args": self.args,
            "status": self.status,
            "created_at": self.created_at,
            "expires_at": self.expires_at,
            "decided_by": self.decided_by,
            "kind": self.kind,
            "answer": self.answer,
        }


@dataclass(frozen=True, slots=True)
class ConfirmationChanged(RuntimeEvent):
    """A tool confirmation was requested, decided or expired."""

    kind: ClassVar[EventKind] = EventKind.CONFIRMATION
    confirmation: ConfirmationState


@dataclass(frozen=True, slots=True)
class AlertRaised(RuntimeEvent):
    """An alert: ``alert_kind`` is ``queue_full``, ``queue_drop``, ``health``, ``budget``,
    ``failover``...; ``severity`` is ``info``, ``warning`` or ``critical``."""

    kind: ClassVar[EventKind] = EventKind.ALERT
    alert_kind: str
    severity: str
    message: str
    details: Mapping[str, Any]

    def as_dict(self) -> dict[str, Any]:
        """JSON shape of the alert: ``{kind, severity, message, details, at}``."""
        return {
            "kind": self.alert_kind,
            "severity": self.severity,
            "message": self.message,
            "details": dict(self.details),
            "at": self.at,
        }


@dataclass(frozen=True, slots=True)
class ConfigApplied(RuntimeEvent):
    """A ``ConfigChangeEvent`` (PRD §4.8) reached the runtime: ``change`` is its JSON shape
    ``{config_type, old_version, new_version, changes, ...}``; later task starts use it."""

    kind: ClassVar[EventKind] = EventKind.CONFIG_CHANGE
    change: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class CallSite:
    """Where a tool use or a model call happened: the agent (``role``, ``instance_id``, its
    context ``context_id``) serving the capability ``capability_id`` for task ``task_id``;
    ``correlation_id`` is that of the ``invoke_request`` (or ``hook_event``) message it serves."""

    task_id: str
    project_id: str | None
    context_id: str
    role: str
    instance_id: str
    capability_id: str
    correlation_id: str | None


@dataclass(frozen=True, slots=True)
class ToolUsed(RuntimeEvent):
    """``site``'s agent used ``tool`` (PRD §4.7) from ``started_at`` until ``at`` (clock
    seconds, an operator's confirmation included). ``mode`` is the tool matrix cell (``allow``,
    ``confirm``, ``deny``); ``error`` the AgentError's JSON shape when it failed or was denied."""

    kind: ClassVar[EventKind] = EventKind.TOOL
    site: CallSite
    tool: str
    mode: str
    started_at: float
    error: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class ModelCalled(RuntimeEvent):
    """``site``'s agent asked ``model`` at ``endpoint`` (a public URL, no credentials) once,
    from ``started_at`` until ``at`` (clock seconds, the model executor's retries included).

    ``round`` counts this call's model answers from 1. Usage is in tokens; ``estimated`` is
    True when the server reported none and TeamClaw estimated it (never shown as reported).
    ``finish_reason`` and ``answer_format`` (``json_schema_strict``, ``json_schema`` or
    ``prompt``) are the reply's; ``tool_calls`` the functions it asked for;
    ``response_model`` and ``response_id`` the model that answered and the completion's id as
    the server sent them (None when it sent none). On failure ``error`` is the AgentError's
    JSON shape (``code`` an ErrorCode, or ``CancelledError`` when the invoke's timeout stopped
    the request) and the usage is 0.

    Only when the model settings capture content (``ModelSettings.capture_content``, for the
    traces' opt-in ``gen_ai.input.messages``) do ``input_messages`` (the chat-completions
    messages as sent) and ``output_message`` (the answer as an ``assistant`` message) carry
    the conversation; otherwise they are None."""

    kind: ClassVar[EventKind] = EventKind.MODEL_CALL
    site: CallSite
    model: str
    endpoint: str
    round: int
    started_at: float
    input_tokens: int = 0
    output_tokens: int = 0
    estimated: bool = False
    finish_reason: str | None = None
    answer_format: str = "prompt"
    tool_calls: tuple[str, ...] = ()
    error: Mapping[str, Any] | None = None
    response_model: str | None = None
    response_id: str | None = None
    input_messages: tuple[Mapping[str, Any], ...] | None = None
    output_message: Mapping[str, Any] | None = None


EVENT_TYPES: tuple[type[RuntimeEvent], ...] = (
    MessageSent,
    MessageStatusChanged,
    ContextChanged,
    SnapshotTaken,
    InstanceChanged,
    TaskStarted,
    TaskProgress,
    TaskFinished,
    ArtifactWritten,
    ConfirmationChanged,
    AlertRaised,
    ConfigApplied,
    ToolUsed,
    ModelCalled,
)
"""Every event class the runtime emits."""


class EventSink(Protocol):
    """Receives every event in emit order. ``publish`` must not block or raise."""

    def publish(self, event: RuntimeEvent) -> None: ...


class EventBus:
    """Fans each event out to the registered sinks; a failing sink is logged, not fatal."""

    def __init__(self) -> None:
        self._sinks: list[EventSink] = []

    def add_sink(self, sink: EventSink) -> None:
        """Send every later event to ``sink`` too."""
        self._sinks.append(sink)

    def remove_sink(self, sink: EventSink) -> None:
        """Stop sending events to ``sink`` (no error when it was not added)."""
        if sink in self._sinks:
            self._sinks.remove(sink)

    def emit(self, event: RuntimeEvent) -> RuntimeEvent:
        """Hand ``event`` to every sink in the order they were added; returns it."""
        for sink in self._sinks:
            try:
                sink.publish(event)
            except Exception:  # a sink must never break the runtime
                log.exception("event sink %r failed on %s", sink, event.kind)
        return event


class CollectingSink:
    """Keeps every event in a list (tests, the management command's progress output)."""

    def __init__(self) -> None:
        self.events: list[RuntimeEvent] = []

    def publish(self, event: RuntimeEvent) -> None:
        self.events.append(event)

    def of(self, kind: EventKind | type[RuntimeEvent]) -> list[Any]:
        """The events of one kind (``EventKind.TASK``) or one class (``TaskFinished``)."""
        if isinstance(kind, type):
            return [e for e in self.events if isinstance(e, kind)]
        return [e for e in self.events if e.kind == kind]
