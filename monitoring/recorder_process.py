"""The recorder process: the runtime's database sink with the writing in a child process
(``TEAMCLAW_RECORDER=process``; docs/architecture.md §3, §4).

The thread recorder (``monitoring.recorder.Recorder``) writes from a thread of the runtime's
process, which competes with the agents for the GIL. ``RecorderProcess`` is the same sink
(``publish``, ``flush``, ``stop``, ``add_listener``, the counters) with the database work in
a child process:

- ``publish`` appends the event to a deque: no lock, and a wake-up only for the first event
  after the link thread went to sleep.
- The link thread of the runtime's process takes what was published every ``batch_wait_s``
  (at once when someone flushes), turns it into its wire form (``wire_frame``: plain tuples;
  a message is its Message row, a context its state once for all of them, other recorded
  events as they are), pickles it in frames of up to ``FRAME_EVENTS`` entries, numbers the
  frames and sends them over a socket pair. That is all the recording the runtime's process does.
- The child (``manage.py record_events``, Django set up with the parent's database
  settings; ``serve``) reads the frames in order, writes the frames waiting (up to
  ``batch_size`` events) as one batch with ``WireWriter``: the rows, coalescing and
  one-by-one fallback of the thread recorder, plus the last frame number in
  ``RecorderCheckpoint`` in the same transaction; then it acknowledges them.
- The ack thread of the runtime's process hands each acknowledged frame's events to the
  listeners (the live sink, which stays in the runtime's process), so a browser still sees
  only what the database holds, and then releases the ``flush`` callers waiting for it.

Crashes: when the child's socket ends without a stop, the ack thread logs an error, starts
a new child, sends it every frame not acknowledged (in order) and records an alert (kind
``recorder``) saying so. The new child skips the frames up to the checkpoint, which its
predecessor committed without acknowledging them, so nothing is lost and nothing is written
twice (apart from alerts of a batch whose one-by-one fallback the crash cut short). A child
that dies more than ``MAX_RESTARTS`` times in a row without acknowledging anything is not
started again: the recorder logs critically, says why in ``failure`` and in a critical alert,
and writes on a thread of the runtime's process from then on (``serve`` on a socket pair, the
thread recorder's GIL cost back, nothing lost). Should that thread end too, it logs so and
``flush`` returns False from then on.
"""

from __future__ import annotations

import logging
import os
import pickle
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections import deque
from datetime import UTC, datetime, timedelta
from multiprocessing.connection import Connection
from typing import Any

from django.conf import settings
from django.db import close_old_connections, connection
from django.utils.module_loading import import_string

from monitoring.models import RecorderCheckpoint
from monitoring.recorder import (
    BATCH_SIZE,
    BATCH_WAIT_S,
    BatchListener,
    BatchRows,
    BatchWriter,
    Recorder,
    RecorderSink,
    StaleCallback,
    message_row,
    remember,
    snapshot_fields,
    stored_state,
    tell_stale,
)
from teamclaw.runtime.articles import with_article
from teamclaw.runtime.events import (
    AlertRaised,
    ArtifactWritten,
    ConfirmationChanged,
    ContextChanged,
    InstanceChanged,
    MessageSent,
    MessageStatusChanged,
    RuntimeEvent,
    SnapshotTaken,
    TaskFinished,
    TaskProgress,
    TaskStarted,
)

log = logging.getLogger(__name__)

FRAME_EVENTS = 500
"""Most wire entries per frame: the link thread gives the GIL back between frames (it sends)."""
FRAMES_PER_SEND = 8
"""Most frames' worth of events encoded together (a context's state once for all of them)."""
MAX_RESTARTS = 3
"""Child deaths in a row without an acknowledgement before the recorder gives up."""
CHECKPOINT_KEEP = timedelta(days=7)
"""Checkpoints of runtime processes that never stopped cleanly are removed after this."""
WRITER = "monitoring.recorder_process.WireWriter"
"""The child's BatchWriter class (dotted path; tests give their own)."""

