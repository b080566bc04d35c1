"""Snapshots (PRD §4.6): start, before/after invoke, user instruction, error, manual."""

from __future__ import annotations

from teamclaw.runtime import Constraints, EventKind, InvokeRequest
from tests.factories import echo_card, small_snapshot


def snapshots(h):
    return [(e.snapshot.type, e.snapshot.trigger) for e in h.sink.of(EventKind.SNAPSHOT)]


async def test_an_agent_calling_another_snapshots_start_and_both_sides_of_the_invoke(harness_factory):
    h = harness_factory(
        small_snapshot(
            cards=[echo_card("outer", owners=("a",)), echo_card("inner", owners=("b",))],
            allowed=[("a", "b"), ("user", "a")],
        )
    )

    async def outer(call):
        await call.invoke("inner", {"text": "x"}, target_role="b")
        return {"text": "done"}

    async def inner(call):
        return {"text": "inner"}

    h.handle("outer", outer)
    h.handle("inner", inner)
    await h.runtime.invoke(InvokeRequest("outer", {"text": "x"}), from_role="user")
    assert snapshots(h) == [
        ("auto", "start"),
        ("auto", "before invoke inner"),
        ("auto", "start"),
        ("auto", "after invoke inner"),
    ]
    after = h.sink.of(EventKind.SNAPSHOT)[-1].snapshot.as_dict()
    assert after["label"] == "ok"
    assert after["state"]["input_context"]["messages"]


async def test_errors_and_user_instructions_and_manual_requests_are_snapshotted(harness_factory):
    h = harness_factory(small_snapshot(constraints=Constraints(max_retries=0)))

    async def fail(call):
        raise RuntimeError("bad")

    h.handle("echo", fail)
    task = await h.runtime.begin_task(entry_role="a")
    await h.runtime.invoke(InvokeRequest("echo", {"text": "x"}, timeout=1), from_role="a", task_id=task.task_id)
    [context] = task.contexts.values()
    h.runtime.add_user_instruction(context.id, "use PostgreSQL")
    h.runtime.manual_snapshot(context.id, "before release")
    kinds = snapshots(h)
    assert kinds[0] == ("auto", "start")
    assert ("error", "error") in kinds
    assert ("auto", "user_instruction") in kinds
    assert kinds[-1] == ("manual", "manual")
    manual = h.sink.of(EventKind.SNAPSHOT)[-1].snapshot.as_dict()
    assert manual["label"] == "before release"
    assert manual["state"]["input_context"]["user_instructions"] == ["use PostgreSQL"]
    assert manual["state"]["output_state"]["errors"][0]["code"] == "executor_error"
