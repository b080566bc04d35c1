"""The live sockets (PRD §4.6): ``/ws/live/`` and ``/ws/tasks/<id>/``.

Each socket speaks its operator's language and shows times in its operator's zone
(``web.sockets.languages``), both chosen once at the handshake as a page's are: its state
frames are rendered under ``translation.override`` and ``timezone.override``; it sends the
text of each pushed event in that language (the sink renders each event once per language in
use, ``monitoring.live_sink``, in the server's zone) with the fragment's times reworded in its
zone when that is another (``monitoring.live_times.in_zone``)."""

from __future__ import annotations

import asyncio
import logging
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any, TypeVar
from urllib.parse import parse_qs
from zoneinfo import ZoneInfo

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.utils import timezone, translation

from monitoring import live_state, live_times
from monitoring.access import Viewer, can_view_task
from monitoring.live_events import LiveEvent, unpack
from monitoring.live_filters import FilterError, LiveFilters
from monitoring.live_sink import LIVE_GROUP, get_live_sink, project_group, task_group
from monitoring.metrics import live_drops
from monitoring.models import Task
from teamclaw.strict_json import JsonRefused, loads
from web.sockets.languages import socket_language, socket_time_zone
from web.sockets.outbox import Outbox

log = logging.getLogger(__name__)

Result = TypeVar("Result")


CLOSE_UNAUTHENTICATED = 4401


CLOSE_NOT_FOUND = 4404


CLOSE_BAD_REQUEST = 4400


CLOSE_MESSAGE_TOO_BIG = 1009
"""RFC 6455 §7.4.1: a frame from the page bigger than ``MAX_CLIENT_FRAME_BYTES``."""


MAX_CLIENT_FRAME_BYTES = 4096
"""Largest frame a page may send (UTF-8 bytes of a text frame, or a binary frame's bytes). The
pages send only acks (``{"type": "ack", "seq": n}``, under 50 bytes); a bigger frame is refused
with ``CLOSE_MESSAGE_TOO_BIG`` before it is parsed. daphne closes frames over its own limit
(1 MiB) with the same code (``web.sockets.transport``)."""


def _visible_task(user: Any, task_id: str) -> Task | None:
    task = Task.objects.filter(pk=task_id).first()
    return task if task is not None and can_view_task(user, task) else None


def session_group(scope: dict[str, Any]) -> str | None:
    """The group of every socket opened with one login session (``session.<key>``), so that
    logging out closes them; None without a session key."""
    session = scope.get("session")
    key = getattr(session, "session_key", None)
    return f"session.{key}" if key else None


def end_session_sockets(session_key: str | None) -> None:
    """Close every live socket of the login session ``session_key`` (called on logout)."""
    if session_key:
        get_live_sink().send_to_group(f"session.{session_key}", {"type": "session.ended"})


def user_group(user_id: int) -> str:
    """The group of every socket of one user, whatever the session (``user.<id>``), so that
    deactivating the user, deleting it or changing its password closes them."""
    return f"user.{user_id}"


def end_user_sockets(user_id: int | None) -> None:
    """Close every live socket of the user ``user_id`` in every session (close 4401), as
    logout does for one session (web.apps: deactivation, deletion, password change)."""
    if user_id is not None:
        get_live_sink().send_to_group(user_group(user_id), {"type": "session.ended"})


class NoSuchSocket(AsyncWebsocketConsumer):
    """Any other path under ``/ws/``: refused with 4404 (not a server error)."""

    async def connect(self) -> None:
        await self.close(code=CLOSE_NOT_FOUND)


