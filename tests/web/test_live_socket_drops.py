"""What a slow live socket drops is counted by reason and logged (issue 31): through the real
ASGI stack and channel layer (WebsocketCommunicator), read back from ``GET /api/v1/stats/live``."""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections import Counter

import pytest
from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from django.conf import settings

from monitoring.live_events import LiveEvent, pack
from monitoring.metrics import LIVE_DROP_REASONS, LiveDrops, live_drops
from tests.live_helpers import close, next_frame, open_socket
from web.sockets.consumers import LiveConsumer

pytestmark = pytest.mark.django_db(transaction=True)

DROP_LINE = re.compile(r"(\d+) (\w+)")


class Kept(logging.Handler):
    """Keeps the records it is handed (on the logger itself: importing the ASGI application
    sets Django's logging up again, which removes pytest's capture from the root logger)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[logging.LogRecord] = []
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)
        self.messages.append(record.getMessage())


@pytest.fixture
def drop_log(monkeypatch):
    """The drop WARNINGs of this test (other tests' lines in the same window spend no budget)."""
    monkeypatch.setattr(live_drops, "lines", 10**6)
    handler = Kept()
    live_drops.logger.addHandler(handler)
    yield handler
    live_drops.logger.removeHandler(handler)


def logged_drops(kept: Kept, who: str) -> Counter[str]:
    """``{reason: count}`` summed over the drop WARNINGs naming ``who``."""
    counts: Counter[str] = Counter()
    for record in kept.records:
        message = record.getMessage()
        if message.startswith(f"{who} dropped "):
            dropped = message[len(who) + len(" dropped ") :].split(";")[0]
            for count, reason in DROP_LINE.findall(dropped):
                counts[reason] += int(count)
    return counts


def dropped_counts(api) -> dict[str, int]:
    response = api.get("/api/v1/stats/live")
    assert response.status_code == 200, response.content
    return response.json()["dropped"]


def burst(owner_id: int, count: int) -> dict:
    """One live.batch of ``count`` events about distinct live things (nothing coalesces), as
    the sink publishes a burst it merged."""
    events = []
    for n in range(count):
        key = f"task:burst-{n}"
        text = json.dumps({"kind": "task", "key": key, "data": {}, "swap": {"html": ""}})
        texts = {code: text for code, _name in settings.LANGUAGES}
        events.append(LiveEvent(key, "task", f"burst-{n}", "", owner_id, False, [], "", False, texts))
    return {"type": "live.batch", "sink": "burst", "g": 1, **pack(events)}


async def test_a_stalled_client_under_a_burst_has_every_dropped_event_counted_and_logged(
    runtime_host, staff_user, api, drop_log, monkeypatch
):
    monkeypatch.setattr(LiveConsumer, "outbox_options", {"window": 1, "frame_events": 2, "max_pending": 4})
    before = await sync_to_async(dropped_counts)(api)
    socket, connected, _ = await open_socket("/ws/live/", staff_user)
    assert connected
    state = await next_frame(socket, ack=False)  # never acknowledged: the client is stalled
    assert state["dropped"] == 0
    layer = get_channel_layer()
    sent = 30
    await layer.group_send("live", burst(staff_user.pk, sent))
    behind = await next_frame(socket, ack=False)
    assert behind["type"] == "behind"
    assert 0 < behind["dropped"] <= sent
    await socket.send_json_to({"type": "ack", "seq": behind["seq"]})
    resync = await next_frame(socket)
    assert resync["type"] == "state"
    assert resync["resync"] is True
    # Not one event of the burst was sent: the stalled client missed them all and is told so.
    assert resync["dropped"] == sent
    await close(socket)
    after = await sync_to_async(dropped_counts)(api)
    assert after["client_behind"] - before["client_behind"] == sent
    assert logged_drops(drop_log, f"live socket /ws/live/ [live] of user {staff_user.pk}") == {"client_behind": sent}


async def test_batches_the_channel_layer_drops_for_a_blocked_consumer_are_counted_and_logged(
    runtime_host, staff_user, api, drop_log, monkeypatch
):
    entered, released = asyncio.Event(), asyncio.Event()
    real_batch = LiveConsumer.live_batch

    async def blocked_batch(self, message):
        entered.set()
        await released.wait()  # the consumer is stuck: the layer queues for it up to its capacity
        await real_batch(self, message)

    monkeypatch.setattr(LiveConsumer, "live_batch", blocked_batch)
    before = await sync_to_async(dropped_counts)(api)
    socket, connected, _ = await open_socket("/ws/live/", staff_user)
    assert connected
    await next_frame(socket)
    layer = get_channel_layer()
    beyond = 7
    # Batches numbered as a sink numbers them: the first is taken by the blocked handler,
    # `capacity` wait in the channel (the last of them holds an event, so the socket sends a
    # frame once it has read them all), the next `beyond` meet a full channel (ChannelFull,
    # which group_send swallows).
    numbered = [
        {"type": "live.batch", "sink": "layer", "g": g, "meta": "[]", "texts": {}}
        for g in range(1, 1 + layer.capacity + beyond + 2)
    ]
    numbered[layer.capacity] = {**burst(staff_user.pk, 1), "sink": "layer", "g": layer.capacity + 1}
    await layer.group_send("live", numbered[0])
    await asyncio.wait_for(entered.wait(), 20)
    for message in numbered[1:-1]:
        await layer.group_send("live", message)
    released.set()
    assert (await next_frame(socket))["type"] == "events"  # every queued batch was read
    await layer.group_send("live", numbered[-1])  # the first to arrive after the gap
    assert (await next_frame(socket))["type"] == "behind"
    assert (await next_frame(socket))["resync"] is True
    await close(socket)
    after = await sync_to_async(dropped_counts)(api)
    assert after["layer_missed"] - before["layer_missed"] == beyond
    logged = logged_drops(drop_log, f"live socket /ws/live/ [live] of user {staff_user.pk}")
    assert logged["layer_missed"] == beyond


async def test_a_batch_gone_from_the_sinks_ring_is_counted(runtime_host, staff_user, api, drop_log):
    before = await sync_to_async(dropped_counts)(api)
    socket, connected, _ = await open_socket("/ws/live/", staff_user)
    assert connected
    await next_frame(socket)
    # What a socket more than RING_BATCHES behind reads: a number the ring no longer holds.
    await get_channel_layer().group_send("live", {"type": "live.batch", "sink": "ring", "g": 1, "n": 10**9})
    assert (await next_frame(socket))["type"] == "behind"
    assert (await next_frame(socket))["resync"] is True
    await close(socket)
    after = await sync_to_async(dropped_counts)(api)
    assert after["ring_missed"] - before["ring_missed"] == 1
    assert logged_drops(drop_log, f"live socket /ws/live/ [live] of user {staff_user.pk}") == {"ring_missed": 1}


def test_drop_warnings_are_rate_limited_per_socket_and_for_the_process():
    now = [0.0]
    logger = logging.getLogger("tests.live_drops")
    logger.addHandler(handler := Kept())
    records = handler.messages
    try:
        drops = LiveDrops(logger, every_s=10, lines=3, clock=lambda: now[0])
        for _ in range(50):  # a flood from one socket within the interval: one line
            drops.dropped("a", "socket a", "client_behind", 2)
        assert records == ["socket a dropped 2 client_behind; it is resynchronised from the database"]
        now[0] = 10.0  # next interval: the 49 floods since are summed into one line
        drops.dropped("a", "socket a", "layer_missed", 1)
        assert (
            records[-1] == "socket a dropped 98 client_behind, 1 layer_missed; it is resynchronised from the database"
        )
        for name in "bcde":  # many sockets at once: at most `lines` lines per interval in all
            drops.dropped(name, f"socket {name}", "client_behind", 1)
        assert len(records) == 4
        assert drops.counts()["client_behind"] == 104
        now[0] = 25.0
        drops.forget("e")  # e's drop not logged yet is logged when it closes
        assert (
            records[-1] == "socket e dropped 1 client_behind before it closed; it is resynchronised from the database"
        )
        drops.forget("e")
        assert len(records) == 5
        with pytest.raises(ValueError):
            drops.dropped("a", "socket a", "gossip", 1)
    finally:
        logger.removeHandler(handler)


def test_the_live_counters_are_for_staff_only(api, client, viewer_user):
    body = api.get("/api/v1/stats/live").json()
    assert set(body["dropped"]) == set(LIVE_DROP_REASONS)
    client.force_login(viewer_user)
    assert client.get("/api/v1/stats/live").status_code == 403
