"""The live sockets over channels-redis (REDIS_URL): the sink sends from its own loop and the
whole batch travels through Redis (DESIGN.md §6 scale-out)."""

from __future__ import annotations

import os
import socket as sockets

import pytest
from asgiref.sync import sync_to_async

from runs.tasks import start_task
from teamclaw.env import redis_channel_layer
from tests.helpers import missing_service
from tests.live_helpers import close, collect_until, next_frame, open_socket, task_finished

pytestmark = [pytest.mark.redis, pytest.mark.django_db(transaction=True)]

REDIS = os.environ.get("TEAMCLAW_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")


def redis_reachable() -> bool:
    try:
        with sockets.create_connection(("127.0.0.1", 6379), timeout=0.5):
            return True
    except OSError:
        return False


@pytest.fixture
def redis_layer(settings):
    if not redis_reachable():
        missing_service(f"Redis at {REDIS}")
    settings.CHANNEL_LAYERS = {"default": redis_channel_layer(REDIS, prefix=f"teamclaw-test-{os.getpid()}")}


async def test_events_reach_sockets_through_redis(redis_layer, runtime_host, staff_user):
    from channels.layers import get_channel_layer
    from channels_redis.core import RedisChannelLayer

    assert isinstance(get_channel_layer(), RedisChannelLayer)
    socket, connected, _ = await open_socket("/ws/live/", staff_user)
    assert connected
    await next_frame(socket)
    task = await sync_to_async(start_task)(workflow="generic", task_description="Over Redis", user=staff_user)
    events = await collect_until(socket, task_finished(task.id))
    assert {"message", "context", "task"} <= {e["kind"] for e in events}
    assert all(e["task_id"] == task.id for e in events if e["task_id"])
    await close(socket)


async def test_an_idle_socket_stays_open_past_the_redis_clients_read_timeout(redis_layer, runtime_host, staff_user):
    """A live socket with nothing to send for longer than redis-py's default 5 s read timeout
    stays open and still gets the next event. Before, the layer's blocking receive timed out
    on the client, the consumer crashed and the browser saw 1011 about every 5 s."""
    import asyncio

    socket, connected, _ = await open_socket("/ws/live/", staff_user)
    assert connected
    await next_frame(socket)
    await asyncio.sleep(7)  # idle: longer than the 5 s default
    assert await socket.receive_nothing(timeout=0.1)  # no close frame came meanwhile
    task = await sync_to_async(start_task)(workflow="generic", task_description="After a quiet while", user=staff_user)
    events = await collect_until(socket, task_finished(task.id))
    assert "task" in {e["kind"] for e in events}
    await close(socket)
