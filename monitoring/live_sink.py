"""The live sink: committed runtime events -> Channels groups (docs/architecture.md §4, §7, PRD §4.6).

The recorder calls ``LiveSink.on_batch`` with every batch right after its transaction
commits ("publish after the database commit"), so a browser never sees something the
database does not hold. ``on_batch`` only extracts the batch's live things
(``live_events.extract``) and hands them to the sink's own thread through a bounded queue;
when that queue is full the batch is dropped (counted and logged: ``monitoring.metrics.live_drops``)
and every client is told to resynchronise from the database, so neither the runtime nor the
recorder ever waits on a browser.

The sink thread renders each live thing's fragment once per language in use (the languages
of this process's connected sockets with the in-memory layer, every one of
``settings.LANGUAGES`` with Redis, whose sockets may live in other processes), looks up each
task's owner (for
per-user filtering, ``monitoring.access``) and sends one numbered ``live.batch`` message per
group (a consumer that sees a number skipped resynchronises):

- ``live``: everything (the ``/ws/live/`` sockets; each consumer filters for its user);
- ``project.<slug>``: the events of that project's tasks;
- ``task.<task_id>``: the events of one task.

Event loops: the runtime has its own thread and loop (``runs.host``), the recorder
and this sink their own threads, and websocket consumers run on the ASGI server's loop.
Channels' ``InMemoryChannelLayer`` keeps asyncio queues bound to the loop its consumers
wait on, so with it ``group_send`` is scheduled onto the server's loop, captured by
``bind_loop`` when a consumer connects. With ``REDIS_URL`` (channels-redis) any loop works:
the sink sends from a loop of its own, which also lets a runtime in another process (the
``run_workflow`` command) reach the server's browsers.

Memory: with the in-memory layer the rendered batch stays in a ring of the last
``RING_BATCHES`` publishes shared by every consumer, and only its number crosses the layer
(which deep-copies each message per receiver and queues up to its capacity per consumer), so
a lagging consumer costs a few bytes per batch, not a copy of it. With Redis the batch itself
travels, as two strings.
"""

from __future__ import annotations

import asyncio
import logging
import queue
import threading
import time
from collections import Counter, OrderedDict, deque
from concurrent.futures import Future
from concurrent.futures import wait as wait_futures
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import InMemoryChannelLayer, get_channel_layer
from django.conf import settings
from django.db import close_old_connections, connection

from monitoring import live_events
from monitoring.live_events import LiveEvent, LiveItem
from monitoring.metrics import live_drops
from monitoring.models import Task
from teamclaw.runtime.events import RuntimeEvent
from teamclaw.runtime.messages import new_id

log = logging.getLogger(__name__)

LIVE_GROUP = "live"
QUEUE_BATCHES = 200
"""Committed batches waiting to be rendered; beyond that the sink drops and asks for a resync."""
SEND_TIMEOUT_S = 5.0
SENDS_IN_FLIGHT = 4
MERGE_ITEMS = 500
"""Most live things published at once when batches queue up (see ``_run``)."""
OWNER_CACHE_SIZE = 10_000
RING_BATCHES = 128
"""Published batches kept for this process's consumers (in-memory layer): a consumer further
behind than that resynchronises from the database."""
GROUP_SEQ_SIZE = 10_000
RESYNC_EVERY_S = 0.5


def task_group(task_id: str) -> str:
    """The Channels group of one task's live events."""
    return f"task.{task_id}"


def project_group(slug: str) -> str:
    """The Channels group of one project's live events."""
    return f"project.{slug}"


def _groups_of(items: list[LiveItem]) -> set[str]:
    groups = {LIVE_GROUP}
    for _kind, _key, item in items:
        if item.get("task_id"):
            groups.add(task_group(item["task_id"]))
        if item.get("project_id"):
            groups.add(project_group(item["project_id"]))
    return groups


class _Flush:
    def __init__(self) -> None:
        self.done = threading.Event()


