"""Cancelling a running task (the runtime contract's ``cancel_task``): what waits in it ends
at once with ``cancelled``, nothing new starts in it, and the task is recorded terminated (PRD §4.6)."""

from __future__ import annotations

import asyncio

from teamclaw.runtime import ErrorCode, InvokeRequest, TaskFinished, ToolMode
from tests.factories import small_snapshot
from tests.runtime.conftest import settle


async def test_cancelling_ends_the_task_and_every_invoke_waiting_in_it(harness_factory):
    h = harness_factory(small_snapshot())
    release = asyncio.Event()

    async def slow(call):
        await release.wait()
        return {"text": "late"}

    h.handle("echo", slow)
    task = await h.runtime.begin_task(description="to be cancelled")
    waiting = asyncio.ensure_future(
        h.runtime.invoke(InvokeRequest("echo", {"text": "x"}), from_role="a", task_id=task.task_id)
    )
    await settle()
    assert h.runtime.cancel_task(task.task_id, "the operator changed their mind")
    result = await waiting
    assert not result.success
    assert result.error.code == ErrorCode.CANCELLED
    assert result.error.message == "the operator changed their mind"
    [finished] = h.sink.of(TaskFinished)
    assert finished.status == "terminated"
    assert finished.error["code"] == "cancelled"
    assert task.task_id not in h.runtime.tasks
    release.set()
    await settle()
    assert [m.type.value for m, s in h.messages() if s == "delivered"].count("invoke_response") == 0


async def test_an_invoke_inside_a_cancelled_task_is_refused(harness_factory):
    h = harness_factory(small_snapshot())
    calls = []

    async def outer(call):
        calls.append(call.params["text"])
        await asyncio.sleep(0)
        h.runtime.cancel_task(call.task.task_id)
        inner = await call.invoke("echo", {"text": "inner"}, target_role="b")
        return {"text": f"inner refused: {inner.error.code}"}

    h.handle("echo", outer)
    result = await h.runtime.run_task(capability_id="echo", params={"text": "outer"}, entry_role="b")
    assert not result.success
    assert result.error.code == ErrorCode.CANCELLED
    await settle()
    assert calls == ["outer"]  # the inner invoke never reached an executor
    denied = [m for m, s in h.messages() if s == "denied"]
    assert [m.payload["error"]["code"] for m in denied] == ["cancelled"]


async def test_a_tool_confirmation_of_a_cancelled_task_expires(harness_factory, tmp_path):
    h = harness_factory(small_snapshot(tool_modes={("b", "file_write"): ToolMode.CONFIRM}, project_dir=str(tmp_path)))
    outcome = {}

    async def write(call):
        try:
            await call.use_tool("file_write", path="x.txt", content="x")
        except Exception as exc:  # tool_denied once the confirmation expires
            outcome["error"] = exc.error.code
        return {"text": "done"}

    h.handle("echo", write)
    task = await h.runtime.begin_task()
    waiting = asyncio.ensure_future(
        h.runtime.invoke(InvokeRequest("echo", {"text": "x"}), from_role="a", task_id=task.task_id)
    )
    await settle()
    [confirmation] = h.runtime.confirmations.values()
    h.runtime.cancel_task(task.task_id)
    await waiting
    await settle()
    assert confirmation.status == "expired"
    assert outcome == {"error": ErrorCode.TOOL_DENIED}
    assert not (tmp_path / "x.txt").exists()


async def test_cancelling_a_task_that_is_not_running_says_so(harness_factory):
    h = harness_factory(small_snapshot())
    assert h.runtime.cancel_task("no-such-task") is False
