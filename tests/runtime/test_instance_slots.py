"""Instance slots shared by runtimes (PRD §4.7 max instances per role; issue 13;
``teamclaw.runtime.slots``, ``InstanceWorkers.place`` and ``settle_slots``).

Two runtimes on ManualClocks share one in-memory slot table (what ``runs.instance_slots``
keeps in the database, without the database: the database version is tested in
``tests/runs/test_instance_slots.py``). A call whose role has no free slot anywhere goes to an
instance of the role in its own runtime, else waits for one and times out with ``timeout``
(``no_instance_slot``); a slot given back while it waits is taken; an idle instance whose
slot is wanted is retired, or, with a context open in a running task, hands it over (its
context ends completed); an instance whose slot was lost is terminated.
"""

from __future__ import annotations

import asyncio
import dataclasses

from teamclaw.runtime import Constraints, ErrorCode, EventSubscription, HookEvent, InvokeRequest, RoutingStrategy
from teamclaw.runtime.events import SnapshotTaken
from teamclaw.runtime.slots import SlotUse, slot_order
from tests.factories import echo_card, small_snapshot
from tests.runtime.conftest import settle


class SlotTable:
    """The slots of every runtime: (role, index) -> (owner, instance id)."""

    def __init__(self) -> None:
        self.rows: dict[tuple[str, int], tuple[str, str]] = {}
        self.wanted: list[str] = []
        self.stopped_wanting: list[str] = []

    def held(self, role: str) -> int:
        return sum(1 for (r, _) in self.rows if r == role)


class TableSlots:
    """One runtime's view of a ``SlotTable`` (an ``InstanceSlots``)."""

    shared = True
    retry_s = 1.0

    def __init__(self, table: SlotTable, owner: str) -> None:
        self.table = table
        self.owner = owner

    async def acquire(self, role: str, limit: int, instance_id: str, *, use: SlotUse = SlotUse.ANY) -> int | None:
        await asyncio.sleep(0)  # a store answers on a later loop step
        for index in slot_order(limit, use):
            if (role, index) not in self.table.rows:
                self.table.rows[(role, index)] = (self.owner, instance_id)
                return index
        return None

    async def want(self, role: str, limit: int, *, use: SlotUse = SlotUse.ANY) -> None:
        await asyncio.sleep(0)
        self.table.wanted.append(role)

    def stop_wanting(self, role: str) -> None:
        self.table.stopped_wanting.append(role)

    def release(self, instance_id: str) -> None:
        for key, (owner, held_by) in list(self.table.rows.items()):
            if owner == self.owner and held_by == instance_id:
                del self.table.rows[key]


def one_instance_of_b(limit: int = 1):
    return small_snapshot(constraints=Constraints(max_concurrent_instances=limit))


def gated(h):
    gate = asyncio.Event()

    async def wait_gate(call):
        await gate.wait()
        return {"text": call.instance.instance_id}

    h.handle("echo", wait_gate)
    return gate


def pair(harness_factory, limit: int = 1, per_project: tuple[str, ...] = ()):
    """Two runtimes sharing a slot table; the tasks of the projects ``per_project`` share
    their instances per project (``teamclaw.runtime.scopes``), the others count their own."""
    table = SlotTable()
    options = {"instance_limit_per_project": per_project}
    first = harness_factory(one_instance_of_b(limit), instance_slots=TableSlots(table, "first"), **options)
    second = harness_factory(one_instance_of_b(limit), instance_slots=TableSlots(table, "second"), **options)
    return table, first, second


def call(h, text: str, timeout: float | None = None) -> asyncio.Task:
    request = InvokeRequest("echo", {"text": text}, timeout=timeout)
    return asyncio.create_task(h.runtime.invoke(request, from_role="a"))


def live(*harnesses) -> int:
    return sum(len(h.runtime.pool.alive("b")) for h in harnesses)


async def ask_operator(call) -> object:
    """Ask the operator interview question ``q`` (an hour to answer): the instance is held
    until an answer comes (PRD §4.6 ``waiting_user``)."""
    return await call.ask_operator(
        "interview",
        {"questions": [{"id": "q", "text": "?"}], "answer_schema": {"type": "object"}},
        timeout_s=3600,
        question="Answer q",
    )