class LiveSocket(AsyncWebsocketConsumer, ABC):
    """Shared machinery: access, group membership, outbox, acks, state frames."""

    outbox_options: dict[str, int] = {}
    """Overrides for ``Outbox`` limits (tests use small ones)."""

    group: str | None = None
    session_group: str | None = None
    user_group: str | None = None
    viewer: Viewer | None = None
    language: str = ""
    """The code (``settings.LANGUAGES``) this socket renders and sends its fragments in."""
    time_zone: ZoneInfo | None = None
    """The zone this socket shows times in (None: ``settings.TIME_ZONE``)."""
    push_zone: ZoneInfo | None = None
    """``time_zone`` when it is not ``settings.TIME_ZONE``, the zone pushed fragments are
    rendered in: their times are then reworded for it; else None."""

    async def connect(self) -> None:
        self.language = socket_language(self.scope)
        self.time_zone = socket_time_zone(self.scope)
        if self.time_zone is not None and self.time_zone.key != timezone.get_default_timezone_name():
            self.push_zone = self.time_zone
        self.outbox = Outbox(**self.outbox_options)
        self.last_numbers: dict[Any, Any] = {}
        self.joined = False
        self.counted = False
        self.refused = False
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=CLOSE_UNAUTHENTICATED)
            return
        refusal = await self.authorize(user)
        if refusal is not None:
            await self.close(code=refusal)
            return
        self.viewer = await database_sync_to_async(Viewer.for_user)(user)
        self.session_group = session_group(self.scope)
        if self.session_group:
            await self.channel_layer.group_add(self.session_group, self.channel_name)
        self.user_group = user_group(user.pk)
        await self.channel_layer.group_add(self.user_group, self.channel_name)
        sink = get_live_sink()
        sink.bind_loop(asyncio.get_running_loop())
        sink.client_connected(self.language)
        self.counted = True
        assert self.group is not None
        await self.channel_layer.group_add(self.group, self.channel_name)
        self.joined = True
        await self.accept()
        await self.send_state(resync=False)

    @abstractmethod
    async def authorize(self, user: Any) -> int | None:
        """Parse the request and check access; a close code refuses the connection.
        Each socket (LiveConsumer, TaskConsumer) says who may watch what."""

    @abstractmethod
    async def fills(self) -> list[dict[str, str]]:
        """The current state as container fills (``live_state``), per socket kind."""

    def wants(self, event: LiveEvent) -> bool:
        """Whether this socket's user and filters want ``event``."""
        assert self.viewer is not None
        return self.viewer.may_see(event.owner_id, event.public)

    @property
    def drop_key(self) -> str:
        """This socket's key in ``monitoring.metrics.live_drops``."""
        return f"socket:{self.channel_name}"

    def report_dropped(self, reason: str, count: int) -> None:
        """Count ``count`` drops of ``reason`` (``LIVE_DROP_REASONS``) and log them, rate-limited,
        naming this socket (its path and group: ``task.<id>`` for a task's) and its user."""
        if count == 0:
            return
        user = self.scope.get("user")
        who = f"live socket {self.scope.get('path', '?')} [{self.group}] of user {getattr(user, 'pk', None)}"
        live_drops.dropped(self.drop_key, who, reason, count)

    async def disconnect(self, code: int) -> None:
        live_drops.forget(self.drop_key)
        if getattr(self, "session_group", None):
            await self.channel_layer.group_discard(self.session_group, self.channel_name)
            self.session_group = None
        if getattr(self, "user_group", None):
            await self.channel_layer.group_discard(self.user_group, self.channel_name)
            self.user_group = None
        if getattr(self, "joined", False) and self.group is not None:
            await self.channel_layer.group_discard(self.group, self.channel_name)
            self.joined = False
        if getattr(self, "counted", False):
            get_live_sink().client_disconnected(self.language)
            self.counted = False

    def in_language(self, render: Callable[..., Result], *args: Any) -> Result:
        """``render(*args)`` with this socket's language and time zone active (call it from a
        sync thread, e.g. through ``database_sync_to_async``: the activation is that thread's)."""
        with translation.override(self.language), timezone.override(self.time_zone):
            return render(*args)

    async def send_state(self, *, resync: bool) -> None:
        fills = await self.fills()
        await self.send(text_data=self.outbox.state_frame(fills, resync=resync))
        await self.pump()

    async def pump(self) -> None:
        """Send what the outbox allows; resynchronise a client that caught up after falling behind."""
        if self.outbox.wants_resync:
            await self.send_state(resync=True)
            return
        while (frame := self.outbox.next_frame()) is not None:
            await self.send(text_data=frame)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        if self.refused:
            return
        size = len(text_data.encode()) if text_data is not None else len(bytes_data or b"")
        if size > MAX_CLIENT_FRAME_BYTES:
            self.refused = True  # frames already queued behind this one are ignored
            log.info(
                "closing live socket %s: a %d-byte frame (limit %d)",
                self.scope.get("path"),
                size,
                MAX_CLIENT_FRAME_BYTES,
            )
            await self.close(code=CLOSE_MESSAGE_TOO_BIG)
            return
        try:
            message = loads(text_data or "", max_bytes=MAX_CLIENT_FRAME_BYTES)
        except JsonRefused as exc:
            if exc.reason == "too_deep":  # past the parser's depth (the size was checked above)
                self.refused = True
                await self.close(code=CLOSE_BAD_REQUEST)
                return
            log.debug("ignoring a non-JSON frame from a live socket")
            return
        if isinstance(message, dict) and message.get("type") == "ack":
            self.outbox.ack(message.get("seq"))
            await self.pump()

    # -- group messages ------------------------------------------------------------------
    async def session_ended(self, message: dict[str, Any]) -> None:
        """The user logged out of this session, or was deactivated, deleted or given a new
        password: stop streaming at once (close 4401)."""
        await self.close(code=CLOSE_UNAUTHENTICATED)

    async def live_batch(self, message: dict[str, Any]) -> None:
        events = self._events_of(message)
        if events is None:  # a batch was lost on the way: resynchronise
            await self.live_resync(message)
            return
        dropped_before = self.outbox.dropped
        try:
            await self._push(events, message)
        finally:
            self.report_dropped("client_behind", self.outbox.dropped - dropped_before)

    async def _push(self, events: list[LiveEvent], message: dict[str, Any]) -> None:
        """Queue this socket's share of ``events`` in its outbox and send what it allows."""
        fell_behind = False
        for event in events:
            if self.in_group(event) and self.wants(event):
                text = event.texts.get(self.language)
                if text is None:  # rendered before this socket's language was in use
                    await self._resync()
                    return
                if self.push_zone is not None:
                    text = live_times.in_zone(text, self.push_zone, self.language)
                fell_behind = self.outbox.push(event.key, text) or fell_behind
        if fell_behind:
            await self.send(text_data=self.outbox.behind_frame())
        await self.pump()

    def _events_of(self, message: dict[str, Any]) -> list[LiveEvent] | None:
        """The batch's events, or None when this consumer missed one (a number skipped, or the
        shared batch already left the sink's ring)."""
        sink, number = message.get("sink"), message.get("g")
        last = self.last_numbers.get(sink)
        self.last_numbers[sink] = number
        if last is not None and number != last + 1:
            missed = number - last - 1 if isinstance(number, int) and number > last else 1
            self.report_dropped("layer_missed", missed)
            return None
        if "texts" in message:
            return unpack(message)
        events = get_live_sink().published(message["n"])
        if events is None:
            self.report_dropped("ring_missed", 1)
        return events

    def in_group(self, event: LiveEvent) -> bool:
        """Whether ``event`` belongs to this socket's group (a shared batch holds every group's)."""
        if self.group is None or self.group == LIVE_GROUP:
            return True
        if self.group.startswith("task."):
            return event.task_id == self.group[5:]
        return event.project_id == self.group[8:]

    async def live_resync(self, message: dict[str, Any]) -> None:
        """The sink dropped events (overload): resynchronise from the database."""
        dropped_before = self.outbox.dropped
        try:
            await self._resync()
        finally:
            self.report_dropped("client_behind", self.outbox.dropped - dropped_before)

    async def _resync(self) -> None:
        """Drop what is pending, tell the client (``behind``) and resynchronise it once it has
        acknowledged what was sent."""
        if not self.outbox.behind:
            self.outbox.mark_lost()
            await self.send(text_data=self.outbox.behind_frame())
        await self.pump()


