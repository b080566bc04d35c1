"""The recorder: the runtime's database sink (docs/architecture.md §4, §7).

``publish`` only appends the event to a queue, so the runtime never waits on the database.
A writer thread drains the queue in batches (up to ``BATCH_SIZE`` events or ``BATCH_WAIT_S``
seconds), coalesces them (a message queued then delivered in one batch is one row with its
final status; a context changed ten times is written once with its latest state) and writes
the batch in one transaction. After the commit it hands the batch to the live sink, so the
browser never sees something the database does not hold.

``BatchWriter`` is the database side alone (rows, transaction, retries, one-by-one
fallback); ``Recorder`` is it with the queue and the thread (``TEAMCLAW_RECORDER=thread``).
``monitoring.recorder_process`` runs the same writer in a child process.

Connections: the thread's writer keeps one connection across batches (a reconnect per batch cost more
than the inserts) and closes it after ``IDLE_CLOSE_S`` without an event. Held while idle, on
SQLite it kept open the file descriptors of every connection other threads of the process had
closed (issue 17, docs/architecture.md §3 "SQLite file handles").
"""

from __future__ import annotations

import json
import logging
import queue
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

import orjson
from django.db import close_old_connections, connection, transaction
from psycopg.types.json import Jsonb

from monitoring.fencing import fenced_out
from monitoring.file_write_preview import file_write_preview
from monitoring.models import (
    AgentInstance,
    Alert,
    Artifact,
    ExecutionContext,
    Message,
    RecorderCheckpoint,
    Snapshot,
    SnapshotMessage,
    Task,
    ToolConfirmation,
)
from teamclaw.runtime.articles import with_article
from teamclaw.runtime.events import (
    AlertRaised,
    ArtifactWritten,
    ConfirmationChanged,
    ConfirmationState,
    ContextChanged,
    ContextSnapshot,
    InstanceChanged,
    InstanceReport,
    MessageSent,
    MessageStatusChanged,
    RuntimeEvent,
    SnapshotTaken,
    TaskFinished,
    TaskProgress,
    TaskStarted,
)
from teamclaw.runtime.messages import AgentMessage, Priority

log = logging.getLogger(__name__)

BATCH_SIZE = 2000
BATCH_WAIT_S = 0.05
IDLE_CLOSE_S = 1.0
"""Seconds without an event after which the writer closes its connection until the next one."""

BatchListener = Callable[[list[RuntimeEvent]], None]


class RecorderSink(Protocol):
    """What a runtime host uses of its recorder: ``Recorder`` (a thread of the runtime's
    process) or ``monitoring.recorder_process.RecorderProcess`` (a child process)."""

    written_events: int
    failed_batches: int
    lost_events: int

    def publish(self, event: RuntimeEvent) -> None: ...

    def add_listener(self, listener: BatchListener) -> None: ...

    def start(self) -> None: ...

    def stop(self, timeout: float = 10) -> None: ...

    def flush(self, timeout: float = 30) -> bool: ...

    def fence(self, task_id: str, attempt: int | None) -> None:
        """Write task ``task_id``'s rows only while its recorded ``attempt`` is this one
        (``monitoring.fencing``); None lifts the fence (the task ended here)."""

    def on_stale(self, callback: StaleCallback) -> None:
        """Call ``callback(task_ids)`` (from the recorder's threads) when a batch left out the
        rows of fenced tasks another worker took over."""


StaleCallback = Callable[[list[str]], None]


def _dt(seconds: float) -> datetime:
    """Clock seconds -> aware UTC datetime."""
    return datetime.fromtimestamp(seconds, tz=UTC)


class _Flush:
    """A marker put on the queue; set once every event before it is written."""

    def __init__(self) -> None:
        self.done = threading.Event()


