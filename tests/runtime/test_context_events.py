"""Context events (DESIGN.md §3.3): the changes of one step of the runtime reach the sinks as
one ``context`` event, in emit order, and a progress report reaches them as it happens."""

from __future__ import annotations

import asyncio

from teamclaw.runtime import EventKind, InvokeRequest
from tests.factories import small_snapshot
from tests.runtime.conftest import settle


def kinds_since(h, start: int) -> list[str]:
    return [str(e.kind) for e in h.sink.events[start:]]


async def test_an_invoke_sends_its_start_at_once_and_its_finishing_changes_as_one_event(harness_factory):
    h = harness_factory(small_snapshot(), charge_tokens=True)  # finishing: tokens charged, then ready
    task = await h.runtime.begin_task(entry_role="a")
    await h.runtime.invoke(InvokeRequest("echo", {"text": "warm"}), from_role="a", task_id=task.task_id)
    seen: list[tuple[str, str, int]] = []  # (status, step, api_calls) when each event was published

    class StateSink:
        def publish(self, event) -> None:
            if event.kind == EventKind.CONTEXT:
                context = event.context
                seen.append((str(context.status), context.current_step, context.api_calls))

    h.runtime.add_sink(StateSink())
    start = len(h.sink.events)

    result = await h.runtime.invoke(InvokeRequest("echo", {"text": "x"}), from_role="a", task_id=task.task_id)

    assert result.success
    # the call's start, its snapshot (issue 30: one per call taken), the finishing changes as
    # one event, the answer's snapshot, the answer
    assert kinds_since(h, start) == [
        "message",
        "message_status",
        "context",
        "snapshot",
        "context",
        "snapshot",
        "message",
    ]
    assert seen == [("executing", "echo", 1), ("ready", "echo", 2)]


async def test_a_context_change_with_nothing_after_it_still_reaches_the_sinks_in_the_same_loop_step(
    harness_factory,
):
    h = harness_factory(small_snapshot())
    gate = asyncio.Event()
    questions_seen: list[list[str]] = []  # as they were when each event was published

    class QuestionSink:
        def publish(self, event) -> None:
            if event.kind == EventKind.CONTEXT:
                questions_seen.append(list(event.context.pending_questions))

    h.runtime.add_sink(QuestionSink())

    async def asks_then_waits(call):
        call.ask("which database?")
        await gate.wait()  # nothing else is emitted meanwhile
        return {"text": "done"}

    h.handle("echo", asks_then_waits)
    invoke = asyncio.create_task(h.runtime.invoke(InvokeRequest("echo", {"text": "x"}), from_role="a"))
    await settle()
    assert questions_seen[-1:] == [["which database?"]]
    gate.set()
    assert (await invoke).success


async def test_progress_reports_reach_the_sinks_one_by_one(harness_factory):
    h = harness_factory(small_snapshot())
    steps: list[str] = []

    class StepSink:
        def publish(self, event) -> None:
            if event.kind == EventKind.CONTEXT and (not steps or steps[-1] != event.context.current_step):
                steps.append(event.context.current_step)

    h.runtime.add_sink(StepSink())

    async def stepwise(call):
        for percent in (10, 40, 70):  # no await between reports: one loop step
            call.progress(percent, f"step {percent}")
        return {"text": "done"}

    h.handle("echo", stepwise)
    await h.runtime.invoke(InvokeRequest("echo", {"text": "x"}), from_role="a")
    assert steps[-3:] == ["step 10", "step 40", "step 70"]


async def test_stopping_the_runtime_hands_over_the_last_context_changes(harness_factory):
    h = harness_factory(small_snapshot())
    task = await h.runtime.begin_task(entry_role="a")
    await h.runtime.invoke(InvokeRequest("echo", {"text": "x"}), from_role="a", task_id=task.task_id)
    (instance,) = h.runtime.pool.alive("b")
    start = len(h.sink.events)

    await h.runtime.stop()

    terminated = [e.context for e in h.sink.events[start:] if e.kind == EventKind.CONTEXT]
    assert terminated
    assert terminated[-1].instance_id == instance.instance_id