# Wire entries are tuples ``(tag, seq, at, ...)`` of plain values (pickled in C, no
# per-object Python reduce).
WIRE_MESSAGE = 0  # (0, seq, at, Message row)
WIRE_STATUS = 1  # (1, seq, at, message id, status, reason)
WIRE_CONTEXT = 2  # (2, seq of the frame's last ContextChanged of it, at, ExecutionContext.state())
WIRE_SNAPSHOT = 3  # (3, seq, at, id, context_id, type, trigger, label, sequence, state, created_at)
WIRE_EVENT = 4  # (4, seq, at, the event itself)
WIRE_STORED_SNAPSHOT = 5  # (5, seq, at, id, context_id, type, trigger, label, sequence, stored state,
#                             created_at, messages stream, first new position, new references)
WIRE_KINDS = {
    WIRE_MESSAGE: "message",
    WIRE_STATUS: "message_status",
    WIRE_CONTEXT: "context",
    WIRE_SNAPSHOT: "snapshot",
    WIRE_STORED_SNAPSHOT: "snapshot",
}
RECORDED_AS_IS = (
    TaskStarted,
    TaskProgress,
    TaskFinished,
    InstanceChanged,
    ArtifactWritten,
    ConfirmationChanged,
    AlertRaised,
)
"""Event classes the recorder stores that travel pickled as they are (few of them)."""

FRAME = "frame"
FENCE = "fence"
STOP = "stop"
READY = "ready"
START_TIMEOUT_S = 60
"""How long ``start`` waits for the first child to be ready before going on without waiting."""


def wire_frame(events: list[RuntimeEvent], refs_sent: dict[str, int] | None = None) -> list[tuple[Any, ...]]:
    """``events`` as wire entries (module doc), in their order. A context changed several times
    is one entry, where it first changed, with its state now (the latest wins, as in the
    thread recorder); events the recorder does not store (config, tool, model calls) are left
    out. Reads the live contexts, so it runs on the runtime's process. With ``refs_sent``
    (message stream -> positions below it sent in earlier frames, updated here), a snapshot
    travels as stored with only the message references not sent yet (``stored_state``):
    pickling a context's 500 references for each of its snapshots cost more than the rest of
    the recording in this process."""
    out: list[Any] = []
    contexts: dict[str, tuple[int, int, float, Any]] = {}
    for event in events:
        cls = event.__class__
        if cls is MessageSent:
            sent: Any = event
            row = message_row(sent.message, str(sent.status), sent.reason, sent.project_id)
            out.append((WIRE_MESSAGE, event.seq, event.at, row))
        elif cls is MessageStatusChanged:
            changed: Any = event
            out.append((WIRE_STATUS, event.seq, event.at, changed.message.id, str(changed.status), changed.reason))
        elif cls is ContextChanged:
            context = event.context  # type: ignore[attr-defined]
            first = contexts.get(context.id)
            if first is None:
                out.append(None)  # its place: filled below with the state at the end of the frame
                contexts[context.id] = (len(out) - 1, event.seq, event.at, context)
            else:
                contexts[context.id] = (first[0], event.seq, event.at, context)
        elif cls is SnapshotTaken:
            snap = event.snapshot  # type: ignore[attr-defined]
            out.append(_snapshot_entry(event.seq, event.at, snap, refs_sent))
        elif isinstance(event, RECORDED_AS_IS):
            out.append((WIRE_EVENT, event.seq, event.at, event))
    for index, seq, at, context in contexts.values():
        out[index] = (WIRE_CONTEXT, seq, at, context.state())
    return out


def _snapshot_entry(seq: int, at: float, snap: Any, refs_sent: dict[str, int] | None) -> tuple[Any, ...]:
    """A snapshot's wire entry: as it is, or as stored with its new references (``wire_frame``)."""
    stream = snap.messages_stream
    if refs_sent is None or not stream:
        return (WIRE_SNAPSHOT, seq, at, *snapshot_fields(snap))
    state = snap.state
    stored, first_new = stored_state(state, stream, snap.messages_end, refs_sent.get(stream, 0))
    if stored is state:
        return (WIRE_SNAPSHOT, seq, at, *snapshot_fields(snap))
    refs = state["input_context"]["messages"]
    new_refs = refs[len(refs) - (snap.messages_end - first_new) :]
    remember(refs_sent, stream, snap.messages_end)
    return (
        WIRE_STORED_SNAPSHOT,
        seq,
        at,
        snap.id,
        snap.context_id,
        snap.type,
        snap.trigger,
        snap.label,
        snap.sequence,
        stored,
        snap.created_at,
        stream,
        first_new,
        new_refs,
    )