MESSAGE_COLUMNS = (
    "id",
    "seq",
    "type",
    "from_role",
    "from_instance",
    "to_role",
    "to_instance",
    "capability_id",
    "task_id",
    "conversation_id",
    "correlation_id",
    "project_id",
    "payload",
    "priority",
    "ttl_ms",
    "timestamp_ms",
    "event_seq",
    "status",
    "reason",
)
EVENT_SEQ = MESSAGE_COLUMNS.index("event_seq")
STATUS = MESSAGE_COLUMNS.index("status")
REASON = MESSAGE_COLUMNS.index("reason")
PRIORITY_LABELS = {priority: priority.label for priority in Priority}
MESSAGE_ROWS_PER_STATEMENT = 50
"""Rows of one multi-row INSERT (19 parameters each: within SQLite's limit of 999)."""
LARGE_PAYLOAD_CHARS = 64 * 1024
"""A message whose payload JSON is longer than this is inserted alone (PostgreSQL's driver
builds each statement as one string holding every payload in it)."""


def snapshot_fields(snapshot: ContextSnapshot) -> tuple[Any, ...]:
    """What ``BatchRows.take_snapshot`` takes after the event's seq, in its order: ``(id,
    context_id, type, trigger, label, sequence, state, created_at, messages_stream,
    messages_end)``; the recorder process sends the same tuple over its socket pair
    (``recorder_process.wire_frame``)."""
    return (
        snapshot.id,
        snapshot.context_id,
        snapshot.type,
        snapshot.trigger,
        snapshot.label,
        snapshot.sequence,
        snapshot.state,
        snapshot.created_at,
        snapshot.messages_stream,
        snapshot.messages_end,
    )


SNAPSHOT_COLUMNS = ("id", "context_id", "type", "trigger", "label", "sequence", "state", "created_at", "event_seq")
"""A Snapshot row of ``BatchRows.snapshots``, in this order (``state`` as stored)."""
SNAPSHOT_CONTEXT = SNAPSHOT_COLUMNS.index("context_id")
SNAPSHOT_MESSAGE_COLUMNS = ("context_id", "stream", "position", "ref")
"""A SnapshotMessage row of ``BatchRows.snapshot_messages``, in this order."""


STREAMS_KEPT = 10_000
"""Message streams whose stored positions a writer (or the recorder process's link thread)
remembers; a stream forgotten sends its references again, which the database skips."""


def remember(streams: dict[str, int], stream: str, position: int) -> None:
    """``streams[stream] = position``, the stream now the newest, the oldest forgotten past
    ``STREAMS_KEPT``."""
    streams.pop(stream, None)
    streams[stream] = position
    if len(streams) > STREAMS_KEPT:
        del streams[next(iter(streams))]


def stored_state(state: Mapping[str, Any], stream: str, end: int, written: int) -> tuple[Mapping[str, Any], int]:
    """A snapshot's ``state`` as ``Snapshot.stored_state`` holds it: its message references
    (positions ``end - len(messages)`` to ``end`` of ``stream``) replaced by their range, and
    the first position not stored yet among them (``written``: the stream's positions below it
    are stored). ``state`` itself is not changed (other sinks hold it). As it is, with
    ``end``, when there is no stream."""
    inputs = state.get("input_context")
    if not isinstance(inputs, dict):
        return state, end
    refs = inputs.get("messages")
    if not stream or not isinstance(refs, list) or end < len(refs):
        return state, end
    start = end - len(refs)
    span = {"stream": stream, "from": start, "to": end}
    return {**state, "input_context": {**inputs, "messages": span}}, max(start, written)


def message_row(message: AgentMessage, status: str, reason: str | None, project_id: str | None) -> list[Any]:
    """The Message table row (MESSAGE_COLUMNS order) for an AgentMessage in ``status``.

    Rows are written with one executemany per batch: at thousands of messages a second the
    model layer's per-object work would cost the runtime more than the database does.
    """
    payload = message.payload
    sender, recipient, context = message.sender, message.recipient, message.context
    return [
        message.id,
        message.seq,
        message.type.value,
        sender.role or "",
        sender.instance_id or "",
        recipient.role or "",
        recipient.instance_id or "",
        str(payload.get("capability_id") or payload.get("event_type") or "")[:300],
        context.task_id,
        context.conversation_id,
        context.correlation_id or "",
        project_id,
        payload,
        PRIORITY_LABELS[message.priority],
        message.ttl,
        message.timestamp,
        None,  # event_seq: set by the writer from the event that carried it
        status,
        (reason or "")[:300],
    ]