async def test_a_call_waits_for_a_slot_held_elsewhere_then_times_out_without_retrying(harness_factory):
    table, first, second = pair(harness_factory)
    gate = gated(first)
    gated(second)
    holding = call(first, "one")
    await settle()
    assert live(first, second) == 1 and table.held("b") == 1
    waiting = call(second, "two", timeout=5)
    for _ in range(7):
        await second.advance(1)
        assert live(first, second) == 1
    result = await waiting
    assert not result.success
    assert result.error.code == ErrorCode.TIMEOUT
    assert result.error.details["reason"] == "no_instance_slot"
    assert result.attempts == 1  # it waited its whole timeout: not retried
    assert "second" not in {owner for owner, _ in table.rows.values()}
    assert "b" in table.wanted  # the holder was told another runtime waits
    assert table.stopped_wanting == ["b"]  # and, once it gave up, that it waits no more
    gate.set()
    assert (await holding).success


async def test_a_slot_given_back_while_a_call_waits_is_taken(harness_factory):
    table, first, second = pair(harness_factory)
    gate = gated(first)
    gate_second = gated(second)
    gate_second.set()
    holding = call(first, "one")
    await settle()
    waiting = call(second, "two", timeout=30)
    await second.advance(2)
    assert not waiting.done()
    gate.set()
    assert (await holding).success
    held_by = first.runtime.pool.alive("b")[0]
    # The holder's renewal says the slot is wanted: its idle instance is retired.
    assert first.runtime.settle_slots([], [held_by.instance_id]) == [held_by.instance_id]
    assert live(first, second) == 0 and table.held("b") == 0
    await second.advance(1)
    result = await waiting
    assert result.success, result.error
    assert result.from_instance in second.runtime.instances
    assert live(first, second) == 1
    assert table.rows[("b", 0)] == ("second", result.from_instance)


async def test_an_idle_instance_with_a_context_open_in_a_running_task_hands_its_wanted_slot_over(harness_factory):
    """Its slot is wanted by another runtime: the instance's context in the running task
    ends ``completed`` (with its final snapshot), the instance goes and its slot is freed.
    Before, it kept the slot until its task ended while the other runtime's call waited
    out its timeout. (A project whose tasks share their instances: a task's own are never
    wanted elsewhere.)"""
    table, first, _ = pair(harness_factory, per_project=("shop",))
    gated(first).set()
    task = await first.runtime.begin_task(entry_role="a", project_id="shop")
    result = await first.runtime.invoke(InvokeRequest("echo", {"text": "x"}), from_role="a", task_id=task.task_id)
    assert result.success
    assert table.held("b@shop") == 1
    context = first.runtime.tasks[task.task_id].contexts[result.from_instance]
    assert context.status == "ready"
    assert first.runtime.settle_slots([], []) == []  # nobody waits: it stays
    assert first.runtime.settle_slots([], [result.from_instance]) == [result.from_instance]
    assert not first.runtime.instances[result.from_instance].alive
    assert table.held("b@shop") == 0
    assert context.status == "completed"  # not terminated: it finished what it was given
    finals = [e.snapshot for e in first.sink.of(SnapshotTaken) if e.snapshot.context_id == context.id]
    assert finals[-1].trigger == "completed" and finals[-1].label == "final state"
    # The task goes on: its next call to b gets a new instance (and a new context).
    again = await first.runtime.invoke(InvokeRequest("echo", {"text": "y"}), from_role="a", task_id=task.task_id)
    assert again.success and again.from_instance != result.from_instance
    first.runtime.end_task(task.task_id, "completed")


async def test_one_instance_per_role_and_renewal_hands_its_slot_over(harness_factory):
    """Two idle instances of b with contexts open in running tasks, both wanted: one renewal
    hands one over (the waiting runtime may need only one), the next renewal the other. An
    instance retirable without ending anything goes first, and then none is handed over."""
    _, first, _ = pair(harness_factory, limit=3)
    gated(first).set()
    tasks = [await first.runtime.begin_task(entry_role="a") for _ in range(2)]
    helpers = []
    for task in tasks:
        helper = first.runtime.workers.spawn("b", slot=len(helpers))
        first.runtime.book.context_for(helper, first.runtime.tasks[task.task_id])
        helpers.append(helper.instance_id)
    spare = first.runtime.workers.spawn("b", slot=2).instance_id  # no context anywhere
    assert first.runtime.settle_slots([], [*helpers, spare]) == [spare]
    handed = first.runtime.settle_slots([], helpers)
    assert len(handed) == 1
    assert first.runtime.settle_slots([], helpers) == [h for h in helpers if h not in handed]
    for task in tasks:
        first.runtime.end_task(task.task_id, "completed")


