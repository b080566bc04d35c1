"""Routing strategies (PRD §4.4): by_role, by_instance, least_busy; the concurrency limit."""

from __future__ import annotations

import asyncio

from teamclaw.runtime import Constraints, ErrorCode, InvokeRequest, RoutingStrategy
from tests.factories import small_snapshot
from tests.runtime.conftest import settle


def gated(h):
    gate = asyncio.Event()

    async def wait_gate(call):
        await gate.wait()
        return {"text": call.instance.instance_id}

    h.handle("echo", wait_gate)
    return gate


async def test_by_role_reuses_an_idle_instance(harness_factory):
    h = harness_factory(small_snapshot())
    gate = gated(h)
    gate.set()
    first = await h.runtime.invoke(InvokeRequest("echo", {"text": "x"}), from_role="a")
    second = await h.runtime.invoke(InvokeRequest("echo", {"text": "x"}), from_role="a")
    assert first.from_instance == second.from_instance
    assert len(h.runtime.pool.alive("b")) == 1


async def test_by_role_spawns_up_to_the_limit_then_queues_on_the_least_loaded(harness_factory):
    h = harness_factory(small_snapshot())  # limit 4 (PRD §4.7 default)
    gate = gated(h)
    tasks = [
        asyncio.create_task(h.runtime.invoke(InvokeRequest("echo", {"text": str(i)}), from_role="a")) for i in range(6)
    ]
    await settle()
    instances = h.runtime.pool.alive("b")
    assert len(instances) == 4
    assert sorted(i.load for i in instances) == [1, 1, 2, 2]
    gate.set()
    results = await asyncio.gather(*tasks)
    assert all(r.success for r in results)
    assert len({r.from_instance for r in results}) == 4


async def test_the_limit_follows_the_role_constraint(harness_factory):
    h = harness_factory(small_snapshot(constraints=Constraints(max_concurrent_instances=2)))
    gate = gated(h)
    tasks = [
        asyncio.create_task(h.runtime.invoke(InvokeRequest("echo", {"text": "x"}), from_role="a")) for _ in range(5)
    ]
    await settle()
    assert len(h.runtime.pool.alive("b")) == 2
    gate.set()
    await asyncio.gather(*tasks)


async def test_by_instance_targets_that_instance_and_refuses_unknown_or_terminated_ones(harness_factory):
    h = harness_factory(small_snapshot())
    gate = gated(h)
    gate.set()
    one = h.runtime.spawn("b")
    two = h.runtime.spawn("b")
    result = await h.runtime.invoke(
        InvokeRequest("echo", {"text": "x"}, target_instance_id=two.instance_id), from_role="a"
    )
    assert result.from_instance == two.instance_id
    unknown = await h.runtime.invoke(
        InvokeRequest("echo", {"text": "x"}, target_instance_id="b-nothere"), from_role="a"
    )
    assert unknown.error.code == ErrorCode.UNAVAILABLE
    assert unknown.attempts == 1
    h.runtime.terminate(one.instance_id)
    gone = await h.runtime.invoke(
        InvokeRequest("echo", {"text": "x"}, target_instance_id=one.instance_id), from_role="a"
    )
    assert gone.error.code == ErrorCode.UNAVAILABLE
    assert "terminated" in gone.error.message


async def test_least_busy_picks_the_instance_with_fewest_queued_and_in_flight(harness_factory):
    h = harness_factory(small_snapshot())
    gate = gated(h)
    busy = h.runtime.spawn("b")
    quiet = h.runtime.spawn("b")
    load = [
        asyncio.create_task(
            h.runtime.invoke(InvokeRequest("echo", {"text": "x"}, target_instance_id=busy.instance_id), from_role="a")
        )
        for _ in range(3)
    ]
    await settle()
    assert busy.load == 3
    assert quiet.load == 0
    chosen = asyncio.create_task(
        h.runtime.invoke(InvokeRequest("echo", {"text": "x"}, routing=RoutingStrategy.LEAST_BUSY), from_role="a")
    )
    await settle()
    gate.set()
    assert (await chosen).from_instance == quiet.instance_id
    await asyncio.gather(*load)


async def test_terminating_an_instance_releases_its_queued_callers(harness_factory):
    h = harness_factory(small_snapshot(constraints=Constraints(max_concurrent_instances=1, max_retries=0)))
    gated(h)
    first = asyncio.create_task(h.runtime.invoke(InvokeRequest("echo", {"text": "1"}), from_role="a"))
    second = asyncio.create_task(h.runtime.invoke(InvokeRequest("echo", {"text": "2"}), from_role="a"))
    await settle()
    [instance] = h.runtime.pool.alive("b")
    h.runtime.terminate(instance.instance_id)
    await settle()
    assert (await second).error.code == ErrorCode.UNAVAILABLE
    first.cancel()