def payload_json(value: Any) -> str:
    """``value`` (a message payload) as JSON text.

    orjson does it several times faster than ``json``, which matters on the recorder's thread
    (it shares the GIL with the runtime). What orjson refuses (integers beyond 64 bits, keys
    that are not strings) goes through ``json`` as before, so keys are spelled as ``json``
    spells them. NaN and +-Infinity, which JSON cannot hold, are stored as null. Raises
    TypeError or ValueError for a value neither can encode (the recorder then stores the
    other events of the batch and raises an alert for this one).
    """
    try:
        return orjson.dumps(value).decode()
    except orjson.JSONEncodeError:
        return json.dumps(value)


def _as_is(text: str) -> str:
    return text


def payload_param(vendor: str) -> Callable[[str], Any]:
    """The function turning payload JSON text (``payload_json``) into a query parameter for
    ``vendor``'s JSONField column: the text itself, or wrapped as ``Jsonb`` for PostgreSQL."""
    if vendor == "postgresql":
        return lambda text: Jsonb(text, dumps=_as_is)
    return _as_is


@dataclass
class BatchRows:
    """A batch of events coalesced into the rows it writes: a message queued then delivered
    is one row with its final status, a context changed ten times is written once."""

    tasks: dict[str, dict[str, Any]] = field(default_factory=dict)
    instances: dict[str, InstanceReport] = field(default_factory=dict)
    contexts: dict[str, Any] = field(default_factory=dict)
    """Context id -> the live ``ExecutionContext`` (its state read when written) or its state."""
    snapshots: list[list[Any]] = field(default_factory=list)
    """Snapshot rows (``SNAPSHOT_COLUMNS``)."""
    snapshot_messages: list[tuple[str, str, int, Any]] = field(default_factory=list)
    """SnapshotMessage rows (``SNAPSHOT_MESSAGE_COLUMNS``) the batch's snapshots hold first."""
    refs_written: Mapping[str, int] = field(default_factory=dict)
    """Message stream -> positions below it stored by earlier batches (the writer's)."""
    refs_high: dict[str, int] = field(default_factory=dict)
    """Message stream -> positions below it stored once this batch is."""
    new_messages: dict[str, list[Any]] = field(default_factory=dict)
    status_updates: dict[str, tuple[str, str]] = field(default_factory=dict)
    artifacts: dict[tuple[str, str], Artifact] = field(default_factory=dict)
    confirmations: dict[str, ConfirmationState] = field(default_factory=dict)
    alerts: list[Alert] = field(default_factory=list)

    def take(self, event: RuntimeEvent) -> None:
        """Fold ``event`` into the rows."""
        match event:
            case MessageSent(message=message, status=status, reason=reason, project_id=project_id):
                self.take_message(event.seq, message_row(message, str(status), reason, project_id))
            case MessageStatusChanged(message=message, status=status, reason=reason):
                self.take_status(message.id, str(status), reason)
            case ContextChanged(context=context):
                self.contexts[context.id] = context
            case SnapshotTaken(snapshot=snap):
                self.take_snapshot(event.seq, *snapshot_fields(snap))
            case TaskStarted() | TaskProgress() | TaskFinished():
                self.tasks.setdefault(event.task_id, {}).update(event.as_dict())
            case InstanceChanged(instance=instance):
                self.instances[instance.instance_id] = instance
            case ArtifactWritten():
                self.artifacts[(event.task_id, event.name)] = Artifact(
                    task_id=event.task_id,
                    name=event.name,
                    content=event.content,
                    content_type=event.content_type,
                    role=event.role,
                    context_id=event.context_id or "",
                    created_at=_dt(event.at),
                )
            case ConfirmationChanged(confirmation=confirmation):
                self.confirmations[confirmation.id] = confirmation
            case AlertRaised():
                self.alerts.append(
                    Alert(
                        kind=event.alert_kind[:32],
                        severity=event.severity[:10],
                        message=event.message,
                        details=dict(event.details),
                        created_at=_dt(event.at),
                    )
                )

    def take_message(self, event_seq: int, row: list[Any]) -> None:
        """A sent message as its Message row (``message_row``), from the event ``event_seq``."""
        row[EVENT_SEQ] = event_seq
        self.new_messages[row[0]] = row

    def take_status(self, message_id: str, status: str, reason: str | None) -> None:
        """A queued message's later status: its row of this batch, or an UPDATE of an earlier one."""
        row = self.new_messages.get(message_id)
        if row is not None:
            row[STATUS] = status
            row[REASON] = (reason or "")[:300]
        else:
            self.status_updates[message_id] = (status, (reason or "")[:300])

    def take_context_state(self, state: dict[str, Any]) -> None:
        """A context's state as ``ExecutionContext.state()`` gave it (the latest wins)."""
        self.contexts[state["id"]] = state

    def take_snapshot(
        self,
        event_seq: int,
        snapshot_id: str,
        context_id: str,
        snapshot_type: str,
        trigger: str,
        label: str,
        sequence: int,
        state: Mapping[str, Any],
        created_at: float,
        messages_stream: str = "",
        messages_end: int = 0,
    ) -> None:
        """A context snapshot (``ContextSnapshot``'s fields; ``created_at`` clock seconds).
        Its message references go to ``snapshot_messages``, each once per stream and
        position (``stored_state``)."""
        written = max(self.refs_written.get(messages_stream, 0), self.refs_high.get(messages_stream, 0))
        stored, first_new = stored_state(state, messages_stream, messages_end, written)
        refs: list[Any] = []
        if stored is not state:
            held = state["input_context"]["messages"]
            refs = held[len(held) - (messages_end - first_new) :]
        self.take_stored_snapshot(
            event_seq,
            snapshot_id,
            context_id,
            snapshot_type,
            trigger,
            label,
            sequence,
            stored,
            created_at,
            messages_stream if stored is not state else "",
            first_new,
            refs,
        )

    def take_stored_snapshot(
        self,
        event_seq: int,
        snapshot_id: str,
        context_id: str,
        snapshot_type: str,
        trigger: str,
        label: str,
        sequence: int,
        stored: Mapping[str, Any],
        created_at: float,
        messages_stream: str,
        first_new: int,
        new_refs: list[Any],
    ) -> None:
        """A snapshot whose state is as stored already (``stored_state``), with the message
        references of ``messages_stream`` from position ``first_new`` on that it adds."""
        if messages_stream:
            self.snapshot_messages += [
                (context_id, messages_stream, first_new + offset, ref) for offset, ref in enumerate(new_refs)
            ]
            end = first_new + len(new_refs)
            if end > self.refs_high.get(messages_stream, 0):
                self.refs_high[messages_stream] = end
        self.snapshots.append(
            [
                snapshot_id,
                context_id,
                snapshot_type,
                trigger[:200],
                (label or "")[:300],
                sequence,
                stored,
                _dt(created_at),
                event_seq,
            ]
        )