class WireWriter(BatchWriter):
    """The child's BatchWriter: folds wire entries (``wire_frame``) into the same rows."""

    def fold(self, rows: BatchRows, item: Any) -> None:
        tag = item[0]
        if tag == WIRE_MESSAGE:
            rows.take_message(item[1], list(item[3]))  # a copy: a retry starts from the row as sent
        elif tag == WIRE_STATUS:
            rows.take_status(item[3], item[4], item[5])
        elif tag == WIRE_CONTEXT:
            rows.take_context_state(item[3])
        elif tag == WIRE_SNAPSHOT:
            rows.take_snapshot(item[1], *item[3:])
        elif tag == WIRE_STORED_SNAPSHOT:
            rows.take_stored_snapshot(item[1], *item[3:])
        else:
            rows.take(item[3])

    def describe(self, item: Any) -> tuple[str, float, int]:
        kind = str(item[3].kind) if item[0] == WIRE_EVENT else WIRE_KINDS[item[0]]
        return kind, item[2], item[1]


class _Flush:
    """A ``flush`` caller waiting for frame ``number`` (everything published before it)."""

    __slots__ = ("done",)

    def __init__(self) -> None:
        self.done = threading.Event()


class _FenceChange:
    """Fences set or lifted (task id -> attempt or None), sent in order with the events."""

    __slots__ = ("changes",)

    def __init__(self, changes: dict[str, int | None]) -> None:
        self.changes = changes


class _Frame:
    """A frame sent and not acknowledged yet: its events (for the listeners) and its bytes (to
    send again to a new child)."""

    __slots__ = ("data", "events")

    def __init__(self, events: list[RuntimeEvent], data: bytes) -> None:
        self.events = events
        self.data = data