class LiveSink:
    """See module docstring. One per process: ``get_live_sink()``."""

    def __init__(self, *, queue_batches: int = QUEUE_BATCHES) -> None:
        self._queue: queue.Queue[list[LiveItem] | _Flush | None] = queue.Queue(maxsize=queue_batches)
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._server_loop: asyncio.AbstractEventLoop | None = None
        self._own_loop: asyncio.AbstractEventLoop | None = None
        self._lost_groups: set[str] = set()
        self._tasks: OrderedDict[str, tuple[int | None, str, str]] = OrderedDict()
        self.clients = 0
        self._languages: Counter[str] = Counter()
        self.batches = 0
        self.events = 0
        self.group_sends = 0
        self.dropped_batches = 0
        self.failed_sends = 0
        self.busy_s = 0.0
        self._in_flight: deque[tuple[Future[None], set[str], asyncio.AbstractEventLoop, Any]] = deque()
        self._send_lock: asyncio.Lock | None = None
        self._send_lock_loop: asyncio.AbstractEventLoop | None = None
        self.sink_id = new_id()[:12]
        self._published = 0
        self._ring: dict[int, list[LiveEvent]] = {}
        self._group_seq: OrderedDict[str, int] = OrderedDict()

    # -- wiring ------------------------------------------------------------------------------
    def start(self) -> LiveSink:
        """Start the sink's thread (idempotent)."""
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="teamclaw-live-sink", daemon=True)
                self._thread.start()
        return self

    def stop(self, timeout: float = 5) -> None:
        with self._lock:
            thread, self._thread = self._thread, None
        if thread is not None:
            self._queue.put(None)
            thread.join(timeout)

    def bind_loop(self, loop: asyncio.AbstractEventLoop) -> None:
        """Remember the ASGI server's event loop (called by consumers on connect)."""
        self._server_loop = loop

    def client_connected(self, language: str | None = None) -> None:
        """A socket of this process opened; ``language`` (a code of ``settings.LANGUAGES``,
        default ``LANGUAGE_CODE``) is the one its fragments are rendered in."""
        with self._lock:
            self.clients += 1
            self._languages[language or settings.LANGUAGE_CODE] += 1

    def client_disconnected(self, language: str | None = None) -> None:
        """A socket opened with ``client_connected(language)`` closed."""
        with self._lock:
            self.clients = max(0, self.clients - 1)
            self._languages[language or settings.LANGUAGE_CODE] -= 1
            self._languages = +self._languages  # forget languages nobody reads any more

    def languages(self) -> list[str]:
        """The languages to render each live thing in, sorted: those of this process's
        sockets with the in-memory layer (``LANGUAGE_CODE`` when none is connected), every
        language of ``settings.LANGUAGES`` otherwise (the readers may be in any process).
        A socket whose language is missing from a batch (it connected while the batch was
        being rendered) resynchronises from the database."""
        if not self._in_memory():
            return sorted(code for code, _name in settings.LANGUAGES)
        with self._lock:
            return sorted(self._languages) or [settings.LANGUAGE_CODE]

    @staticmethod
    def _in_memory() -> bool:
        return isinstance(get_channel_layer(), InMemoryChannelLayer)

    def _listening(self) -> bool:
        """Whether anyone can receive: with the in-memory layer, a consumer of this process."""
        if not self._in_memory():
            return True
        loop = self._server_loop
        return self.clients > 0 and loop is not None and loop.is_running()

    # -- the recorder's listener ---------------------------------------------------------
    def on_batch(self, batch: list[RuntimeEvent]) -> None:
        """Recorder listener: extract the committed batch and queue it; never blocks."""
        if self._thread is None or not self._listening():
            return
        items = live_events.extract(batch)
        if not items:
            return
        try:
            self._queue.put_nowait(items)
        except queue.Full:
            self._queue_full(items)

    def publish_items(self, items: list[LiveItem]) -> None:
        """Publish live things an action committed outside the runtime (a snapshot taken from
        the database); call it from ``transaction.on_commit``. Never blocks."""
        if self._thread is None or not self._listening() or not items:
            return
        try:
            self._queue.put_nowait(items)
        except queue.Full:
            self._queue_full(items)

    def _queue_full(self, items: list[LiveItem]) -> None:
        """A committed batch found the queue full: drop it, count and log it (rate-limited,
        ``monitoring.metrics.live_drops``) and resynchronise its groups' sockets."""
        self.dropped_batches += 1
        live_drops.dropped(f"sink:{self.sink_id}", "the live sink", "sink_queue_full", 1)
        self._lose(_groups_of(items))

    def _lose(self, groups: set[str]) -> None:
        """Events for ``groups`` were dropped: their sockets must resynchronise."""
        with self._lock:
            self._lost_groups |= groups

    @property
    def backlog(self) -> int:
        """Batches waiting to be rendered and sent."""
        return self._queue.qsize()

    def flush(self, timeout: float = 10) -> bool:
        """Block until every batch queued before this call was sent; False on timeout."""
        if self._thread is None:
            return True
        marker = _Flush()
        self._queue.put(marker, timeout=timeout)
        return marker.done.wait(timeout)

    # -- the sink's thread ----------------------------------------------------------------
    def _run(self) -> None:
        running = True
        while running:
            try:
                running = self._step()
            except Exception:  # the sink's thread must outlive any one bad batch
                log.exception("live sink step failed")
        try:
            self._drain_sends()
        finally:
            if self._own_loop is not None:
                self._own_loop.close()
                self._own_loop = None
            connection.close()

    def _step(self) -> bool:
        """Publish what is queued (or pending resyncs); False when asked to stop."""
        try:
            first = self._queue.get(timeout=RESYNC_EVERY_S)
        except queue.Empty:
            # Nothing new to publish, but sockets that lost events must still hear of it.
            if self._lost_groups:
                self._send(self._resyncs())
            # Idle: hold no database connection (PostgreSQL counts it; tests drop the database).
            connection.close()
            return True
        if first is None:
            return False
        # Under load, take every batch already waiting and publish them as one: a context
        # changed in five batches is rendered and sent once, and each browser gets one message
        # per group instead of five.
        items: list[LiveItem] = []
        markers: list[_Flush] = []
        item: list[LiveItem] | _Flush | None = first
        while item is not None:
            if isinstance(item, _Flush):
                markers.append(item)
            else:
                items.extend(item)
            if len(items) >= MERGE_ITEMS:
                break
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
        began = time.perf_counter()
        try:
            if items:
                try:
                    self._publish(live_events.merge(items))
                except Exception:
                    log.exception("live sink failed to publish %d items", len(items))
                    self._lose(_groups_of(items))  # never a silent drop: their sockets resync
            if markers:
                self._drain_sends()
        finally:
            for marker in markers:
                marker.done.set()
            self.busy_s += time.perf_counter() - began
        return item is not None  # None: the stop marker was among the queued items

    def _publish(self, items: list[LiveItem]) -> None:
        close_old_connections()
        tasks = self._task_info(live_events.task_ids(items))
        events = live_events.render(items, tasks, self.languages())
        sends: dict[str, list[LiveEvent]] = {}
        for event in events:
            sends.setdefault(LIVE_GROUP, []).append(event)
            if event.task_id:
                sends.setdefault(task_group(event.task_id), []).append(event)
            if event.project_id:
                sends.setdefault(project_group(event.project_id), []).append(event)
        shared = self._in_memory()
        if shared:
            number = self._keep(events)
        messages = []
        for group, batch in sends.items():
            message: dict[str, Any] = {"type": "live.batch", "sink": self.sink_id, "g": self._next_in_group(group)}
            if shared:
                message["n"] = number  # the events stay here; only their number crosses the layer
            else:
                message.update(live_events.pack(batch))
            messages.append((group, message))
        messages += self._resyncs()
        self._send(messages)
        self.batches += 1
        self.events += len(events)

    def _keep(self, events: list[LiveEvent]) -> int:
        """Keep a published batch for this process's consumers; returns its number."""
        with self._lock:
            self._published += 1
            self._ring[self._published] = events
            while len(self._ring) > RING_BATCHES:
                del self._ring[next(iter(self._ring))]
            return self._published

    def published(self, number: int) -> list[LiveEvent] | None:
        """The events of published batch ``number``, or None once it left the ring (the
        consumer asking has fallen that far behind and resynchronises)."""
        with self._lock:
            return self._ring.get(number)

    def _next_in_group(self, group: str) -> int:
        """Per-group message numbers: a consumer that sees one skipped knows it missed a batch
        (the layer dropped it: capacity, expiry) and resynchronises."""
        number = self._group_seq.pop(group, 0) + 1
        self._group_seq[group] = number
        while len(self._group_seq) > GROUP_SEQ_SIZE:
            self._group_seq.popitem(last=False)
        return number

    def send_to_group(self, group: str, message: dict[str, Any], timeout: float = SEND_TIMEOUT_S) -> bool:
        """Send one control ``message`` to ``group`` now, outside the event stream (a logout
        closing its sockets). Call it from synchronous code. With the in-memory layer the send
        runs on the ASGI server's loop (where its sockets live); returns False when no socket
        ever connected in this process or the send did not finish within ``timeout`` s."""
        layer = get_channel_layer()
        if layer is None:
            return False
        if not isinstance(layer, InMemoryChannelLayer):
            async_to_sync(layer.group_send)(group, message)
            return True
        loop = self._server_loop
        if loop is None or not loop.is_running():
            return False
        future = asyncio.run_coroutine_threadsafe(layer.group_send(group, message), loop)
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:  # called on the server loop itself: it runs once we yield
            return True
        try:
            future.result(timeout)
        except Exception:
            log.warning("could not reach the sockets of %s", group, exc_info=True)
            return False
        return True

    def _send(self, messages: list[tuple[str, dict[str, Any]]]) -> None:
        layer = get_channel_layer()
        if layer is None:
            return
        if not isinstance(layer, InMemoryChannelLayer):
            if self._own_loop is None:
                self._own_loop = asyncio.new_event_loop()
            try:
                self._own_loop.run_until_complete(asyncio.wait_for(self._send_all(layer, messages), SEND_TIMEOUT_S))
            except Exception:
                log.exception("live group_send failed")
                self._failed({group for group, _ in messages})
                return
            self.group_sends += len(messages)
            return
        loop = self._server_loop
        if loop is None or not loop.is_running():
            return
        # Rendering the next batch overlaps with sending this one; at most SENDS_IN_FLIGHT
        # wait on the server's loop, and _send_all keeps them in order there.
        while len(self._in_flight) >= SENDS_IN_FLIGHT:
            self._wait_oldest()
        groups = {group for group, _ in messages}
        coroutine = self._send_all(layer, messages)
        try:
            future = asyncio.run_coroutine_threadsafe(coroutine, loop)
        except RuntimeError:  # the loop closed since we looked (a test's loop, a server stopping)
            coroutine.close()
            self._failed(groups)
            return
        self._in_flight.append((future, groups, loop, coroutine))
        self.group_sends += len(messages)

    async def _send_all(self, layer: Any, messages: list[tuple[str, dict[str, Any]]]) -> None:
        loop = asyncio.get_running_loop()
        if self._send_lock is None or self._send_lock_loop is not loop:
            self._send_lock, self._send_lock_loop = asyncio.Lock(), loop
        async with self._send_lock:  # FIFO: batches reach each group in the order they committed
            for group, message in messages:
                await layer.group_send(group, message)

    def _wait_oldest(self) -> None:
        future, groups, loop, coroutine = self._in_flight.popleft()
        deadline = time.monotonic() + SEND_TIMEOUT_S
        while not future.done():
            stopped = not loop.is_running()
            if stopped or time.monotonic() > deadline:
                # The loop stopped (a test's loop, a server shutting down) or is swamped: give
                # up on this batch; its sockets resynchronise.
                future.cancel()
                if stopped:
                    coroutine.close()  # it will never run there
                self._failed(groups)
                return
            wait_futures([future], timeout=0.05)
        if future.cancelled() or future.exception() is not None:
            if not future.cancelled():
                log.error("live group_send failed", exc_info=future.exception())
            self._failed(groups)

    def _drain_sends(self) -> None:
        while self._in_flight:
            self._wait_oldest()

    def _failed(self, groups: set[str]) -> None:
        self.failed_sends += 1
        live_drops.dropped(f"sink:{self.sink_id}", "the live sink", "sink_send_failed", 1)
        self._lose(groups)

    def _resyncs(self) -> list[tuple[str, dict[str, Any]]]:
        """``live.resync`` messages for every group that lost events since the last publish."""
        with self._lock:
            groups, self._lost_groups = self._lost_groups, set()
        return [(group, {"type": "live.resync"}) for group in sorted(groups)]

    def _task_info(self, task_ids: set[str]) -> dict[str, tuple[int | None, str, str]]:
        """task id -> (id of the user who started it or None, title, kind), cached (none of
        them changes)."""

        known = {t: self._tasks[t] for t in task_ids if t in self._tasks}
        missing = task_ids - known.keys()
        if missing:
            rows = Task.objects.filter(pk__in=missing).values_list("id", "created_by_id", "title", "kind")
            for task_id, owner, title, kind in rows:
                known[task_id] = (owner, title or task_id, kind)
                self._tasks[task_id] = known[task_id]
            while len(self._tasks) > OWNER_CACHE_SIZE:
                self._tasks.popitem(last=False)
        return known


_sink: LiveSink | None = None
_sink_lock = threading.Lock()


def get_live_sink() -> LiveSink:
    """The process's live sink, started on first use."""
    global _sink
    with _sink_lock:
        if _sink is None:
            _sink = LiveSink()
        return _sink.start()  # (re)starts its thread if it is not running