async def test_an_instance_whose_slot_was_lost_is_terminated(harness_factory):
    table, first, _ = pair(harness_factory)
    gated(first).set()
    result = await first.runtime.invoke(InvokeRequest("echo", {"text": "x"}), from_role="a")
    table.rows[("b", 0)] = ("another", "b-elsewhere")  # taken over while this runtime was paused
    assert first.runtime.settle_slots([result.from_instance], []) == [result.from_instance]
    assert not first.runtime.instances[result.from_instance].alive
    assert table.rows[("b", 0)] == ("another", "b-elsewhere")  # not freed: it was not this runtime's


async def test_with_every_slot_held_a_call_queues_on_an_instance_of_its_own_runtime(harness_factory):
    table, first, second = pair(harness_factory, limit=2)
    gate_first, gate_second = gated(first), gated(second)
    calls = [call(first, "one"), call(second, "two")]
    await settle()
    assert table.held("b") == 2
    third = call(second, "three", timeout=30)  # its runtime is under 2 here, but no slot is free
    await settle()
    assert live(first, second) == 2
    own = second.runtime.pool.alive("b")[0]
    assert own.load == 2  # queued behind the call it runs, not waiting for a slot
    assert table.wanted == []  # so nobody is told it waits (no holder hands anything over)
    gate_first.set()
    gate_second.set()
    results = await asyncio.gather(*calls, third)
    assert all(r.success for r in results)
    assert results[2].from_instance == own.instance_id


def held_team(harness_factory, table: SlotTable):
    """b limited to one instance on shared slots; ``ask`` waits for an operator once ``gate`` is set."""
    h = harness_factory(
        small_snapshot(constraints=Constraints(max_retries=0, max_concurrent_instances=1)),
        instance_slots=TableSlots(table, "one"),
    )
    gate = asyncio.Event()

    async def echo(call):
        if call.params["text"] == "ask":
            await gate.wait()
            answer = await ask_operator(call)
            return {"text": answer.values["answers"]["q"] if answer else "none"}
        return {"text": call.params["text"]}

    h.handle("echo", echo)
    return h, gate


async def test_an_instance_held_by_an_operator_gives_its_slot_up_and_is_retired_once_idle(harness_factory):
    # PRD §4.6 waiting_user: a held instance is not counted against the limit, with shared slots too.
    table = SlotTable()
    h, gate = held_team(harness_factory, table)
    gate.set()
    asking = call(h, "ask")
    await settle()
    [held] = h.runtime.pool.alive("b")
    assert held.waiting_operator and held.slot is None and held.slot_given_up  # given up once held
    assert table.held("b") == 0
    result = await asyncio.wait_for(call(h, "hi"), 5)
    assert result.success and result.from_instance != held.instance_id  # in the slot it gave up
    assert table.rows[("b", 0)] == ("one", result.from_instance)
    [confirmation] = h.runtime.confirmations.values()
    h.runtime.resolve_confirmation(confirmation.id, True, "ops", {"answers": {"q": "yes"}})
    assert (await asyncio.wait_for(asking, 5)).data == {"text": "yes"}
    assert h.runtime.settle_slots([], []) == [held.instance_id]  # idle again, without a slot
    assert [i.instance_id for i in h.runtime.pool.alive("b")] == [result.from_instance]


async def test_a_request_queued_behind_a_held_instance_moves_to_one_spawned_in_the_freed_slot(harness_factory):
    table = SlotTable()
    h, gate = held_team(harness_factory, table)
    asking = call(h, "ask")
    await settle()
    other = call(h, "hello")  # queued behind the busy only instance (limit 1)
    await settle()
    assert not other.done()
    gate.set()  # now it waits for an operator: the request moves, to an instance in its slot
    result = await asyncio.wait_for(other, 5)
    assert result.success and result.data == {"text": "hello"}
    assert table.rows[("b", 0)] == ("one", result.from_instance)
    [confirmation] = h.runtime.confirmations.values()
    h.runtime.resolve_confirmation(confirmation.id, True, "ops", {"answers": {"q": "yes"}})
    assert (await asyncio.wait_for(asking, 5)).data == {"text": "yes"}


