"""Snapshots (PRD §4.6): start, before/after invoke, user instruction, error, manual; and
(issue 30) one per call taken and answered, tool use, model call and operator wait."""

from __future__ import annotations

from teamclaw.runtime import Constraints, EventKind, InvokeRequest, TaskStatus
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
        ("auto", "call outer"),  # issue 30: a snapshot per call taken and answered
        ("auto", "before invoke inner"),
        ("auto", "start"),
        ("auto", "call inner"),
        ("auto", "answered inner"),
        ("auto", "after invoke inner"),
        ("auto", "answered outer"),
        ("auto", "completed"),
        ("auto", "completed"),
    ]
    after = h.sink.of(EventKind.SNAPSHOT)[6].snapshot.as_dict()
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


async def test_a_context_that_ends_is_snapshotted_in_its_final_state(harness_factory):
    """Issue 17: with no snapshot at completion the replay's last step showed the agent at 90 %."""
    h = harness_factory(small_snapshot(constraints=Constraints(max_retries=0)))

    async def slow(call):
        call.progress(90, "almost")
        return {"text": "ok"}

    h.handle("echo", slow)
    task = await h.runtime.begin_task(entry_role="a")
    await h.runtime.invoke(InvokeRequest("echo", {"text": "x"}), from_role="a", task_id=task.task_id)
    h.runtime.end_task(task.task_id, TaskStatus.COMPLETED)
    final = h.sink.of(EventKind.SNAPSHOT)[-1].snapshot.as_dict()
    assert (final["type"], final["trigger"], final["label"]) == ("auto", "completed", "final state")
    assert (final["state"]["status"], final["state"]["progress"]) == ("completed", 100)
    failing = await h.runtime.begin_task(entry_role="a")
    await h.runtime.invoke(InvokeRequest("echo", {"text": "y"}), from_role="a", task_id=failing.task_id)
    h.runtime.end_task(failing.task_id, TaskStatus.FAILED)
    failed = h.sink.of(EventKind.SNAPSHOT)[-1].snapshot.as_dict()
    assert (failed["trigger"], failed["state"]["status"]) == ("failed", "failed")
    assert [e.snapshot.trigger for e in h.sink.of(EventKind.SNAPSHOT)].count("completed") == 1  # once per context