class BatchWriter:
    """Writes batches of events to the database (the recorder's database side; module doc).

    Used by the ``Recorder``'s thread, and by the recorder process
    (``monitoring.recorder_process``), which folds the events' wire form instead: subclasses
    change ``fold`` and ``describe``. ``checkpoint`` (``(stream, batch)``), when set, is
    written in the same transaction as the batch (``RecorderCheckpoint``).
    """

    def __init__(self) -> None:
        self.written_events = 0
        self.failed_batches = 0
        self.lost_events = 0
        """Events that could not be stored even alone (each one is also an Alert row)."""
        self.checkpoint: tuple[str, int] | None = None
        self.fences: dict[str, int] = {}
        """Task id -> the attempt this process runs it as (``monitoring.fencing``)."""
        self.stale: set[str] = set()
        """Tasks whose rows a batch left out since the last ``take_stale``: taken over elsewhere."""
        self.refs_written: dict[str, int] = {}
        """Message stream -> positions below it stored (``BatchRows.refs_written``)."""

    def take_stale(self) -> list[str]:
        """The tasks found taken over since the last call (``stale``), emptied."""
        stale, self.stale = sorted(self.stale), set()
        return stale

    def fold(self, rows: BatchRows, item: Any) -> None:
        """Fold one item of a batch (here a RuntimeEvent) into ``rows``."""
        rows.take(item)

    def describe(self, item: Any) -> tuple[str, float, int]:
        """``(kind, at, seq)`` of one item of a batch, for the alert when it cannot be stored."""
        return str(item.kind), item.at, item.seq

    def write_with_retry(self, batch: list[Any]) -> list[Any]:
        """Write the batch; on repeated failure write item by item so one bad event costs only
        itself, and record each event that still cannot be stored as an Alert (never silently).
        Returns the items that were stored."""
        written = batch
        for attempt in range(2):
            try:
                if attempt:
                    # The writer keeps one connection across batches (a reconnect per batch
                    # cost more than the inserts); after a failure it starts on a fresh one.
                    connection.close()
                self.write(batch)
                self.written_events += len(batch)
                break
            except Exception:
                log.exception("recorder batch of %d events failed (attempt %d)", len(batch), attempt + 1)
                self.failed_batches += 1
                time.sleep(0.2 * (attempt + 1))
        else:
            checkpoint, self.checkpoint = self.checkpoint, None
            try:
                written = self._write_one_by_one(batch)
            finally:
                self.checkpoint = checkpoint
            if checkpoint is not None:
                try:
                    with transaction.atomic():
                        self.write_checkpoint()
                except Exception:
                    log.exception("recorder could not store its checkpoint")
        return written

    def _write_one_by_one(self, batch: list[Any]) -> list[Any]:
        written = []
        for item in batch:
            try:
                close_old_connections()
                self.write([item])
                written.append(item)
                self.written_events += 1
            except Exception as exc:
                self.lost_events += 1
                kind, at, seq = self.describe(item)
                what = f"{with_article(kind)} event"
                log.exception("recorder could not store %s", what)
                try:
                    Alert.objects.create(
                        kind="recorder",
                        severity="critical",
                        created_at=_dt(at),
                        message=f"{what} could not be recorded: {type(exc).__name__}: {exc}"[:2000],
                        details={"event_kind": kind, "seq": seq},
                    )
                except Exception:
                    log.exception("recorder could not store the alert either")
        return written

    def write_checkpoint(self) -> None:
        """Store ``checkpoint`` (inside the caller's transaction); nothing when it is None."""
        if self.checkpoint is None:
            return
        stream, batch = self.checkpoint
        RecorderCheckpoint.objects.bulk_create(
            [RecorderCheckpoint(stream=stream, batch=batch, updated_at=_dt(time.time()))],
            update_conflicts=True,
            unique_fields=["stream"],
            update_fields=["batch", "updated_at"],
        )

    # -- writing ----------------------------------------------------------------------
    def write(self, batch: list[Any]) -> None:
        """Write one batch of events in a single transaction (coalesced, see module doc)."""
        rows = BatchRows(refs_written=self.refs_written)
        for item in batch:
            self.fold(rows, item)
        with transaction.atomic():
            # The fence first: rows of a task another worker took over are never written.
            self.stale |= fenced_out(rows, dict(self.fences))
            self._write_tasks(rows.tasks)
            self._write_instances(rows.instances)
            self._write_contexts(rows.contexts)
            if rows.snapshot_messages:
                _insert_rows(SnapshotMessage, SNAPSHOT_MESSAGE_COLUMNS, rows.snapshot_messages, ("stream", "position"))
            if rows.snapshots:
                _insert_rows(Snapshot, SNAPSHOT_COLUMNS, rows.snapshots, ("id",))
            if rows.new_messages:
                self._insert_messages(list(rows.new_messages.values()))
            if rows.status_updates:
                with connection.cursor() as cursor:
                    cursor.executemany(
                        f"UPDATE {Message._meta.db_table} SET status = %s, reason = %s WHERE id = %s",
                        [(status, reason, message_id) for message_id, (status, reason) in rows.status_updates.items()],
                    )
            if rows.artifacts:
                Artifact.objects.bulk_create(
                    rows.artifacts.values(),
                    update_conflicts=True,
                    unique_fields=["task", "name"],
                    update_fields=["content", "content_type", "role", "context_id", "created_at"],
                )
            self._write_confirmations(rows.confirmations)
            if rows.alerts:
                Alert.objects.bulk_create(rows.alerts)
            self.write_checkpoint()
        for stream, position in rows.refs_high.items():
            remember(self.refs_written, stream, max(position, self.refs_written.get(stream, 0)))

    @staticmethod
    def _insert_messages(rows: list[list[Any]]) -> None:
        """Insert ``rows`` (MESSAGE_COLUMNS order), ``MESSAGE_ROWS_PER_STATEMENT`` rows per
        INSERT statement. Each statement step hands the GIL to the runtime's thread and back;
        fifty rows a step instead of one took about a tenth off the writer's time per batch
        (bench/runtime_bench.py), which is what decides whether it keeps up with the runtime."""
        ops = connection.ops  # resolve the thread-local proxy once, not once per row
        param = payload_param(connection.vendor)
        payload_index = MESSAGE_COLUMNS.index("payload")
        small: list[list[Any]] = []
        large: list[list[Any]] = []
        for row in rows:
            text = payload_json(row[payload_index])
            row[payload_index] = param(text)
            (large if len(text) > LARGE_PAYLOAD_CHARS else small).append(row)
        quote = ops.quote_name
        columns = ", ".join(quote(c) for c in MESSAGE_COLUMNS)
        row_marks = "(" + ", ".join(["%s"] * len(MESSAGE_COLUMNS)) + ")"

        def sql(count: int) -> str:
            values = ", ".join([row_marks] * count)
            return (
                f"INSERT INTO {quote(Message._meta.db_table)} ({columns}) VALUES {values} "
                f"ON CONFLICT ({quote('id')}) DO NOTHING"
            )

        per = MESSAGE_ROWS_PER_STATEMENT
        full = len(small) - len(small) % per
        with connection.cursor() as cursor:
            if full:
                groups = [
                    [value for row in small[start : start + per] for value in row] for start in range(0, full, per)
                ]
                cursor.executemany(sql(per), groups)
            if full < len(small):
                cursor.execute(sql(len(small) - full), [value for row in small[full:] for value in row])
            if large:  # one row per statement: fifty large payloads in one query string would be huge
                cursor.executemany(sql(1), large)

    @staticmethod
    def _write_tasks(tasks: dict[str, dict[str, Any]]) -> None:
        for task_id, info in tasks.items():
            fields: dict[str, Any] = {"status": info["status"]} if "status" in info else {}
            for key in ("config_version", "token_budget", "tokens_used"):
                if key in info and info[key] is not None:
                    fields[key] = info[key]
            if "error" in info:
                fields["error"] = info["error"]
            if info.get("finished_at"):
                fields["finished_at"] = _dt(info["finished_at"])
            updated = Task.objects.filter(pk=task_id).update(**fields)
            if not updated and "status" in info:  # a TaskProgress alone never makes a row
                Task.objects.create(
                    id=task_id,
                    kind=info.get("kind", "task"),
                    title=(info.get("description") or "")[:300],
                    description=info.get("description") or "",
                    project_id=info.get("project_id"),
                    **fields,
                )

    @staticmethod
    def _write_instances(instances: dict[str, InstanceReport]) -> None:
        if not instances:
            return
        rows = [
            AgentInstance(
                instance_id=info.instance_id,
                role=info.role,
                status=info.status,
                healthy=info.healthy,
                queued=info.queued,
                processed=info.processed,
                created_at=_dt(info.created_at),
                last_heartbeat=_dt(info.last_heartbeat),
            )
            for info in instances.values()
        ]
        AgentInstance.objects.bulk_create(
            rows,
            update_conflicts=True,
            unique_fields=["instance_id"],
            update_fields=["status", "healthy", "queued", "processed", "last_heartbeat"],
        )

    @staticmethod
    def _write_contexts(contexts: dict[str, Any]) -> None:
        if not contexts:
            return
        rows = []
        for context in contexts.values():
            state = context if isinstance(context, dict) else context.state()
            usage = state["resource_usage"]
            rows.append(
                ExecutionContext(
                    id=state["id"],
                    task_id=state["task_id"],
                    instance_id=state["instance_id"],
                    role=state["role"],
                    project_id=state["project_id"],
                    status=state["status"],
                    progress=state["progress"],
                    current_step=state["current_step"][:200],
                    task_description=state["task_description"],
                    conversation_id=state["conversation_id"],
                    config_version=state["config_version"],
                    input_context=state["input_context"],
                    output_state=state["output_state"],
                    resource_usage=usage,
                    memory=state["memory"],
                    knowledge=state["knowledge"],
                    input_tokens=usage["input_tokens"],
                    output_tokens=usage["output_tokens"],
                    total_tokens=usage["total_tokens"],
                    api_calls=usage["api_calls"],
                    tokens_estimated=usage["estimated"],
                    created_at=_dt(state["created_at"]),
                    updated_at=_dt(state["updated_at"] or state["created_at"]),
                )
            )
        ExecutionContext.objects.bulk_create(
            rows,
            update_conflicts=True,
            unique_fields=["id"],
            update_fields=[
                "status",
                "progress",
                "current_step",
                "input_context",
                "output_state",
                "resource_usage",
                "memory",
                "knowledge",
                "input_tokens",
                "output_tokens",
                "total_tokens",
                "api_calls",
                "tokens_estimated",
                "updated_at",
            ],
        )

    @staticmethod
    def _write_confirmations(confirmations: dict[str, ConfirmationState]) -> None:
        for info in confirmations.values():
            recorded = ToolConfirmation.objects.filter(pk=info.id).values_list("status", flat=True).first()
            if recorded in ("approved", "rejected", "answered") and info.status != recorded:
                # An operator's decision on the record stands (runs.confirmations): a pending
                # re-announcement is applied on the owner's next poll; an expiry that raced it
                # (a cancel, a timeout) does not erase who decided what.
                continue
            fields = {
                "context_id": info.context_id,
                "instance_id": info.instance_id,
                "role": info.role,
                "task_id": info.task_id,
                "project_id": info.project_id,
                "kind": info.kind,
                "tool": info.tool,
                "args": dict(info.args),
                "status": info.status,
                "decided_by": info.decided_by or "",
                "created_at": _dt(info.created_at),
                "expires_at": _dt(info.expires_at),
                "decided_at": _dt(time.time()) if info.status != "pending" else None,
            }
            answer = {"answer": dict(info.answer) if info.answer is not None else None}
            if recorded is None and info.kind == "tool" and info.tool == "file_write" and info.status == "pending":
                # what the write would do, as the operator is asked (the card keeps it after the write)
                answer["preview"] = file_write_preview(info.role, info.project_id, dict(info.args))
            # A pending input re-announced by a resumed task keeps the part of the answer an
            # operator already gave (runs.operator_inputs).
            ToolConfirmation.objects.update_or_create(
                id=info.id,
                defaults=fields if info.status == "pending" else {**fields, **answer},
                create_defaults={**fields, **answer},
            )