async def test_a_lowered_limit_retires_the_instances_past_it_once_they_are_idle(harness_factory):
    """An operator lowers b's limit from 3 to 1 while three instances run (PRD §4.7): the
    renewal after it retires the idle ones in slots 1 and 2, keeps the busy one until it
    finishes, and never touches the instance in slot 0."""
    table, first, _ = pair(harness_factory, limit=3)
    gate = gated(first)
    calls = [call(first, str(n)) for n in range(3)]
    await settle()
    by_slot = {i.slot: i for i in first.runtime.pool.alive("b")}
    assert sorted(by_slot) == [0, 1, 2]
    stale = small_snapshot(version=1, constraints=Constraints(max_concurrent_instances=3))
    first.runtime.set_snapshot(dataclasses.replace(stale, project_id="p1"))  # a project's, loaded before
    first.runtime.set_snapshot(small_snapshot(version=2, constraints=Constraints(max_concurrent_instances=1)))
    assert first.runtime.role_limits()["b"] == 1  # the project's snapshot predates the change
    assert first.runtime.settle_slots([], []) == []  # all three are busy: none is stopped
    gate.set()
    assert all(r.success for r in await asyncio.gather(*calls))
    busy = asyncio.Event()

    async def hold(call_):
        await busy.wait()
        return {"text": "held"}

    first.handle("echo", hold)
    held = asyncio.create_task(
        first.runtime.invoke(
            InvokeRequest("echo", {"text": "x"}, target_instance_id=by_slot[2].instance_id), from_role="a"
        )
    )
    await settle()
    assert first.runtime.settle_slots([], []) == [by_slot[1].instance_id]  # slot 2 is busy again
    assert by_slot[0].alive and by_slot[2].alive and table.held("b") == 2
    busy.set()
    assert (await held).success
    assert first.runtime.settle_slots([], []) == [by_slot[2].instance_id]
    assert [i.instance_id for i in first.runtime.pool.alive("b")] == [by_slot[0].instance_id]
    assert table.rows == {("b", 0): ("first", by_slot[0].instance_id)}


async def test_a_task_back_from_its_operator_still_finds_a_slot_for_the_help_it_asks_of_its_role(harness_factory):
    """b may invoke b (as main does), limit 2, shared slots. A task's instance waits for its
    operator; meanwhile another task takes the other instance. When the operator answers,
    the first task asks b for help: the held instance gave its slot up as soon as it was held,
    so a helper is spawned in it instead of the call waiting for a slot that never frees."""
    table = SlotTable()
    h = harness_factory(
        small_snapshot(
            allowed=[("a", "b"), ("b", "b")], constraints=Constraints(max_retries=0, max_concurrent_instances=2)
        ),
        instance_slots=TableSlots(table, "one"),
    )
    gate = asyncio.Event()

    async def echo(call):
        text = call.params["text"]
        if text == "help":
            return {"text": "helped"}
        if text == "ask":
            await ask_operator(call)
            inner = await call.invoke("echo", {"text": "help"}, target_role="b", timeout=5)
            return {"text": inner.data["text"] if inner.success else inner.error.message}
        await gate.wait()
        return {"text": "worked"}

    h.handle("echo", echo)
    asking = call(h, "ask")
    await settle()
    [held] = h.runtime.pool.alive("b")
    assert held.waiting_operator and held.slot is None and held.slot_given_up  # given up at once
    working = call(h, "work")  # another task, on the other instance
    await settle()
    [confirmation] = h.runtime.confirmations.values()
    h.runtime.resolve_confirmation(confirmation.id, True, "ops", {"answers": {"q": "yes"}})
    await settle()
    await h.advance(6)
    result = await asyncio.wait_for(asking, 5)
    assert result.data == {"text": "helped"}, result
    gate.set()
    assert (await working).data == {"text": "worked"}
    assert table.held("b") <= 2


async def test_a_held_instance_whose_given_up_row_a_renewal_missed_is_not_taken_for_lost(harness_factory):
    """A renewal that read the rows just after a held instance gave its row back reports it
    missing; the instance is not terminated for it (its operator's answer would find nobody)."""
    table = SlotTable()
    h, gate = held_team(harness_factory, table)
    gate.set()
    asking = call(h, "ask")
    await settle()
    [held] = h.runtime.pool.alive("b")
    assert held.slot is None and held.slot_given_up
    assert h.runtime.settle_slots([held.instance_id], []) == []
    assert held.alive
    [confirmation] = h.runtime.confirmations.values()
    h.runtime.resolve_confirmation(confirmation.id, True, "ops", {"answers": {"q": "yes"}})
    assert (await asyncio.wait_for(asking, 5)).data == {"text": "yes"}