class RecorderProcess:
    """The recorder sink with the writing in a child process (module doc).

    ``batch_size`` is the most events the child writes in one transaction (frames carry at
    most ``min(FRAME_EVENTS, batch_size)``); ``batch_wait_s`` how long published events wait
    for more before they are sent; ``writer`` the child's BatchWriter class (dotted path).
    ``written_events``, ``failed_batches`` and ``lost_events`` count as the thread recorder's
    do; ``restarts`` counts child deaths recovered from.
    """

    def __init__(
        self,
        *,
        batch_size: int = BATCH_SIZE,
        batch_wait_s: float = BATCH_WAIT_S,
        writer: str = WRITER,
        max_restarts: int = MAX_RESTARTS,
    ) -> None:
        self.batch_size = batch_size
        self.batch_wait_s = batch_wait_s
        self.frame_events = max(1, min(FRAME_EVENTS, batch_size))
        self.writer = writer
        self.max_restarts = max_restarts
        self.stream = uuid.uuid4().hex
        self.written_events = 0
        self.failed_batches = 0
        self.lost_events = 0
        self.restarts = 0
        self.failure: str | None = None
        """Why recording left the child process for a thread of this one (None while it has not)."""
        self.process: subprocess.Popen[bytes] | None = None
        """The child recorder process now (a new one after a crash)."""
        self._pending: deque[RuntimeEvent | _Flush | _FenceChange | None] = deque()
        self._wake = threading.Event()
        self._hurry = threading.Event()
        self._listeners: list[BatchListener] = []
        self._link_lock = threading.Lock()  # the socket and the child: sending, restarting
        self._book_lock = threading.Lock()  # frames not acknowledged, flush callers waiting
        self._unacked: dict[int, _Frame] = {}
        self._numbered = 0
        self._acked = 0
        self._waiting: list[tuple[int, _Flush]] = []
        self._conn: Connection | None = None
        self._stop_sent = False
        self._deaths_in_a_row = 0
        self._dead = False
        self._local: threading.Thread | None = None
        self._fences: dict[str, int] = {}
        self._refs_sent: dict[str, int] = {}
        """Message stream -> positions below it sent in frames (``wire_frame``; link thread)."""
        self._on_stale: list[StaleCallback] = []
        self._sender: threading.Thread | None = None
        self._reader: threading.Thread | None = None

    @property
    def unacknowledged(self) -> int:
        """Frames sent and not yet acknowledged as committed."""
        with self._book_lock:
            return len(self._unacked)

    # -- sink -------------------------------------------------------------------------
    def publish(self, event: RuntimeEvent) -> None:
        pending = self._pending
        pending.append(event)
        if len(pending) == 1:
            self._wake.set()

    def add_listener(self, listener: BatchListener) -> None:
        """Call ``listener(events)`` after each committed batch (the live sink), in this process."""
        self._listeners.append(listener)

    def fence(self, task_id: str, attempt: int | None) -> None:
        """(``RecorderSink.fence``) Sent to the child in order with the events (the dispatcher
        fences a task before it starts it); a new child gets them all with its configuration."""
        fences = dict(self._fences)  # a new dict: ``_config`` reads the old one whole
        if attempt is None:
            fences.pop(task_id, None)
        else:
            fences[task_id] = attempt
        self._fences = fences
        self._pending.append(_FenceChange({task_id: attempt}))
        self._wake.set()

    def on_stale(self, callback: StaleCallback) -> None:
        """(``RecorderSink.on_stale``) Called from the ack thread."""
        self._on_stale.append(callback)

    def start(self) -> None:
        """Start the child and, once it is ready (Django set up, at most ``START_TIMEOUT_S``),
        the link and ack threads: the child's start-up (seconds of CPU) is over before the
        runtime's first tasks, which it would slow down (a worker's 2 s lease in tests)."""
        if self._sender is not None:
            return
        with self._link_lock:
            self._spawn()
            conn = self._conn
            try:
                if conn is not None and conn.poll(START_TIMEOUT_S):
                    self._received(pickle.loads(conn.recv_bytes()))
                else:
                    log.warning("the recorder process is not ready after %d s; going on", START_TIMEOUT_S)
            except (EOFError, OSError):
                pass  # it died at once: the ack thread restarts it
        self._sender = threading.Thread(target=self._send_loop, name="teamclaw-recorder-link", daemon=True)
        self._reader = threading.Thread(target=self._read_loop, name="teamclaw-recorder-acks", daemon=True)
        self._sender.start()
        self._reader.start()

    def flush(self, timeout: float = 30) -> bool:
        """Block until everything published before this call is committed (by the child) and
        handed to the listeners; False on timeout, and at once when nothing is recorded any
        more (module doc)."""
        if self._sender is None:
            return True
        if self._dead:
            return False
        marker = _Flush()
        self._pending.append(marker)
        self._wake.set()
        self._hurry.set()
        return marker.done.wait(timeout) and not self._dead

    def stop(self, timeout: float = 10) -> None:
        """Write what was published, stop the child and the threads (each waited for up to
        ``timeout`` seconds). A child still writing then is left to finish: it ends once it
        has written what it received."""
        if self._sender is None:
            return
        self._pending.append(None)
        self._wake.set()
        self._hurry.set()
        self._sender.join(timeout)
        if self._reader is not None:
            self._reader.join(timeout)
        with self._link_lock:
            if self.process is not None:
                try:
                    self.process.wait(timeout)
                except subprocess.TimeoutExpired:
                    log.warning("recorder process %d is still writing; it ends when it is done", self.process.pid)
            if self._conn is not None:
                self._conn.close()
                self._conn = None
        if self._local is not None:
            self._local.join(timeout)
        self._sender = self._reader = self._local = None

    # -- the link thread: events -> frames ---------------------------------------------
    def _send_loop(self) -> None:
        pending = self._pending
        while True:
            if not pending:
                self._wake.wait()
            self._wake.clear()
            self._hurry.wait(self.batch_wait_s)  # gather a batch, unless someone waits for it
            self._hurry.clear()
            try:
                if self._drain():
                    return
            except Exception:  # a bug: say so loudly, and go on with what is published next
                log.critical("the recorder's link thread failed: events published just now may be lost", exc_info=True)

    def _drain(self) -> bool:
        """Send everything pending in frames; True once the stop marker was reached."""
        pending = self._pending
        events: list[RuntimeEvent] = []
        while pending:
            item = pending.popleft()
            if item is None:
                if events:
                    self._send(events)
                with self._link_lock:
                    self._stop_sent = True
                    self._transmit(pickle.dumps((STOP,)))
                return True
            if isinstance(item, _FenceChange):
                if events:
                    self._send(events)
                    events = []
                with self._link_lock:
                    self._transmit(pickle.dumps((FENCE, item.changes)))
                continue
            if isinstance(item, _Flush):
                if events:
                    self._send(events)
                    events = []
                self._wait_for(self._numbered, item)
                continue
            events.append(item)
            if len(events) >= self.frame_events * FRAMES_PER_SEND:
                self._send(events)
                events = []
        if events:
            self._send(events)
        return False

    def _send(self, events: list[RuntimeEvent]) -> None:
        """Send ``events`` as wire entries (a context's state once for all of them) in frames
        of ``frame_events`` entries; the last frame carries the events for the listeners."""
        try:
            sent = dict(self._refs_sent)  # kept only if the whole frame encodes
            bodies = self._bodies(wire_frame(events, sent))
            self._refs_sent = sent
        except Exception:
            events, wire = self._encodable(events)
            bodies = self._bodies(wire)
        for index, body in enumerate(bodies):
            last = index == len(bodies) - 1
            with self._link_lock:
                self._numbered += 1
                number = self._numbered
                data = pickle.dumps((FRAME, number, body), protocol=pickle.HIGHEST_PROTOCOL)
                with self._book_lock:
                    self._unacked[number] = _Frame(events if last else [], data)
                self._transmit(data)

    def _bodies(self, wire: list[Any]) -> list[bytes]:
        """``wire`` pickled in frames of ``frame_events`` entries (one empty frame for none)."""
        size = self.frame_events
        starts = range(0, len(wire), size) if wire else [0]
        return [pickle.dumps(wire[start : start + size], protocol=pickle.HIGHEST_PROTOCOL) for start in starts]

    def _encodable(self, events: list[RuntimeEvent]) -> tuple[list[RuntimeEvent], list[Any]]:
        """A frame that could not be encoded, encoded event by event: each event that cannot
        be (a payload pickle refuses, a context that failed to give its state) is counted
        lost and replaced by a critical alert, as the writer does for an event the database
        refuses. Returns the events kept (with the alerts) and their wire entries."""
        kept: list[RuntimeEvent] = []
        wire: list[Any] = []
        for event in events:
            try:
                sent = dict(self._refs_sent)
                entries = wire_frame([event], sent)
                pickle.dumps(entries, protocol=pickle.HIGHEST_PROTOCOL)
                self._refs_sent = sent
            except Exception as exc:
                self.lost_events += 1
                log.exception("recorder could not encode %s event", with_article(str(event.kind)))
                event = AlertRaised(
                    at=event.at,
                    alert_kind="recorder",
                    severity="critical",
                    message=f"{with_article(str(event.kind))} event could not be recorded: {type(exc).__name__}: {exc}"[
                        :2000
                    ],
                    details={"event_kind": str(event.kind), "seq": event.seq},
                )
                entries = wire_frame([event])
            kept.append(event)
            wire.extend(entries)
        return kept, wire

    def _transmit(self, data: bytes) -> None:
        """Send one frame to the child (holding the link lock). A dead child is the ack
        thread's to notice: the frame stays unacknowledged and goes to the next child."""
        conn = self._conn
        if conn is None:
            return
        try:
            conn.send_bytes(data)
        except (OSError, ValueError):
            pass

    def _wait_for(self, number: int, marker: _Flush) -> None:
        with self._book_lock:
            if number <= self._acked or self._dead:
                marker.done.set()
            else:
                self._waiting.append((number, marker))

    # -- the ack thread: acknowledgements, crashes -------------------------------------
    def _read_loop(self) -> None:
        while True:
            conn = self._conn
            try:
                if conn is None:
                    raise EOFError
                data = conn.recv_bytes()
            except (EOFError, OSError):
                with self._book_lock:
                    finished = self._stop_sent and not self._unacked
                if finished or not self._restart():
                    return
                continue
            self._received(pickle.loads(data))

    def _received(self, message: tuple[Any, ...]) -> None:
        """A message from the child: ``(READY,)`` once Django is set up, or an acknowledgement."""
        if message[0] != READY:
            self._acknowledged(*message)

    def _acknowledged(
        self,
        upto: int,
        failed_batches: int,
        lost_events: int,
        lost_seqs: list[int],
        lost_contexts: list[str],
        stale: list[str],
    ) -> None:
        """The child committed every frame up to ``upto``: hand their events to the listeners
        (without the ones it could not store), release the flushes waiting for them and say
        which tasks it fenced out (``stale``)."""
        if stale:
            tell_stale(self._on_stale, stale)
        done: list[_Frame] = []
        with self._book_lock:
            while self._unacked:
                number = next(iter(self._unacked))
                if number > upto:
                    break
                done.append(self._unacked.pop(number))
            self._acked = max(self._acked, upto)
            released = [marker for number, marker in self._waiting if number <= upto]
            self._waiting = [(number, marker) for number, marker in self._waiting if number > upto]
            self.failed_batches += failed_batches
            self.lost_events += lost_events
            self._deaths_in_a_row = 0
        for frame in done:
            events = frame.events
            if not events:
                continue
            if lost_seqs or lost_contexts:
                seqs, contexts = set(lost_seqs), set(lost_contexts)
                events = [e for e in events if e.seq not in seqs and not _context_in(e, contexts)]
            self.written_events += len(events)
            for listener in self._listeners:
                try:
                    listener(events)
                except Exception:
                    log.exception("recorder listener failed")
        for marker in released:
            marker.done.set()

    def _restart(self) -> bool:
        """The child's socket ended early: start a new child (after ``max_restarts`` deaths in
        a row, a writer thread here instead) and send it what is unacknowledged, then an alert
        saying so (module doc). False when even the writer thread ended: nothing is recorded
        any more."""
        with self._link_lock:
            old = self.process
            code = _reap(old)
            if self.failure is not None:
                self._dead = True
                log.critical("the recorder's writer thread ended too: runtime events are no longer recorded")
                with self._book_lock:
                    released = [marker for _, marker in self._waiting]
                    self._waiting = []
                for marker in released:
                    marker.done.set()
                return False
            with self._book_lock:
                frames = [frame.data for frame in self._unacked.values()]
            self._deaths_in_a_row += 1
            if self._deaths_in_a_row > self.max_restarts:
                self.failure = (
                    f"the recorder process died {self._deaths_in_a_row} times in a row (last exit code {code})"
                )
                log.critical("%s; recording goes on in a thread of the runtime's process", self.failure)
                self._serve_here()
                severity = "critical"
                message = (
                    f"The recorder process died {self._deaths_in_a_row} times in a row (last exit code {code}); "
                    f"recording goes on in a thread of the runtime's process, and the {len(frames)} batches not "
                    "yet stored were given to it."
                )
            else:
                log.error(
                    "recorder process %s ended (exit code %s); starting another, sending it the %d unacknowledged"
                    " frames",
                    old.pid if old is not None else "-",
                    code,
                    len(frames),
                )
                self._spawn()
                self.restarts += 1
                severity = "warning"
                message = (
                    f"The recorder process ended unexpectedly (exit code {code}); a new one was started "
                    f"and the {len(frames)} batches not yet stored were sent to it again."
                )
            alert = AlertRaised(
                at=time.time(),
                alert_kind="recorder",
                severity=severity,
                message=message,
                details={"exit_code": code, "resent_frames": len(frames), "restarts": self.restarts},
            )
            self._numbered += 1
            body = pickle.dumps(wire_frame([alert]), protocol=pickle.HIGHEST_PROTOCOL)
            data = pickle.dumps((FRAME, self._numbered, body), protocol=pickle.HIGHEST_PROTOCOL)
            with self._book_lock:
                self._unacked[self._numbered] = _Frame([alert], data)
            frames.append(data)
            if self._stop_sent:
                frames.append(pickle.dumps((STOP,)))
            for data in frames:
                # Read the acknowledgements as they come: a child blocked on sending one would
                # stop reading, and this send would wait for it forever.
                if not self._read_waiting_acks():
                    break  # it died again: the read loop starts the next one
                self._transmit(data)
        return True

    def _read_waiting_acks(self) -> bool:
        """Handle the acknowledgements already waiting; False when the child's socket ended."""
        conn = self._conn
        try:
            while conn is not None and conn.poll():
                self._received(pickle.loads(conn.recv_bytes()))
        except (EOFError, OSError):
            return False
        return True

    def _config(self) -> dict[str, Any]:
        """The first message to a writer: stream id, writer class, batch size, the database."""
        return {
            "stream": self.stream,
            "writer": self.writer,
            "batch_size": self.batch_size,
            "database": dict(connection.settings_dict),
            "fences": dict(self._fences),
        }

    def _serve_here(self) -> None:
        """Write on a thread of this process from now on (holding the link lock): ``serve`` on
        the other end of a socket pair, so frames, acknowledgements and the checkpoint work as
        with a child."""
        if self._conn is not None:
            self._conn.close()
        ours, theirs = socket.socketpair()
        self.process = None
        self._local = threading.Thread(
            target=_serve_in_thread,
            args=(Connection(theirs.detach()), self._config()),
            name="teamclaw-recorder-local",
            daemon=True,
        )
        self._local.start()
        self._conn = Connection(ours.detach())

    def _spawn(self) -> None:
        """Start a child recorder process on a new socket pair (holding the link lock)."""
        if self._conn is not None:
            self._conn.close()
        ours, theirs = socket.socketpair()
        fd = theirs.fileno()
        self.process = subprocess.Popen(
            [sys.executable, str(settings.BASE_DIR / "manage.py"), "record_events", str(fd)],
            pass_fds=[fd],
            env={"DJANGO_SETTINGS_MODULE": str(settings.SETTINGS_MODULE), **os.environ},
            cwd=settings.BASE_DIR,
            stdin=subprocess.DEVNULL,
        )
        theirs.close()
        self._conn = Connection(ours.detach())
        self._transmit(pickle.dumps(self._config(), protocol=pickle.HIGHEST_PROTOCOL))


