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


async def test_entries_to_a_self_invoking_role_leave_one_instance_for_the_calls_inside_them(harness_factory):
    """Four tasks enter a role that asks itself for help (main's question_aggregation) while
    each holds its instance: were all four instances running entries, the fourth helper call
    would find every instance waiting on it (a deadlock refused). The last instance is kept
    for the calls inside the tasks, so the fourth entry queues and every task completes."""
    h = harness_factory(small_snapshot(allowed=[("a", "b"), ("b", "b")]))  # limit 4 (PRD §4.7)
    gate = asyncio.Event()
    inner_results = []

    async def entry_then_help(call):
        if call.params["text"] == "help":
            return {"text": "helped"}
        await gate.wait()
        inner = await call.invoke("echo", {"text": "help"}, target_role="b")
        inner_results.append(inner)
        return {"text": "done"}

    h.handle("echo", entry_then_help)
    tasks = [
        asyncio.create_task(h.runtime.invoke(InvokeRequest("echo", {"text": f"task {n}"}), from_role="a"))
        for n in range(4)
    ]
    await settle()
    instances = h.runtime.pool.alive("b")
    assert len(instances) == 3  # the fourth entry waits behind one of them
    assert sorted(i.load for i in instances) == [1, 1, 2]
    gate.set()
    results = await asyncio.wait_for(asyncio.gather(*tasks), 10)
    assert all(r.success for r in results), [r.error for r in results]
    assert all(r.success for r in inner_results), [r.error for r in inner_results]
    assert len(h.runtime.pool.alive("b")) <= 4


async def test_entries_to_a_role_that_never_invokes_itself_use_every_instance(harness_factory):
    h = harness_factory(small_snapshot())  # b may not invoke b: nothing to keep an instance for
    gate = gated(h)
    tasks = [
        asyncio.create_task(h.runtime.invoke(InvokeRequest("echo", {"text": str(i)}), from_role="a")) for i in range(4)
    ]
    await settle()
    assert len(h.runtime.pool.alive("b")) == 4
    gate.set()
    await asyncio.gather(*tasks)


async def test_a_role_limited_to_one_instance_that_asks_itself_for_help_is_told_why_at_once(harness_factory):
    h = harness_factory(
        small_snapshot(allowed=[("a", "b"), ("b", "b")], constraints=Constraints(max_concurrent_instances=1))
    )
    inner_results = []

    async def entry_then_help(call):
        if call.params["text"] == "help":
            return {"text": "helped"}
        inner_results.append(await call.invoke("echo", {"text": "help"}, target_role="b"))
        return {"text": "done"}

    h.handle("echo", entry_then_help)
    result = await asyncio.wait_for(h.runtime.invoke(InvokeRequest("echo", {"text": "task"}), from_role="a"), 5)
    assert result.success
    [inner] = inner_results
    assert inner.error.code == ErrorCode.UNAVAILABLE and inner.error.details["reason"] == "limit_too_low"
    assert "raise the limit to 2" in inner.error.message and inner.attempts == 1


async def test_a_call_inside_a_task_never_queues_behind_an_instance_running_an_entry(harness_factory):
    """b may invoke b, limit 3: two entries run, a helper serves a help call; a second help
    call queues behind the helper (or a new instance), never behind the other entry, whose
    task could wait on it in turn."""
    h = harness_factory(
        small_snapshot(allowed=[("a", "b"), ("b", "b")], constraints=Constraints(max_concurrent_instances=3))
    )
    entries_go, help_go = asyncio.Event(), asyncio.Event()
    served_by: dict[str, str] = {}

    async def handler(call):
        text = call.params["text"]
        if text.startswith("help"):
            await help_go.wait()
            served_by[text] = call.instance.instance_id
            return {"text": "helped"}
        await entries_go.wait()
        inner = await call.invoke("echo", {"text": f"help {text}"}, target_role="b")
        return {"text": inner.data["text"] if inner.success else inner.error.message}

    h.handle("echo", handler)
    tasks = [
        asyncio.create_task(h.runtime.invoke(InvokeRequest("echo", {"text": t}), from_role="a")) for t in ("t1", "t2")
    ]
    await settle()
    entry_instances = {i.instance_id for i in h.runtime.pool.alive("b")}
    assert len(entry_instances) == 2
    entries_go.set()
    await settle()
    help_go.set()
    results = await asyncio.wait_for(asyncio.gather(*tasks), 10)
    assert [r.data for r in results] == [{"text": "helped"}] * 2
    assert not set(served_by.values()) & entry_instances, served_by