async def test_entries_on_two_runtimes_leave_the_last_slot_to_the_help_a_task_asks_of_its_role(harness_factory):
    """b may invoke b (as main does), limit 2, two runtimes sharing the slots. An entry
    arrives at each at once. Only the slot below the last may hold an entry, so the second
    entry waits, and the first task's call to b for help takes the last slot and is answered.
    Before, the second entry took the last slot, and the help call waited for a slot until
    its timeout (``no_instance_slot``) while both tasks held their instances."""
    table = SlotTable()
    snapshot = small_snapshot(
        allowed=[("a", "b"), ("b", "b")], constraints=Constraints(max_retries=0, max_concurrent_instances=2)
    )
    first = harness_factory(snapshot, instance_slots=TableSlots(table, "first"))
    second = harness_factory(snapshot, instance_slots=TableSlots(table, "second"))
    gate = asyncio.Event()

    async def echo(call):
        if call.params["text"] == "help":
            return {"text": f"helped by {call.instance.instance_id}"}
        await gate.wait()
        inner = await call.invoke("echo", {"text": "help"}, target_role="b", timeout=5)
        return {"text": inner.data["text"] if inner.success else inner.error.details.get("reason", "")}

    first.handle("echo", echo)
    second.handle("echo", echo)
    one = call(first, "task one")
    await settle()
    two = call(second, "task two", timeout=60)
    await settle()
    await second.advance(2)
    assert table.held("b") == 1 and ("b", 1) not in table.rows, table.rows  # the last slot stays free
    assert not two.done()
    gate.set()
    result = await asyncio.wait_for(one, 5)
    assert result.success and result.data["text"].startswith("helped by b-"), result
    assert table.rows[("b", 1)][0] == "first"  # the help ran in the last slot
    # The waiting runtime's stamp reaches the holder on its renewal: its idle instances go.
    idle = [i.instance_id for i in first.runtime.pool.alive("b")]
    assert sorted(first.runtime.settle_slots([], idle)) == sorted(idle)
    await second.advance(2)
    result = await asyncio.wait_for(two, 5)
    assert result.success and result.data["text"].startswith("helped by b-"), result
    assert table.held("b") <= 2


async def test_an_entry_is_not_given_the_idle_instance_in_the_last_slot(harness_factory):
    """b may invoke b, limit 2, shared slots: the idle instance spawned for a task's help in
    the last slot does not take the next entry (it would hold it for a whole task); the
    entry gets an instance of its own in the slot below."""
    table = SlotTable()
    h = harness_factory(
        small_snapshot(allowed=[("a", "b"), ("b", "b")], constraints=Constraints(max_concurrent_instances=2)),
        instance_slots=TableSlots(table, "one"),
    )

    async def echo(call):
        return {"text": call.instance.instance_id}

    h.handle("echo", echo)
    helper = h.runtime.workers.spawn("b", slot=1)
    result = await asyncio.wait_for(call(h, "entry"), 5)
    assert result.success, result.error
    assert result.from_instance != helper.instance_id
    assert h.runtime.pool.get(result.from_instance).slot == 0


async def test_a_tasks_help_call_takes_the_last_slot_and_leaves_the_entries_slots_free(harness_factory):
    """b may invoke b, limit 3, shared slots: the entry takes slot 0 and its call to b for
    help takes slot 2 (the last), not slot 1, which stays free for an entry on any worker."""
    table = SlotTable()
    h = harness_factory(
        small_snapshot(allowed=[("a", "b"), ("b", "b")], constraints=Constraints(max_concurrent_instances=3)),
        instance_slots=TableSlots(table, "one"),
    )

    async def echo(call):
        if call.params["text"] == "help":
            return {"text": call.instance.instance_id}
        inner = await call.invoke("echo", {"text": "help"}, target_role="b", timeout=5)
        return {"text": inner.data["text"] if inner.success else inner.error.message}

    h.handle("echo", echo)
    result = await asyncio.wait_for(call(h, "entry"), 5)
    assert result.success, result.error
    assert table.rows[("b", 0)] == ("one", result.from_instance)
    assert table.rows[("b", 2)] == ("one", result.data["text"])
    assert ("b", 1) not in table.rows