class LiveConsumer(LiveSocket):
    """``/ws/live/``: everything the user may see, under the page's filters (US-04, US-05)."""

    filters: LiveFilters

    async def authorize(self, user: Any) -> int | None:
        params = parse_qs(self.scope.get("query_string", b"").decode("latin-1"))
        try:
            self.filters = LiveFilters.parse(params)
        except FilterError:
            return CLOSE_BAD_REQUEST
        if self.filters.task:
            if await database_sync_to_async(_visible_task)(user, self.filters.task) is None:
                return CLOSE_NOT_FOUND
            self.group = task_group(self.filters.task)
        elif self.filters.project:
            self.group = project_group(self.filters.project)
        else:
            self.group = LIVE_GROUP
        return None

    async def fills(self) -> list[dict[str, str]]:
        user = self.scope["user"]
        return await database_sync_to_async(self.in_language)(live_state.live_fills, user, self.filters)

    def wants(self, event: LiveEvent) -> bool:
        if not super().wants(event):
            return False
        if event.kind == "artifact":
            return False
        return self.filters.matches(event.kind, event.roles, event.message_type)


class TaskConsumer(LiveSocket):
    """``/ws/tasks/<task_id>/``: one task's status, agents, confirmations, artifacts and messages."""

    task: Task

    async def authorize(self, user: Any) -> int | None:
        task_id = self.scope["url_route"]["kwargs"]["task_id"]
        task = await database_sync_to_async(_visible_task)(user, task_id)
        if task is None:
            return CLOSE_NOT_FOUND
        self.task = task
        self.group = task_group(task.id)
        return None

    async def fills(self) -> list[dict[str, str]]:
        # Read the task again: a resync after the task finished must show its final status,
        # not the one it had when the socket connected.
        await database_sync_to_async(self.task.refresh_from_db)()
        return await database_sync_to_async(self.in_language)(live_state.task_fills, self.scope["user"], self.task)

    def wants(self, event: LiveEvent) -> bool:
        return super().wants(event) and event.kind not in ("alert", "config_change")