def _serve_in_thread(conn: Connection, config: dict[str, Any]) -> None:
    """``serve`` on a thread of the runtime's process (the fallback); its socket closes when it
    ends, however it ends, so the ack thread notices."""
    try:
        serve(conn, config)
    except Exception:
        log.exception("the recorder's writer thread failed")
    finally:
        conn.close()
        connection.close()


def _context_in(event: RuntimeEvent, context_ids: set[str]) -> bool:
    return isinstance(event, ContextChanged) and event.context.id in context_ids


def _reap(process: subprocess.Popen[bytes] | None) -> int | None:
    """The exit code of a child whose socket ended (killed if it lingers)."""
    if process is None:
        return None
    try:
        return process.wait(5)
    except subprocess.TimeoutExpired:
        process.kill()
        return process.wait()


# -- the child ---------------------------------------------------------------------------
def serve(conn: Connection, config: dict[str, Any]) -> None:
    """The child's loop (``manage.py record_events``): read frames in order, write each run
    of waiting frames as one batch (up to ``config["batch_size"]`` events) with the
    checkpoint, acknowledge ``(upto, failed_batches, lost_events, lost_seqs, lost_contexts,
    stale_tasks)``. A ``(FENCE, {task id: attempt or None})`` message sets the writer's fences
    (``monitoring.fencing``); the first message's ``fences`` are the ones set before.
    Ends at the stop message (deleting its checkpoint) or when the runtime's process is gone
    (after writing what it received). Database errors are the writer's (retried, then event
    by event, each event still refused an Alert row)."""
    writer: BatchWriter = import_string(config["writer"])()
    stream = config["stream"]
    batch_size = config["batch_size"]
    writer.fences = dict(config.get("fences") or {})
    RecorderCheckpoint.objects.filter(updated_at__lt=datetime.now(tz=UTC) - CHECKPOINT_KEEP).delete()
    done = RecorderCheckpoint.objects.filter(stream=stream).values_list("batch", flat=True).first() or 0
    conn.send_bytes(pickle.dumps((READY,)))
    stopping = ended = False
    while not (stopping or ended):
        messages: list[tuple[Any, ...]] = []
        size = 0
        try:
            messages.append(_received(conn.recv_bytes()))
            size = len(messages[0][2]) if messages[0][0] == FRAME else 0 if messages[0][0] == FENCE else batch_size
            while size < batch_size and conn.poll():
                message = _received(conn.recv_bytes())
                messages.append(message)
                if message[0] == FRAME:
                    size += len(message[2])
        except EOFError:
            ended = True  # the runtime's process is gone: write what came, then end
        batch: list[Any] = []
        upto = 0
        for message in messages:
            if message[0] == STOP:
                stopping = True
                break
            if message[0] == FENCE:
                _set_fences(writer, message[1])
                continue
            _, number, items = message
            upto = number
            if number > done:
                batch.extend(items)
        if batch:
            acknowledgement = _write(writer, stream, upto, batch)
            done = upto
        else:
            acknowledgement = (upto, 0, 0, [], [], writer.take_stale())
        if (upto or acknowledgement[5]) and not ended:
            try:
                conn.send_bytes(pickle.dumps(acknowledgement))
            except OSError:
                ended = True
    if stopping:
        RecorderCheckpoint.objects.filter(stream=stream).delete()
    close_old_connections()
    connection.close()