async def test_a_helper_that_answered_hands_the_last_slot_to_another_runtimes_task(harness_factory):
    """b may invoke b, limit 3, two runtimes, one task at each. The first task's help call
    takes the last slot and is answered; its task runs on (it waits on a gate), so the
    helper's context stays open. The second task's help call then finds every slot held:
    on the first runtime's next renewal its idle helper hands the slot over, and the second
    task is helped in it. Before, that call waited out its timeout (``no_instance_slot``)."""
    table = SlotTable()
    snapshot = small_snapshot(
        allowed=[("a", "b"), ("b", "b")], constraints=Constraints(max_retries=0, max_concurrent_instances=3)
    )
    first = harness_factory(snapshot, instance_slots=TableSlots(table, "first"))
    second = harness_factory(snapshot, instance_slots=TableSlots(table, "second"))
    helped = asyncio.Event()
    finish = asyncio.Event()

    async def echo(call):
        if call.params["text"] == "help":
            return {"text": f"helped by {call.instance.instance_id}"}
        inner = await call.invoke("echo", {"text": "help"}, target_role="b", timeout=30)
        helped.set()
        await finish.wait()
        return {"text": inner.data["text"] if inner.success else inner.error.details.get("reason", "")}

    first.handle("echo", echo)
    second.handle("echo", echo)
    one = call(first, "task one")
    await asyncio.wait_for(helped.wait(), 5)
    assert table.rows[("b", 2)][0] == "first"  # the first task's helper, idle now, in the last slot
    two = call(second, "task two", timeout=60)
    await settle()
    await second.advance(2)
    assert table.rows[("b", 1)][0] == "second" and table.held("b") == 3, table.rows
    helper = table.rows[("b", 2)][1]
    # The first runtime's renewal says its helper's slot is wanted.
    assert first.runtime.settle_slots([], [helper]) == [helper]
    await second.advance(2)
    finish.set()
    result_two = await asyncio.wait_for(two, 5)
    assert result_two.success and result_two.data["text"].startswith("helped by b-"), result_two
    assert result_two.data["text"] != f"helped by {helper}"
    result_one = await asyncio.wait_for(one, 5)
    assert result_one.success and result_one.data["text"] == f"helped by {helper}", result_one


def answered_then_working(harness_factory, table: SlotTable, limit: int = 1):
    """b on shared slots (``limit`` instances): a call whose text starts with ``ask`` waits
    for an operator, then works on until the returned event is set, and answers with the
    operator's answer to ``q``. Returns ``(harness, event)``."""
    h = harness_factory(
        small_snapshot(constraints=Constraints(max_retries=0, max_concurrent_instances=limit)),
        instance_slots=TableSlots(table, "one"),
    )
    after = asyncio.Event()

    async def echo(call_):
        if call_.params["text"].startswith("ask"):
            answer = await ask_operator(call_)
            await after.wait()  # it goes on working after the answer
            return {"text": answer.values["answers"]["q"] if answer else "none"}
        return {"text": call_.params["text"]}

    h.handle("echo", echo)
    return h, after


async def test_an_instance_back_from_its_operator_takes_a_free_slot_back(harness_factory):
    """b limited to one instance on shared slots. Held by its operator it gave its slot up
    (not counted then, PRD §4.6); once answered, it goes on with its task and takes the
    free slot back, so the limit counts it again on every worker. When another instance
    took the slot meanwhile it runs on without one (and is retired once idle)."""
    table = SlotTable()
    h, after = answered_then_working(harness_factory, table)
    asking = call(h, "ask")
    await settle()
    [held] = h.runtime.pool.alive("b")
    assert held.slot is None and held.slot_given_up and table.held("b") == 0
    [confirmation] = h.runtime.confirmations.values()
    h.runtime.resolve_confirmation(confirmation.id, True, "ops", {"answers": {"q": "yes"}})
    await settle()
    assert held.slot == 0 and not held.slot_given_up
    assert table.rows[("b", 0)] == ("one", held.instance_id)
    after.set()
    assert (await asyncio.wait_for(asking, 5)).data == {"text": "yes"}
    assert h.runtime.settle_slots([], []) == []  # an instance in its slot again, kept as any other
    assert table.rows[("b", 0)] == ("one", held.instance_id)


async def test_an_instance_back_from_its_operator_whose_slot_was_taken_runs_on_without_one(harness_factory):
    table = SlotTable()
    h, after = answered_then_working(harness_factory, table)
    asking = call(h, "ask")
    await settle()
    [held] = h.runtime.pool.alive("b")
    table.rows[("b", 0)] = ("another", "b-elsewhere")  # another worker took the slot given up
    [confirmation] = h.runtime.confirmations.values()
    h.runtime.resolve_confirmation(confirmation.id, True, "ops", {"answers": {"q": "yes"}})
    await settle()
    assert held.alive and held.slot is None and held.slot_given_up
    after.set()
    assert (await asyncio.wait_for(asking, 5)).success
    assert h.runtime.settle_slots([], []) == [held.instance_id]  # idle, without a slot: retired
    assert table.rows == {("b", 0): ("another", "b-elsewhere")}


async def test_a_handed_over_context_ends_completed_at_100_percent(harness_factory):
    """As a task's end completes its contexts: a helper that reported 40 % and answered
    ends ``completed`` at 100 % when it hands its slot over."""
    _, first, _ = pair(harness_factory)

    async def echo(call):
        call.progress(40, "halfway")
        return {"text": "x"}

    first.handle("echo", echo)
    task = await first.runtime.begin_task(entry_role="a")
    result = await first.runtime.invoke(InvokeRequest("echo", {"text": "x"}), from_role="a", task_id=task.task_id)
    context = first.runtime.tasks[task.task_id].contexts[result.from_instance]
    assert context.progress == 40
    assert first.runtime.settle_slots([], [result.from_instance]) == [result.from_instance]
    assert context.status == "completed" and context.progress == 100
    first.runtime.end_task(task.task_id, "completed")


