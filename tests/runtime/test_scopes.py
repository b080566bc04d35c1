"""Where ``max_concurrent_instances`` counts (PRD §4.7; issue 28 item 3; ``teamclaw.runtime.scopes``).

A task counts its own instances by default: tasks started at once on one runtime each get
their own entry instance at once, even when the runtime shares its slots with other workers
and another task's instance waits for its operator; a task's help call to its own role gets
a helper of that task; a task's instances end with it. With the per-project option the tasks
of that project share the role's instances (held in the shared slots under ``role@slug``),
and only they wait for one another.
"""

from __future__ import annotations

import asyncio

import pytest

from teamclaw.runtime import Constraints
from teamclaw.runtime.scopes import scope_of, slot_key
from tests.factories import small_snapshot
from tests.runtime.conftest import settle
from tests.runtime.test_instance_slots import SlotTable, TableSlots, ask_operator

LIMIT = 2
"""b's max_concurrent_instances; b may invoke b (as main does), so before this change the
entries over every worker together ran on at most LIMIT - 1 instances."""

TASKS = 5


def team():
    return small_snapshot(
        allowed=[("a", "b"), ("b", "b")], constraints=Constraints(max_retries=0, max_concurrent_instances=LIMIT)
    )


class Brain:
    """b's ``echo``: ``ask`` waits for the operator; ``work`` notes that it started, waits
    for ``gate``, then asks b for help (a call inside its task to its own role)."""

    def __init__(self) -> None:
        self.gate = asyncio.Event()
        self.started: list[str] = []

    async def echo(self, call):
        text = call.params["text"]
        if text == "help":
            return {"text": f"helped by {call.instance.instance_id}"}
        if text == "ask":
            await ask_operator(call)
            return {"text": "answered"}
        self.started.append(call.instance.instance_id)
        await self.gate.wait()
        inner = await call.invoke("echo", {"text": "help"}, target_role="b", timeout=5)
        return {"text": inner.data["text"] if inner.success else inner.error.message}


def start(h, text: str, project_id: str | None = None) -> asyncio.Task:
    """A task whose entry (from outside the team) asks b's ``echo`` with ``text``."""
    return asyncio.create_task(
        h.runtime.run_task(capability_id="echo", params={"text": text}, entry_role="b", project_id=project_id)
    )


async def test_tasks_started_at_once_each_run_at_once_beside_a_task_held_by_its_operator(harness_factory):
    table = SlotTable()
    h = harness_factory(team(), instance_slots=TableSlots(table, "one"))
    brain = Brain()
    h.handle("echo", brain.echo)
    held = start(h, "ask")
    await settle()
    assert h.runtime.confirmations  # its instance waits for the operator
    working = [start(h, "work") for _ in range(TASKS)]
    await settle(60)
    # Every task's entry runs now, each on an instance of its own: none queued behind another
    # task's instance (before: one, the entries' share of b's slots over every worker).
    assert len(brain.started) == TASKS and len(set(brain.started)) == TASKS
    assert table.rows == {}  # a task's own instances take no shared slot
    brain.gate.set()
    results = await asyncio.wait_for(asyncio.gather(*working), 5)
    assert all(r.success for r in results), [r.error for r in results]
    # Each task's help call got a helper of its own task, within b's limit for the task.
    helpers = {r.data["text"].removeprefix("helped by ") for r in results}
    assert len(helpers) == TASKS and not helpers & set(brain.started)
    # The finished tasks' instances ended with them; the held task's stay.
    alive = h.runtime.pool.alive("b")
    assert [i.waiting_operator for i in alive] == [1]
    [confirmation] = h.runtime.confirmations.values()
    h.runtime.resolve_confirmation(confirmation.id, True, "ops", {"answers": {"q": "yes"}})
    assert (await asyncio.wait_for(held, 5)).success
    await settle()
    assert h.runtime.pool.alive("b") == []


async def test_a_task_never_runs_more_of_a_role_than_its_limit(harness_factory):
    h = harness_factory(team())
    many = asyncio.Event()

    async def echo(call):
        if call.params["text"] == "fan":  # the entry asks b for help three times at once
            asks = [call.invoke("echo", {"text": "help"}, target_role="b", timeout=5) for _ in range(3)]
            return {"text": ",".join(r.data["text"] for r in await asyncio.gather(*asks))}
        await many.wait()
        return {"text": call.instance.instance_id}

    h.handle("echo", echo)
    task = start(h, "fan")
    await settle(60)
    assert len(h.runtime.pool.alive("b")) == LIMIT  # the entry and one helper, the others queue
    many.set()
    result = await asyncio.wait_for(task, 5)
    assert result.success, result.error
    assert len(set(result.data["text"].split(","))) == 1  # every help call went to that helper
    await settle()
    assert h.runtime.pool.alive("b") == []  # they ended with their task (before: idle for ever)


async def test_with_the_per_project_option_a_projects_tasks_share_their_instances(harness_factory):
    table = SlotTable()
    h = harness_factory(team(), instance_slots=TableSlots(table, "one"), instance_limit_per_project=["shop"])
    brain = Brain()
    h.handle("echo", brain.echo)
    shop = [start(h, "work", project_id="shop") for _ in range(3)]
    await settle(60)
    # The shop's entries share b's slots: LIMIT - 1 of them run, the last slot stays for help.
    assert len(brain.started) == LIMIT - 1
    assert {key for key, _ in table.rows} == {slot_key("b", "project:shop")}
    other = start(h, "work", project_id="garden")  # another project's task counts its own
    await settle(60)
    assert len(brain.started) == LIMIT
    brain.gate.set()
    for _ in range(30):  # calls waiting for a shared slot try again every TableSlots.retry_s
        if all(t.done() for t in [*shop, other]):
            break
        await h.advance(1)
    results = [t.result() for t in [*shop, other]]
    assert all(r.success for r in results), [r.error for r in results]
    # The shop's instances stay for its next tasks, within the limit; the garden task's ended.
    alive = h.runtime.pool.alive("b")
    assert {i.scope for i in alive} == {"project:shop"} and len(alive) <= LIMIT
    assert table.held("b@shop") == len(alive)


SCOPES = [
    # (kind, project, per-project option, scope)
    ("task", None, [], "task:t1"),
    ("task", "shop", [], "task:t1"),
    ("task", "shop", ["shop"], "project:shop"),
    ("task", "shop", ["*"], "project:shop"),
    ("task", None, ["*"], "task:t1"),
    ("task", "garden", ["shop"], "task:t1"),
    ("invoke", None, [], ""),
    ("hook", "garden", ["shop"], ""),
    ("invoke", "shop", ["shop"], "project:shop"),
]


@pytest.mark.parametrize(("kind", "project", "per_project", "scope"), SCOPES)
def test_a_tasks_scope(kind, project, per_project, scope):
    assert scope_of("t1", project, kind, per_project) == scope
