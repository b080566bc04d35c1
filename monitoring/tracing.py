"""OpenTelemetry traces of the team's work, exported over OTLP/HTTP (issue 16; PRD §1 runtime
traceability, §4.3 messages, §4.4 invoke and hook, §4.7 tools and token budget).

Off unless ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` or ``OTEL_EXPORTER_OTLP_ENDPOINT`` is set
(``traces_endpoint``): then, and only then, each runtime host (``runs.host``: the embedded
server, ``runtime_worker``, ``run_workflow``) builds a ``TracerProvider`` of its own with a
``BatchSpanProcessor`` and the OTLP/HTTP protobuf exporter, and adds a ``TraceSink`` to its
runtime's event sinks. The global OpenTelemetry provider is never installed or touched. The
exporter reads the standard variables itself (``OTEL_EXPORTER_OTLP_HEADERS``, ``..._TIMEOUT``,
``..._COMPRESSION``, certificates); the resource reads ``OTEL_SERVICE_NAME`` (default
``teamclaw``) and ``OTEL_RESOURCE_ATTRIBUTES``.

``TraceSink`` builds spans from the runtime's typed events alone, with the events' own times
as start and end (``teamclaw.runtime.events``; nothing in the runtime calls OpenTelemetry):

- a task (``TaskStarted`` .. ``TaskFinished``) is the root span ``invoke_workflow <name>``;
  its trace id is the task id (32 hex digits), so a trace is found by the task's id;
- each invoke attempt (an ``invoke_request`` message .. its ``invoke_response`` or
  ``invoke_error``, or its refusal, expiry or drop) is ``invoke_agent <target role>``, the
  child of the invoke (or hook) its caller was serving, or of the task for a call from
  outside any agent (the operator, the API);
- each hook delivery (``hook_event`` .. the receiver's ``status_update``) is
  ``invoke_agent <receiving role>`` with ``teamclaw.hook.event_type``;
- each tool use (``ToolUsed``) is ``execute_tool <tool>`` and each model request
  (``ModelCalled``) is ``chat <model>``, children of the call that made them.

Which call an agent instance is serving is known from the events: an instance's worker takes
one message at a time from its mailbox (``MessageStatusChanged`` delivered) and serves it to
the end before it takes the next (docs/architecture.md §5).

Attributes follow the OpenTelemetry GenAI semantic conventions (``gen_ai.operation.name``,
``gen_ai.agent.name`` / ``.id``, ``gen_ai.workflow.name``, ``gen_ai.request.model``,
``gen_ai.usage.input_tokens`` / ``output_tokens``, ``gen_ai.tool.name``, ``error.type``) plus
the product's ids under ``teamclaw.*`` (``teamclaw.task.id``, ``teamclaw.capability_id``,
``teamclaw.instance.id``...). ``error.type`` is the PRD §4.4 error code. Token counts the
server did not report are never put in ``gen_ai.usage.*``: they go to
``teamclaw.usage.estimated_input_tokens`` / ``..._output_tokens`` instead.

A task resumed after a crash (attempt 2) gets a new root span in the same trace; steps
answered from the record send no messages, so they have no spans. Spans still open when a
task ends are ended with it (with the task's error when it failed or was cancelled), and
those open when the host stops are ended then with ``teamclaw.interrupted``.

**A task waiting for an operator** (PRD §4.6 ``waiting_user``: a pending tool confirmation
or input, ``ConfirmationChanged``) is in the trace list while it waits. A span is exported
only once it ends, so the root span of the task ends when the task starts waiting, with
``teamclaw.task.status`` = ``waiting_user`` and ``teamclaw.task.waiting_for`` (the tools or
inputs asked for); when the last pending one is decided, a new root span of the same name
continues the task in the same trace (``teamclaw.task.segment`` 2, 3..., linked to the one
before), and it is the one that ends with the task's status. Calls open across the wait stay
under the segment they started in. This is the same shape as a resumed attempt, and it shows
as it should in both tools: Phoenix lists root spans (``parent_id`` empty) in its trace list,
so the waiting segment is a row of its own as soon as it is exported and the last segment
carries the task's final status and error; Langfuse makes one trace of every span with the
trace id (the task id) and shows the segments as its top-level observations. The other
common way, a zero-length "started" span exported at the start, would give every task two
root rows in Phoenix (one of them always 0 ms and never failed), waiting or not.

**Content.** Chat spans carry ``gen_ai.response.model`` and ``gen_ai.response.id`` as the
model server answered them. The messages themselves are captured only when
``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` is true (``capture_content``; the
variable the OpenTelemetry GenAI instrumentations read, off by default): then
``gen_ai.input.messages`` (every message sent, the system prompt included, as
``[{"role", "parts": [{"type": "text", "content"} | {"type": "tool_call", "id", "name",
"arguments"} | {"type": "tool_call_response", "id", "response"}]}]``) and
``gen_ai.output.messages`` (``[{"role": "assistant", "parts", "finish_reason"}]``) are JSON
strings on the chat span, as the GenAI semantic conventions define them. They hold prompts,
documents and answers: whoever reads the traces reads those. ``OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT``
(the SDK's) cuts long values.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from django.core.exceptions import ImproperlyConfigured
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter
from opentelemetry.sdk.trace.id_generator import IdGenerator, RandomIdGenerator
from opentelemetry.trace import Link, NonRecordingSpan, Span, SpanContext, SpanKind, Status, StatusCode

from monitoring.outcome import verdict
from teamclaw.runtime.events import (
    ArtifactWritten,
    CallSite,
    ConfirmationChanged,
    InstanceChanged,
    MessageSent,
    MessageStatusChanged,
    ModelCalled,
    RuntimeEvent,
    TaskFinished,
    TaskStarted,
    ToolUsed,
)
from teamclaw.runtime.messages import AgentMessage, DeliveryStatus, MessageType, Priority

TRACES_ENDPOINT = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
BASE_ENDPOINT = "OTEL_EXPORTER_OTLP_ENDPOINT"
PROTOCOL_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL")
CAPTURE_CONTENT = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
"""Opt-in: chat spans carry the messages (``capture_content``)."""
CAPTURE_ON = frozenset({"true", "1", "yes", "on", "span_only", "span_and_event"})
CAPTURE_OFF = frozenset({"", "false", "0", "no", "off", "no_content", "event_only"})
DEFAULT_SERVICE_NAME = "teamclaw"
TRACES_PATH = "v1/traces"
FLUSH_TIMEOUT_MS = 5000
"""How long stopping a host waits for the last spans to be exported (ms)."""

_HEX_TRACE_ID = re.compile(r"^[0-9a-f]{32}$")

# The GenAI semantic conventions' names (opentelemetry-semantic-conventions marks them as
# moved to the GenAI conventions' own repository; the names are the same there).
OPERATION = "gen_ai.operation.name"
AGENT_NAME = "gen_ai.agent.name"
AGENT_ID = "gen_ai.agent.id"
ERROR_TYPE = "error.type"


# -- configuration ------------------------------------------------------------------------
def _checked_url(name: str, value: str) -> str:
    try:
        parts = urlsplit(value)
        port_ok = parts.port is None or parts.port > 0
    except ValueError:  # an unbalanced IPv6 bracket, a port that is not a number
        parts, port_ok = urlsplit(""), False
    if parts.scheme not in ("http", "https") or not parts.hostname or not port_ok:
        raise ImproperlyConfigured(f"{name} must be an http:// or https:// URL with a host, e.g. http://127.0.0.1:4318")
    return value


def traces_endpoint(environ: Mapping[str, str] | None = None) -> str | None:
    """The OTLP/HTTP URL spans are posted to, or None when tracing is off.

    ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` is used as it is; ``OTEL_EXPORTER_OTLP_ENDPOINT``
    gets ``/v1/traces`` appended (the OTLP exporter specification). Off when neither is set,
    or when ``OTEL_SDK_DISABLED=true`` or ``OTEL_TRACES_EXPORTER=none``. Raises
    ImproperlyConfigured naming the variable for a value that is not an http(s) URL, or a
    protocol other than ``http/protobuf`` (the only one installed).
    """
    env = os.environ if environ is None else environ
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return None
    if env.get("OTEL_TRACES_EXPORTER", "").strip().lower() == "none":
        return None
    traces = env.get(TRACES_ENDPOINT, "").strip()
    base = env.get(BASE_ENDPOINT, "").strip()
    if not traces and not base:
        return None
    for name in PROTOCOL_VARIABLES:
        protocol = env.get(name, "").strip()
        if protocol and protocol != "http/protobuf":
            raise ImproperlyConfigured(f"{name}={protocol!r}: TeamClaw exports traces over http/protobuf only")
    if traces:
        return _checked_url(TRACES_ENDPOINT, traces)
    return f"{_checked_url(BASE_ENDPOINT, base).rstrip('/')}/{TRACES_PATH}"


def capture_content(environ: Mapping[str, str] | None = None) -> bool:
    """Whether chat spans carry the messages: ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``
    is true (``true``/``1``/``yes``/``on``, or the GenAI utilities' ``SPAN_ONLY`` /
    ``SPAN_AND_EVENT``); off when unset or false (``NO_CONTENT``, ``EVENT_ONLY``: TeamClaw
    emits no log events). Raises ImproperlyConfigured naming the variable for another value."""
    env = os.environ if environ is None else environ
    value = env.get(CAPTURE_CONTENT, "").strip().lower()
    if value in CAPTURE_ON:
        return True
    if value in CAPTURE_OFF:
        return False
    raise ImproperlyConfigured(f"{CAPTURE_CONTENT}={env[CAPTURE_CONTENT]!r}: use true or false")


def start_tracing(worker_kind: str | None, exporter: SpanExporter | None = None) -> TraceSink | None:
    """A ``TraceSink`` exporting to the configured endpoint (``traces_endpoint``), or None
    (and nothing created: no provider, no thread) when tracing is off. ``worker_kind`` (the
    host's ``embedded``, ``worker`` or ``command``) becomes the resource attribute
    ``teamclaw.worker.kind``. ``exporter`` replaces the OTLP exporter (benchmarks).
    Raises ImproperlyConfigured (see ``traces_endpoint`` and ``capture_content``)."""
    endpoint = traces_endpoint()
    if endpoint is None:
        return None
    with_content = capture_content()
    resource = Resource.create({"teamclaw.worker.kind": worker_kind or "none"})
    if str(resource.attributes.get(SERVICE_NAME, "")).startswith("unknown_service"):
        resource = resource.merge(Resource({SERVICE_NAME: DEFAULT_SERVICE_NAME}))
    ids = TaskTraceIds()
    provider = TracerProvider(resource=resource, id_generator=ids)
    provider.add_span_processor(BatchSpanProcessor(exporter or OTLPSpanExporter(endpoint=endpoint)))
    return TraceSink(provider, ids, endpoint, capture_content=with_content)


class TaskTraceIds(IdGenerator):
    """Random span ids; the trace id of a task's root span is the task id when it is 32 hex
    digits (``next_trace_id``, set just before that span starts), random otherwise."""

    def __init__(self) -> None:
        self._random = RandomIdGenerator()
        self.next_trace_id: int | None = None

    def generate_span_id(self) -> int:
        return self._random.generate_span_id()

    def generate_trace_id(self) -> int:
        wanted, self.next_trace_id = self.next_trace_id, None
        return wanted or self._random.generate_trace_id()


def trace_id_of(task_id: str) -> int | None:
    """The trace id a task's spans get: its id read as 128 bits when it is 32 hex digits
    (``teamclaw.runtime.messages.new_id``) and not zero; None otherwise."""
    if _HEX_TRACE_ID.match(task_id):
        return int(task_id, 16) or None
    return None


# -- events to spans -----------------------------------------------------------------------
def _ns(seconds: float) -> int:
    """Clock seconds (epoch) as OpenTelemetry's nanoseconds."""
    return int(seconds * 1_000_000_000)


def _fail(span: Span, error: Mapping[str, Any] | None) -> None:
    """Mark ``span`` failed with ``error`` (an AgentError's JSON shape)."""
    if not error:
        return
    code = str(error.get("code") or "_OTHER")
    span.set_attribute(ERROR_TYPE, code)
    span.set_status(Status(StatusCode.ERROR, str(error.get("message") or code)[:300]))


@dataclass(slots=True)
class _TaskTrace:
    """The spans of one running task: its root (the current segment) and the calls still
    open, by correlation id; the confirmations it waits for (``{id: tool}``)."""

    root: Span
    kind: str
    attributes: dict[str, Any]
    """The root's attributes at the start (each new segment starts with them)."""
    named: bool = False
    open: dict[str, Span] = field(default_factory=dict)
    reported_tokens: int = 0
    """Tokens of the model calls whose usage the server reported (the rest are estimates)."""
    pending: dict[str, str] = field(default_factory=dict)
    segment: int = 1


class TraceSink:
    """An event sink turning the runtime's events into spans (module docstring).

    ``publish`` runs on the runtime's loop and only creates and ends spans in memory (the
    batch processor exports them from its own thread); events of no interest cost a
    dictionary look-up. ``close()`` ends what is still open and flushes the exporter.
    """

    def __init__(
        self, provider: TracerProvider, ids: TaskTraceIds, endpoint: str, capture_content: bool = False
    ) -> None:
        self.provider = provider
        self.endpoint = endpoint
        self.capture_content = capture_content
        """Chat spans carry the messages (module docstring); the host's model executor then
        puts them in its events."""
        self._ids = ids
        self._tracer = provider.get_tracer("teamclaw.runtime")
        self._tasks: dict[str, _TaskTrace] = {}
        self._serving: dict[str, tuple[str, SpanContext]] = {}
        """instance id -> (task id, span) of the invoke or hook it is serving now."""
        self._closed = False
        self._handlers: dict[type[RuntimeEvent], Callable[[Any], None]] = {
            TaskStarted: self._task_started,
            TaskFinished: self._task_finished,
            MessageSent: self._message_sent,
            MessageStatusChanged: self._message_status,
            ToolUsed: self._tool_used,
            ModelCalled: self._model_called,
            ArtifactWritten: self._artifact,
            InstanceChanged: self._instance,
            ConfirmationChanged: self._confirmation,
        }

    def publish(self, event: RuntimeEvent) -> None:
        handler = self._handlers.get(type(event))
        if handler is not None:
            handler(event)

    def close(self) -> None:
        """End every span still open (``teamclaw.interrupted``: this process stopped first)
        and export what is left, waiting at most FLUSH_TIMEOUT_MS. A second call does nothing."""
        if self._closed:
            return
        self._closed = True
        for task in self._tasks.values():
            for span in [*task.open.values(), task.root]:
                if span.is_recording():  # a root that ended at a wait is exported already
                    span.set_attribute("teamclaw.interrupted", True)
                    span.end()
        self._tasks.clear()
        self._serving.clear()
        self.provider.force_flush(FLUSH_TIMEOUT_MS)
        self.provider.shutdown()

    # -- tasks ------------------------------------------------------------------------------
    def _task_started(self, event: TaskStarted) -> None:
        attributes = {
            OPERATION: "invoke_workflow",
            "teamclaw.task.id": event.task_id,
            "teamclaw.task.kind": event.task_kind,
            "teamclaw.config_version": event.config_version,
            "teamclaw.token_budget": event.token_budget,
            **({"teamclaw.project.id": event.project_id} if event.project_id else {}),
        }
        root = self._root_span(event.task_id, f"invoke_workflow {event.task_kind}", attributes, event.started_at)
        self._tasks[event.task_id] = _TaskTrace(root, event.task_kind, attributes)

    def _root_span(
        self, task_id: str, name: str, attributes: Mapping[str, Any], at: float, links: list[Link] | None = None
    ) -> Span:
        """A root span (no parent) in the task's trace (``trace_id_of``), started at ``at`` (clock s)."""
        self._ids.next_trace_id = trace_id_of(task_id)
        try:
            return self._tracer.start_span(
                name,
                context=trace.set_span_in_context(trace.INVALID_SPAN),  # a root, whatever is current
                kind=SpanKind.INTERNAL,
                start_time=_ns(at),
                attributes=attributes,
                links=links,
            )
        finally:
            self._ids.next_trace_id = None

    def _confirmation(self, event: ConfirmationChanged) -> None:
        """The task starts waiting for an operator (its first pending confirmation): its root
        segment ends, so it is exported; the last one decided: a new segment continues it."""
        confirmation = event.confirmation
        task = self._tasks.get(confirmation.task_id)
        if task is None:
            return
        was_waiting = bool(task.pending)
        if confirmation.status == "pending":
            task.pending[confirmation.id] = confirmation.tool
        else:
            task.pending.pop(confirmation.id, None)
        if task.pending and not was_waiting:
            task.root.set_attribute("teamclaw.task.status", "waiting_user")
            task.root.set_attribute("teamclaw.task.waiting_for", tuple(sorted(set(task.pending.values()))))
            task.root.end(end_time=_ns(event.at))
        elif was_waiting and not task.pending:
            self._next_segment(confirmation.task_id, task, event.at)

    def _next_segment(self, task_id: str, task: _TaskTrace, at: float) -> None:
        """Continue ``task`` with a new root segment from ``at``, linked to the one that ended."""
        previous = task.root
        task.segment += 1
        attributes = {**task.attributes, "teamclaw.task.segment": task.segment}
        name = previous.name if isinstance(previous, ReadableSpan) else f"invoke_workflow {task.kind}"
        task.root = self._root_span(task_id, name, attributes, at, [Link(previous.get_span_context())])

    def _task_finished(self, event: TaskFinished) -> None:
        task = self._tasks.pop(event.task_id, None)
        if task is None:
            return
        if not task.root.is_recording():  # it ended while waiting: the end is a segment of its own
            self._next_segment(event.task_id, task, event.finished_at)
        end = _ns(event.finished_at)
        for span in task.open.values():  # calls the task's end cut short (a cancel, a failure)
            span.set_attribute("teamclaw.ended_with_task", True)
            _fail(span, event.error)
            span.end(end_time=end)
        root = task.root
        root.set_attribute("teamclaw.task.status", event.status)
        root.set_attribute("teamclaw.task.tokens_used", event.tokens_used)
        # Offline agents and servers without usage charge estimates: say when any are in the sum.
        root.set_attribute("teamclaw.task.tokens_estimated", event.tokens_used != task.reported_tokens)
        if event.status != "completed":
            _fail(root, event.error or {"code": event.status, "message": f"the task ended {event.status}"})
        root.end(end_time=end)
        for instance_id in [i for i, (t, _) in self._serving.items() if t == event.task_id]:
            del self._serving[instance_id]

    def _artifact(self, event: ArtifactWritten) -> None:
        """``outcome.json`` (seed 002) says whether the review is clean or has findings."""
        task = self._tasks.get(event.task_id)
        if task is None or event.name != "outcome.json" or not task.root.is_recording():
            return
        try:
            outcome = json.loads(event.content)
        except ValueError:
            return
        if isinstance(outcome, dict):
            task.root.set_attribute("teamclaw.outcome.verdict", verdict(outcome))

    def _instance(self, event: InstanceChanged) -> None:
        if event.instance.status == "terminated":
            self._serving.pop(event.instance.instance_id, None)

    # -- invokes and hooks --------------------------------------------------------------------
    def _parent(self, task_id: str, task: _TaskTrace, instance_id: str | None) -> Any:
        """The context a call made by ``instance_id`` (None: from outside any agent) starts in:
        the call that instance is serving in this task, else the task's root."""
        serving = self._serving.get(instance_id or "")
        if serving is not None and serving[0] == task_id:
            return trace.set_span_in_context(NonRecordingSpan(serving[1]))
        return trace.set_span_in_context(task.root)

    def _message_sent(self, event: MessageSent) -> None:
        message = event.message
        kind = message.type
        if kind not in _CALL_TYPES:
            return
        task_id = message.context.task_id
        task = self._tasks.get(task_id)
        correlation_id = message.context.correlation_id
        if task is None or correlation_id is None:
            return
        if kind in (MessageType.INVOKE_RESPONSE, MessageType.INVOKE_ERROR, MessageType.STATUS_UPDATE):
            span = task.open.pop(correlation_id, None)
            if span is not None:
                _fail(span, message.payload.get("error") if kind != MessageType.INVOKE_RESPONSE else None)
                span.end(end_time=_ns(event.at))
            return
        span = task.open.get(correlation_id)
        if span is not None:  # the same attempt sent again (moved off an instance held by an operator)
            span.set_attribute(AGENT_ID, message.recipient.instance_id or "")
            span.set_attribute("teamclaw.instance.id", message.recipient.instance_id or "")
            span.add_event("moved", {"teamclaw.instance.id": message.recipient.instance_id or ""}, _ns(event.at))
            return
        span = self._start_call(event, task_id, task)
        if event.status in (DeliveryStatus.DENIED, DeliveryStatus.DROPPED):
            refusal = message.payload.get("error") or {"code": event.reason, "message": event.reason}
            _fail(span, refusal)
            span.end(end_time=_ns(event.at))
        else:
            task.open[correlation_id] = span

    def _start_call(self, event: MessageSent, task_id: str, task: _TaskTrace) -> Span:
        message = event.message
        payload = message.payload
        target_role = message.recipient.role or ""
        capability_id = payload.get("capability_id") or ""
        instance_id = message.recipient.instance_id or ""
        attributes: dict[str, Any] = {
            OPERATION: "invoke_agent",
            AGENT_NAME: target_role,
            AGENT_ID: instance_id,
            "teamclaw.task.id": task_id,
            "teamclaw.capability_id": capability_id,
            "teamclaw.instance.id": instance_id,
            "teamclaw.caller.role": message.sender.role or "",
        }
        # Only what is not the usual case, to keep a span cheap (bench/tracing_bench.py).
        if event.project_id:
            attributes["teamclaw.project.id"] = event.project_id
        if message.sender.instance_id:  # absent for a call from outside any agent
            attributes["teamclaw.caller.instance_id"] = message.sender.instance_id
        if message.priority != Priority.NORMAL:
            attributes["teamclaw.message.priority"] = message.priority.label
        if message.type == MessageType.INVOKE_REQUEST:
            attributes["teamclaw.invoke.id"] = payload.get("invoke_id") or ""
            attributes["teamclaw.invoke.attempt"] = int(payload.get("attempt") or 1)
        else:
            attributes["teamclaw.message.type"] = "hook_event"
            attributes["teamclaw.hook.event_type"] = payload.get("event_type") or ""
        if message.sender.instance_id is None and not task.named:
            self._name_task(task, payload)
        return self._tracer.start_span(
            f"invoke_agent {target_role}".rstrip(),
            context=self._parent(task_id, task, message.sender.instance_id),
            kind=SpanKind.INTERNAL,
            start_time=_ns(event.at),
            attributes=attributes,
        )

    @staticmethod
    def _name_task(task: _TaskTrace, payload: Mapping[str, Any]) -> None:
        """Name the task's root after its first call from outside any agent: the workflow it
        runs (``params.workflow``) or that call's capability."""
        params = payload.get("params")
        workflow = params.get("workflow") if isinstance(params, dict) else None
        name = workflow if isinstance(workflow, str) and workflow else payload.get("capability_id")
        if not name:
            return
        task.named = True
        task.attributes["gen_ai.workflow.name"] = str(name)
        if task.root.is_recording():
            task.root.update_name(f"invoke_workflow {name}")
            task.root.set_attribute("gen_ai.workflow.name", str(name))

    def _message_status(self, event: MessageStatusChanged) -> None:
        message = event.message
        if message.type not in (MessageType.INVOKE_REQUEST, MessageType.HOOK_EVENT):
            return
        task = self._tasks.get(message.context.task_id)
        correlation_id = message.context.correlation_id
        if task is None or correlation_id is None:
            return
        span = task.open.get(correlation_id)
        if span is None:
            return
        at = _ns(event.at)
        if event.status == DeliveryStatus.DELIVERED:
            instance_id = message.recipient.instance_id or ""
            span.add_event("delivered", timestamp=at)
            span.set_attribute("teamclaw.queue_ms", max(0, int(event.at * 1000) - message.timestamp))
            self._serving[instance_id] = (message.context.task_id, span.get_span_context())
        elif event.status in (DeliveryStatus.EXPIRED, DeliveryStatus.DROPPED):
            reason = event.reason or ""
            if reason.startswith("moved to"):
                return  # sent again to another instance (``_message_sent``)
            del task.open[correlation_id]
            _fail(span, _undelivered(message, event.status, reason))
            span.end(end_time=at)

    # -- tools and model calls ---------------------------------------------------------------
    def _child_context(self, site: CallSite) -> Any:
        task = self._tasks.get(site.task_id)
        if task is None:
            return None
        span = task.open.get(site.correlation_id or "")
        return trace.set_span_in_context(span if span is not None else task.root)

    @staticmethod
    def _site_attributes(site: CallSite) -> dict[str, Any]:
        attributes = {
            AGENT_NAME: site.role,
            AGENT_ID: site.instance_id,
            "teamclaw.task.id": site.task_id,
            "teamclaw.capability_id": site.capability_id,
            "teamclaw.instance.id": site.instance_id,
            "teamclaw.context.id": site.context_id,
        }
        if site.project_id:
            attributes["teamclaw.project.id"] = site.project_id
        return attributes

    def _tool_used(self, event: ToolUsed) -> None:
        context = self._child_context(event.site)
        if context is None:
            return
        span = self._tracer.start_span(
            f"execute_tool {event.tool}",
            context=context,
            kind=SpanKind.INTERNAL,
            start_time=_ns(event.started_at),
            attributes={
                OPERATION: "execute_tool",
                "gen_ai.tool.name": event.tool,
                "teamclaw.tool.mode": event.mode,
                **self._site_attributes(event.site),
            },
        )
        _fail(span, event.error)
        span.end(end_time=_ns(event.at))

    def _model_called(self, event: ModelCalled) -> None:
        context = self._child_context(event.site)
        if context is None:
            return
        if event.error is None and not event.estimated:
            self._tasks[event.site.task_id].reported_tokens += event.input_tokens + event.output_tokens
        attributes: dict[str, Any] = {
            OPERATION: "chat",
            "gen_ai.provider.name": "openai",  # the chat-completions protocol, whichever server speaks it
            "gen_ai.request.model": event.model,
            "server.address": urlsplit(event.endpoint).hostname or "",
            "teamclaw.model.endpoint": event.endpoint,
            "teamclaw.model.round": event.round,
            **self._site_attributes(event.site),
        }
        port = _port_of(event.endpoint)
        if port:
            attributes["server.port"] = port
        if event.error is None:
            attributes.update(answer_attributes(event))
        if self.capture_content:
            attributes.update(content_attributes(event))
        span = self._tracer.start_span(
            f"chat {event.model}",
            context=context,
            kind=SpanKind.CLIENT,
            start_time=_ns(event.started_at),
            attributes=attributes,
        )
        _fail(span, event.error)
        span.end(end_time=_ns(event.at))


def answer_attributes(event: ModelCalled) -> dict[str, Any]:
    """What a chat span says of a model's answer: usage (reported, or an estimate under
    ``teamclaw.usage.estimated_*``, never shown as usage), finish reason, answer format, the
    functions asked for, and the response's model and id as the server sent them."""
    attributes: dict[str, Any] = {}
    if event.estimated:
        attributes["teamclaw.usage.estimated_input_tokens"] = event.input_tokens
        attributes["teamclaw.usage.estimated_output_tokens"] = event.output_tokens
    else:
        attributes["gen_ai.usage.input_tokens"] = event.input_tokens
        attributes["gen_ai.usage.output_tokens"] = event.output_tokens
    attributes["teamclaw.usage.estimated"] = event.estimated
    if event.finish_reason:
        attributes["gen_ai.response.finish_reasons"] = (event.finish_reason,)
    attributes["teamclaw.answer_format"] = event.answer_format
    if event.tool_calls:
        attributes["teamclaw.model.tool_calls"] = event.tool_calls
    if event.response_model:
        attributes["gen_ai.response.model"] = event.response_model
    if event.response_id:
        attributes["gen_ai.response.id"] = event.response_id
    return attributes


FINISH_REASONS = {"tool_calls": "tool_call", "function_call": "tool_call"}
"""Chat-completions finish reasons -> the GenAI conventions' names (others are the same)."""


def content_attributes(event: ModelCalled) -> dict[str, str]:
    """``gen_ai.input.messages`` / ``gen_ai.output.messages`` of a model call whose event
    carries its content (JSON text, module docstring); ``{}`` when it carries none."""
    attributes: dict[str, str] = {}
    if event.input_messages is not None:
        messages = [genai_message(m) for m in event.input_messages]
        attributes["gen_ai.input.messages"] = json.dumps(messages, ensure_ascii=False)
    if event.output_message is not None:
        reason = event.finish_reason or "stop"
        output = {**genai_message(event.output_message), "finish_reason": FINISH_REASONS.get(reason, reason)}
        attributes["gen_ai.output.messages"] = json.dumps([output], ensure_ascii=False)
    return attributes


def genai_message(message: Mapping[str, Any]) -> dict[str, Any]:
    """A chat-completions message (``{role, content, tool_calls?, tool_call_id?}``) as a GenAI
    conventions message ``{role, parts}``: its text a ``text`` part (a ``tool`` message's a
    ``tool_call_response``), each function call a ``tool_call`` part (arguments parsed when
    they are JSON)."""
    role = str(message.get("role") or "user")
    text = _content_text(message.get("content"))
    parts: list[dict[str, Any]] = []
    if role == "tool":
        parts.append({"type": "tool_call_response", "id": message.get("tool_call_id"), "response": text})
    elif text:
        parts.append({"type": "text", "content": text})
    for call in message.get("tool_calls") or []:
        function = call.get("function") if isinstance(call, Mapping) else None
        if not isinstance(function, Mapping):
            continue
        name, arguments = str(function.get("name") or ""), _arguments(function.get("arguments"))
        parts.append({"type": "tool_call", "id": call.get("id"), "name": name, "arguments": arguments})
    return {"role": role, "parts": parts}


def _content_text(content: Any) -> str:
    """A message's ``content`` as text (a list of ``{type: text, text}`` parts joined)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text") or "") for p in content if isinstance(p, Mapping))
    return ""


def _arguments(raw: Any) -> Any:
    """A function call's arguments: parsed when they are JSON text, else as they are."""
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except ValueError:
            return raw
    return raw


_CALL_TYPES = frozenset(
    {
        MessageType.INVOKE_REQUEST,
        MessageType.INVOKE_RESPONSE,
        MessageType.INVOKE_ERROR,
        MessageType.HOOK_EVENT,
        MessageType.STATUS_UPDATE,
    }
)


def _undelivered(message: AgentMessage, status: DeliveryStatus, reason: str) -> dict[str, str]:
    """The error a caller gets for a request that left a mailbox undelivered
    (``teamclaw.runtime.delivery.Delivery.undeliverable``)."""
    if status == DeliveryStatus.EXPIRED:
        return {"code": "timeout", "message": f"expired in the queue of {message.recipient.instance_id}: {reason}"}
    if reason.startswith("evicted"):
        return {"code": "queue_full", "message": reason}
    return {"code": "unavailable", "message": reason}


def _port_of(url: str) -> int | None:
    parts = urlsplit(url)
    try:
        return parts.port or {"http": 80, "https": 443}.get(parts.scheme)
    except ValueError:
        return None