async def test_a_hook_whose_first_target_was_handed_over_while_it_waited_for_the_next_goes_to_a_live_one(
    harness_factory,
):
    """A hook to b and c: b is routed to an idle helper with a context open in a task, then
    the hook waits for c's slot; meanwhile the helper hands its slot over. The hook goes to
    a live instance of b and its short task ends. Before, it was queued into the terminated
    helper's mailbox, acked ``received``, never run, and its task stayed open for an hour."""
    table = SlotTable()
    snapshot = small_snapshot(roles=["a", "b", "c"], constraints=Constraints(max_concurrent_instances=1))
    first = harness_factory(snapshot, instance_slots=TableSlots(table, "first"))

    async def echo(call):
        return {"text": "x"}

    first.handle("echo", echo)
    task = await first.runtime.begin_task(entry_role="a")
    result = await first.runtime.invoke(InvokeRequest("echo", {"text": "x"}), from_role="a", task_id=task.task_id)
    helper = result.from_instance
    table.rows[("c", 0)] = ("second", "c-elsewhere")  # c's only slot is held by another runtime
    hook = asyncio.create_task(first.runtime.hook(HookEvent("ping", {}, False, ["b", "c"]), from_role="a"))
    await settle()
    assert not hook.done()  # waits for c's slot
    assert first.runtime.settle_slots([], [helper]) == [helper]  # the renewal: b's slot is wanted
    del table.rows[("c", 0)]  # c's slot comes free
    await first.advance(2)
    acks = await asyncio.wait_for(hook, 5)
    assert {a.role: a.status for a in acks} == {"b": "received", "c": "received"}
    assert all(first.runtime.instances[a.instance_id].alive for a in acks)
    assert helper not in {a.instance_id for a in acks}
    await first.advance(5)
    assert not [t for t in first.runtime.tasks.values() if t.description.startswith("hook")]
    first.runtime.end_task(task.task_id, "completed")


async def test_two_instances_answered_in_one_loop_step_each_take_one_slot_back(harness_factory):
    """Two held instances answered at once: each reclaims once and holds the row it thinks
    it holds. Before, the first was scheduled twice, its second reclaim freed both its rows,
    and the two instances both believed they held slot 0."""
    table = SlotTable()
    h, after = answered_then_working(harness_factory, table, limit=3)
    one = call(h, "ask1")
    await settle()
    two = call(h, "ask2")
    await settle()
    held = h.runtime.pool.alive("b")
    assert len(held) == 2 and all(i.slot is None and i.slot_given_up for i in held)
    for confirmation in list(h.runtime.confirmations.values()):
        h.runtime.resolve_confirmation(confirmation.id, True, "ops", {"answers": {"q": "yes"}})
    await settle()
    rows = {instance_id: index for (_, index), (_, instance_id) in table.rows.items()}
    assert {i.instance_id: i.slot for i in held} == rows
    assert len(set(rows.values())) == 2
    after.set()
    await asyncio.wait_for(asyncio.gather(one, two), 5)


def self_invoking_runtime(harness_factory, table: SlotTable, limit: int = 2):
    """One runtime on ``table`` whose b may invoke b (as main does), answering echo with the
    instance id; a helper already spawned in b's last slot, idle."""
    h = harness_factory(
        small_snapshot(allowed=[("a", "b"), ("b", "b")], constraints=Constraints(max_concurrent_instances=limit)),
        instance_slots=TableSlots(table, "one"),
    )

    async def echo(call):
        return {"text": call.instance.instance_id}

    h.handle("echo", echo)
    helper = h.runtime.workers.spawn("b", slot=limit - 1)
    table.rows[("b", limit - 1)] = ("one", helper.instance_id)
    return h, helper


async def test_a_least_busy_entry_is_not_given_the_idle_instance_in_the_last_slot(harness_factory):
    """As ``by_role`` entries: an entry routed ``least_busy`` gets an instance of its own in
    the slot below. Before, least_busy gave it the helper (the least loaded instance)."""
    table = SlotTable()
    h, helper = self_invoking_runtime(harness_factory, table)
    request = InvokeRequest("echo", {"text": "entry"}, routing=RoutingStrategy.LEAST_BUSY)
    result = await asyncio.wait_for(h.runtime.invoke(request, from_role="a"), 5)
    assert result.success, result.error
    assert result.from_instance != helper.instance_id
    assert table.rows[("b", 0)] == ("one", result.from_instance)


