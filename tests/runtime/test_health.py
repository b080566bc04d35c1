"""Heartbeats (PRD §4.2): every 30 s; 90 s of silence makes capabilities unavailable."""

from __future__ import annotations

import asyncio

from teamclaw.runtime import Constraints, ErrorCode, EventKind, InvokeRequest
from tests.factories import small_snapshot
from tests.runtime.conftest import settle


async def echo(call):
    return {"text": call.params["text"]}


async def test_silence_past_90_s_makes_capabilities_unavailable_until_the_next_beat(harness_factory):
    snapshot = small_snapshot(constraints=Constraints(max_concurrent_instances=1, max_retries=0))
    h = harness_factory(snapshot)
    h.handle("echo", echo)
    instance = h.runtime.spawn("b")
    assert h.runtime.capability_health(snapshot, "echo")["status"] == "available"
    h.clock.advance(89)
    assert h.runtime.check_health() == []
    h.clock.advance(2)
    assert h.runtime.check_health() == [instance]
    health = h.runtime.capability_health(snapshot, "echo")
    assert health["status"] == "unavailable"
    assert health["instances"][0]["healthy"] is False
    result = await h.runtime.invoke(InvokeRequest("echo", {"text": "x"}), from_role="a")
    assert result.error.code == ErrorCode.UNAVAILABLE
    h.runtime.heartbeat(instance.instance_id)
    assert h.runtime.capability_health(snapshot, "echo")["status"] == "available"
    assert (await h.runtime.invoke(InvokeRequest("echo", {"text": "x"}), from_role="a")).success
    alerts = [e.details["status"] for e in h.sink.events if e.kind == EventKind.ALERT]
    assert alerts == ["unavailable", "available"]


async def test_an_unhealthy_instance_gets_no_traffic_while_a_healthy_one_can_be_spawned(harness_factory):
    h = harness_factory(small_snapshot())
    h.handle("echo", echo)
    stale = h.runtime.spawn("b")
    h.clock.advance(91)
    h.runtime.check_health()
    result = await h.runtime.invoke(InvokeRequest("echo", {"text": "x"}), from_role="a")
    assert result.success
    assert result.from_instance != stale.instance_id


async def test_the_health_loop_beats_for_live_instances_and_flags_silent_ones(harness_factory):
    h = harness_factory(small_snapshot(), heartbeat_interval_s=30, heartbeat_timeout_s=90)
    await h.runtime.start()
    beating = h.runtime.spawn("b")
    silent = h.runtime.spawn("b")
    silent.auto_heartbeat = False  # e.g. a worker in another process that died
    await h.advance(95, step=5)
    assert beating.healthy
    assert not silent.healthy
    assert h.clock.now() - beating.last_heartbeat <= 30


async def test_a_call_that_cannot_reach_a_healthy_instance_is_retried_then_reported(harness_factory):
    h = harness_factory(small_snapshot(constraints=Constraints(max_concurrent_instances=1)), backoff_base_s=0.1)
    h.handle("echo", echo)
    h.runtime.spawn("b")
    h.clock.advance(91)
    h.runtime.check_health()
    task = asyncio.create_task(h.runtime.invoke(InvokeRequest("echo", {"text": "x"}), from_role="a"))
    await settle()
    await h.advance(2, step=0.1)
    result = await task
    assert result.error.code == ErrorCode.UNAVAILABLE
    assert result.attempts == 4