def _insert_rows(model: Any, columns: tuple[str, ...], rows: list[Any], unique: tuple[str, ...]) -> None:
    """INSERT ``rows`` (tuples in ``columns`` order, the JSON column as data and datetimes as
    they are) into ``model``'s table, skipping those whose ``unique`` columns are there already,
    ``MESSAGE_ROWS_PER_STATEMENT`` rows a statement. The model layer's per-field work
    (``bulk_create``, the stdlib JSON encoder) cost the recorder more than the database did."""
    if not rows:
        return
    ops = connection.ops
    param = payload_param(connection.vendor)
    json_at = next(i for i, name in enumerate(columns) if name in ("state", "ref"))
    date_at = columns.index("created_at") if "created_at" in columns else -1
    values: list[list[Any]] = []
    for row in rows:
        row = list(row)
        row[json_at] = param(payload_json(row[json_at]))
        if date_at >= 0:
            row[date_at] = ops.adapt_datetimefield_value(row[date_at])
        values.append(row)
    quote = ops.quote_name
    names = ", ".join(quote(c) for c in columns)
    marks = "(" + ", ".join(["%s"] * len(columns)) + ")"
    conflict = ", ".join(quote(c) for c in unique)
    per = MESSAGE_ROWS_PER_STATEMENT
    with connection.cursor() as cursor:
        for start in range(0, len(values), per):
            chunk = values[start : start + per]
            cursor.execute(
                f"INSERT INTO {quote(model._meta.db_table)} ({names}) VALUES {', '.join([marks] * len(chunk))} "
                f"ON CONFLICT ({conflict}) DO NOTHING",
                [value for row in chunk for value in row],
            )