async def test_a_hook_from_outside_that_runs_a_capability_is_not_given_the_instance_in_the_last_slot(
    harness_factory,
):
    """A hook from outside the team that runs a capability holds its instance as an entry
    does, so it keeps out of the last slot too; a plain event may go to the helper."""
    table = SlotTable()
    h, helper = self_invoking_runtime(harness_factory, table)
    [ack] = await h.runtime.hook(
        HookEvent("please", {"text": "x"}, target_roles=["b"], capability_id="echo"), from_role="a"
    )
    assert ack.status == "received" and ack.instance_id != helper.instance_id
    assert table.rows[("b", 0)] == ("one", ack.instance_id)
    await settle()
    [plain] = await h.runtime.hook(HookEvent("ping", {}, target_roles=["b"]), from_role="a")
    assert plain.status == "received"


async def test_an_entry_sent_by_instance_into_the_last_slot_is_refused(harness_factory):
    """``by_instance`` goes where it is told, but not an entry into the role's last slot:
    ``unavailable`` with reason ``helpers_slot`` and a message that says what to do."""
    table = SlotTable()
    h, helper = self_invoking_runtime(harness_factory, table)
    request = InvokeRequest("echo", {"text": "entry"}, target_instance_id=helper.instance_id)
    result = await asyncio.wait_for(h.runtime.invoke(request, from_role="a"), 5)
    assert not result.success
    assert result.error.code == ErrorCode.UNAVAILABLE
    assert result.error.details["reason"] == "helpers_slot"
    assert "by_role" in result.error.message
    assert helper.idle and helper.processed == 0
    below = h.runtime.workers.spawn("b", slot=0)
    request = InvokeRequest("echo", {"text": "entry"}, target_instance_id=below.instance_id)
    result = await asyncio.wait_for(h.runtime.invoke(request, from_role="a"), 5)
    assert result.success and result.from_instance == below.instance_id


async def test_an_entry_is_not_held_back_by_a_broadcast_hook_running_on_the_instance_in_the_last_slot(
    harness_factory,
):
    """A broadcast hook from outside goes to its subscriber wherever it is, here the helper
    in b's last slot, and runs a capability there. A by_role entry still spawns in the free
    slot below and is answered. (A review found the hook counted towards the entries' cap:
    the entry was held back, had nothing to queue behind, and timed out.)"""
    table = SlotTable()
    h, helper = self_invoking_runtime(harness_factory, table)
    gate = asyncio.Event()

    async def echo(call):
        if call.params["text"] == "wait":
            await gate.wait()
        return {"text": call.instance.instance_id}

    h.handle("echo", echo)
    h.runtime.hooks.subscribe(EventSubscription(helper.instance_id, ("please",)))
    [ack] = await h.runtime.hook(
        HookEvent("please", {"text": "wait"}, broadcast=True, capability_id="echo"), from_role="a"
    )
    assert ack.instance_id == helper.instance_id
    await settle()
    assert not helper.idle
    entry = asyncio.create_task(h.runtime.invoke(InvokeRequest("echo", {"text": "entry"}, timeout=10), from_role="a"))
    await h.advance(2)
    result = await asyncio.wait_for(entry, 2)
    assert result.success, result.error
    assert table.rows[("b", 0)] == ("one", result.from_instance)
    gate.set()


async def test_a_hook_from_outside_whose_capability_the_role_may_not_run_is_rejected_at_once(harness_factory):
    """A hook from outside naming a capability b does not offer is rejected at once by the
    instance it reaches (the helper in the last slot), as before hooks routed as entries; it
    does not wait for an entry's slot (held elsewhere here) for 60 s and then fail."""
    table = SlotTable()
    h = harness_factory(
        small_snapshot(
            allowed=[("a", "b"), ("b", "b")],
            constraints=Constraints(max_concurrent_instances=2),
            cards=[echo_card(), echo_card("other", owners=("a",))],
        ),
        instance_slots=TableSlots(table, "one"),
    )
    helper = h.runtime.workers.spawn("b", slot=1)
    table.rows[("b", 1)] = ("one", helper.instance_id)
    table.rows[("b", 0)] = ("two", "b-elsewhere")
    fire = asyncio.create_task(
        h.runtime.hook(HookEvent("please", {"text": "x"}, target_roles=["b"], capability_id="other"), from_role="a")
    )
    [ack] = await asyncio.wait_for(fire, 2)
    assert ack.status == "rejected" and ack.instance_id == helper.instance_id