def _received(data: bytes) -> tuple[Any, ...]:
    """A message from the runtime's process: ``(FRAME, number, wire entries)``, ``(FENCE,
    changes)`` or ``(STOP,)``."""
    message = pickle.loads(data)
    if message[0] == FRAME:
        return FRAME, message[1], pickle.loads(message[2])
    return tuple(message)


def _write(writer: BatchWriter, stream: str, upto: int, batch: list[Any]) -> tuple[Any, ...]:
    """Write ``batch`` (frames up to ``upto``) with its checkpoint; the acknowledgement."""
    failed, lost = writer.failed_batches, writer.lost_events
    writer.checkpoint = (stream, upto)
    written = writer.write_with_retry(batch)
    lost_seqs: list[int] = []
    lost_contexts: list[str] = []
    if len(written) != len(batch):
        kept = {id(item) for item in written}
        for item in batch:
            if id(item) not in kept:
                lost_seqs.append(item[1])
                if item[0] == WIRE_CONTEXT:
                    lost_contexts.append(item[3]["id"])
    stale = writer.take_stale()
    return (upto, writer.failed_batches - failed, writer.lost_events - lost, lost_seqs, lost_contexts, stale)


def _set_fences(writer: BatchWriter, changes: dict[str, int | None]) -> None:
    """Apply a FENCE message: set each task's attempt, or lift its fence (None)."""
    fences = dict(writer.fences)
    for task_id, attempt in changes.items():
        if attempt is None:
            fences.pop(task_id, None)
        else:
            fences[task_id] = attempt
    writer.fences = fences


def new_recorder(mode: str, **options: Any) -> RecorderSink:
    """The recorder sink for ``mode`` (``thread`` or ``process``, ``TEAMCLAW_RECORDER``);
    ``options`` go to its constructor. Raises ValueError for another mode."""
    if mode == "thread":
        return Recorder(**options)
    if mode == "process":
        return RecorderProcess(**options)
    raise ValueError(f"recorder mode must be thread or process, not {mode!r}")