def tell_stale(callbacks: list[StaleCallback], task_ids: list[str]) -> None:
    """Tell ``callbacks`` that ``task_ids`` were fenced out (``RecorderSink.on_stale``)."""
    log.warning("task(s) %s were taken over by another worker: their rows were not recorded", ", ".join(task_ids))
    for callback in callbacks:
        try:
            callback(task_ids)
        except Exception:
            log.exception("recorder stale-task callback failed")


class Recorder(BatchWriter):
    """Event sink that writes batches to the database from its own thread (``TEAMCLAW_RECORDER=thread``;
    ``monitoring.recorder_process.RecorderProcess`` is the same sink with the writing in a child process)."""

    def __init__(self, *, batch_size: int = BATCH_SIZE, batch_wait_s: float = BATCH_WAIT_S) -> None:
        super().__init__()
        self._queue: queue.SimpleQueue[RuntimeEvent | _Flush | None] = queue.SimpleQueue()
        self.batch_size = batch_size
        self.batch_wait_s = batch_wait_s
        self._listeners: list[BatchListener] = []
        self._thread: threading.Thread | None = None
        self._on_stale: list[StaleCallback] = []

    # -- sink -------------------------------------------------------------------------
    def publish(self, event: RuntimeEvent) -> None:
        self._queue.put(event)

    def fence(self, task_id: str, attempt: int | None) -> None:
        """(``RecorderSink.fence``)"""
        fences = dict(self.fences)  # a new dict: the writer thread reads the old one whole
        if attempt is None:
            fences.pop(task_id, None)
        else:
            fences[task_id] = attempt
        self.fences = fences

    def on_stale(self, callback: StaleCallback) -> None:
        """(``RecorderSink.on_stale``)"""
        self._on_stale.append(callback)

    def add_listener(self, listener: BatchListener) -> None:
        """Call ``listener(events)`` after each committed batch (the live sink)."""
        self._listeners.append(listener)

    # -- thread -----------------------------------------------------------------------
    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="teamclaw-recorder", daemon=True)
            self._thread.start()

    def stop(self, timeout: float = 10) -> None:
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join(timeout)
            self._thread = None

    def flush(self, timeout: float = 30) -> bool:
        """Block until everything published before this call is committed; False on timeout."""
        if self._thread is None:
            return True
        marker = _Flush()
        self._queue.put(marker)
        return marker.done.wait(timeout)

    def _run(self) -> None:
        while True:
            try:
                first = self._queue.get(timeout=IDLE_CLOSE_S)
            except queue.Empty:
                # Idle: hold no connection while waiting (module docstring, "Connections").
                connection.close()
                first = self._queue.get()
            if first is None:
                break
            batch: list[RuntimeEvent] = []
            markers: list[_Flush] = []
            stop = False
            deadline = time.monotonic() + self.batch_wait_s
            item: RuntimeEvent | _Flush | None = first
            while True:
                if item is None:
                    stop = True
                    break
                if isinstance(item, _Flush):
                    markers.append(item)
                    break  # write now: someone is waiting
                batch.append(item)
                if len(batch) >= self.batch_size:
                    break
                remaining = deadline - time.monotonic()
                try:
                    item = self._queue.get(timeout=remaining) if remaining > 0 else self._queue.get_nowait()
                except queue.Empty:
                    break
            if batch:
                written = self.write_with_retry(batch)
                if self.stale:
                    tell_stale(self._on_stale, self.take_stale())
                for listener in self._listeners:
                    try:
                        listener(written)
                    except Exception:
                        log.exception("recorder listener failed")
            for marker in markers:
                marker.done.set()
            if stop:
                break
        close_old_connections()
        connection.close()