def self_helping_b(harness_factory, *, limit: int, routing: str | None = None, wait_first: bool = False):
    """A runtime whose b may invoke b (as main does), limit ``limit``, and the gate its tasks
    wait on. ``echo`` "help" answers with the instance id; "wait" waits for the gate; any
    other text asks b for help (``routing``) and answers with the helper's id, after
    waiting for the gate first when ``wait_first``."""
    snapshot = small_snapshot(
        allowed=[("a", "b"), ("b", "b")], constraints=Constraints(max_retries=0, max_concurrent_instances=limit)
    )
    h = harness_factory(snapshot)
    gate = asyncio.Event()

    async def echo(call):
        if call.params["text"] == "help":
            return {"text": call.instance.instance_id}
        if call.params["text"] == "wait" or wait_first:
            await gate.wait()
            if call.params["text"] == "wait":
                return {"text": call.instance.instance_id}
        inner = await call.invoke("echo", {"text": "help"}, target_role="b", routing=routing, timeout=30)
        return {"text": inner.data["text"] if inner.success else inner.error.message}

    h.handle("echo", echo)
    return h, gate


async def test_a_least_busy_call_inside_a_task_never_queues_behind_another_tasks_entry(harness_factory):
    """b may invoke b (as main does), limit 3, one runtime. Task two's entry holds its
    instance; task one asks b for help ``least_busy``. The help takes a new instance and is
    answered while task two still runs. Before, least_busy queued it behind task two's whole
    task (the least loaded instance it does not wait on), the rule ``by_role`` keeps."""
    h, gate = self_helping_b(harness_factory, limit=3, routing="least_busy")
    waiting = asyncio.create_task(h.runtime.invoke(InvokeRequest("echo", {"text": "wait"}), from_role="a"))
    await settle()
    asking = asyncio.create_task(h.runtime.invoke(InvokeRequest("echo", {"text": "ask"}), from_role="a"))
    result = await asyncio.wait_for(asking, 2)
    assert result.success, result.error
    assert not waiting.done()
    helper = result.data["text"]
    assert helper not in (result.from_instance, next(i.instance_id for i in h.runtime.pool.alive("b") if not i.idle))
    gate.set()
    assert (await waiting).success


async def test_least_busy_entries_to_a_role_that_invokes_itself_leave_an_instance_for_its_tasks(harness_factory):
    """b may invoke b, limit 2: with one task's entry running, a second entry routed
    ``least_busy`` queues behind it (the entries' cap, limit - 1) rather than take the only
    other instance, so the first task's help call is answered."""
    h, gate = self_helping_b(harness_factory, limit=2, wait_first=True)
    least_busy = RoutingStrategy.LEAST_BUSY
    one = asyncio.create_task(
        h.runtime.invoke(InvokeRequest("echo", {"text": "one"}, routing=least_busy), from_role="a")
    )
    await settle()
    helper = h.runtime.spawn("b")  # an idle instance: the second entry may not take it
    two = asyncio.create_task(
        h.runtime.invoke(InvokeRequest("echo", {"text": "two"}, routing=least_busy), from_role="a")
    )
    await settle()
    assert helper.idle
    gate.set()
    first, second = await asyncio.wait_for(asyncio.gather(one, two), 2)
    assert first.success and second.success, (first.error, second.error)
    assert first.data["text"] == helper.instance_id
    assert second.from_instance == first.from_instance
