"""Fencing the record (issue 28 item 2; ``monitoring.fencing``): once a task's recorded
attempt moved past the one this process holds a fence for (another worker took it over), the
recorder writes none of its rows any more (messages, statuses, contexts, snapshots,
artifacts, the task's status) and says so; other tasks' rows are written as before. Both
recorders: the writer thread and the child process. tests/monitoring/test_fencing_processes.py does it
with real workers, SIGSTOP and SIGCONT."""

from __future__ import annotations

import asyncio

import pytest

from monitoring.models import Artifact, ExecutionContext, Message, Snapshot, Task
from monitoring.recorder_process import new_recorder
from teamclaw.runtime import (
    CollectingSink,
    Constraints,
    ExecutorRegistry,
    InvokeRequest,
    OfflineExecutor,
    Runtime,
    TaskStatus,
)
from tests.factories import small_snapshot

pytestmark = pytest.mark.django_db(transaction=True)


def record_of(task_id: str) -> tuple[int, int, list[tuple[str, str]], int, str]:
    """(messages, snapshots, contexts (id, status), artifacts, task status) recorded of ``task_id``."""
    return (
        Message.objects.filter(task_id=task_id).count(),
        Snapshot.objects.filter(context__task_id=task_id).count(),
        sorted(ExecutionContext.objects.filter(task_id=task_id).values_list("id", "status")),
        Artifact.objects.filter(task_id=task_id).count(),
        Task.objects.get(pk=task_id).status,
    )


@pytest.mark.parametrize("mode", ["thread", "process"])
async def test_a_task_taken_over_elsewhere_is_no_longer_written_here(mode):
    recorder = new_recorder(mode, batch_wait_s=0.001)
    stale_seen: list[str] = []
    recorder.on_stale(stale_seen.extend)
    recorder.start()
    offline = OfflineExecutor(charge_tokens=False)

    async def echo(call):
        call.write_artifact(f"note-{call.params['text']}.md", call.params["text"], "text/markdown")
        return {"text": call.params["text"]}

    offline.register("echo", echo)
    runtime = Runtime(
        snapshot=small_snapshot(constraints=Constraints(max_concurrent_instances=2, max_retries=0)),
        sinks=[recorder, CollectingSink()],
        executors=ExecutorRegistry({"offline": offline}),
    )
    try:
        lost = (await runtime.begin_task(entry_role="a")).task_id
        kept = (await runtime.begin_task(entry_role="a")).task_id
        await asyncio.to_thread(recorder.flush)
        await asyncio.to_thread(lambda: Task.objects.filter(pk__in=[lost, kept]).update(attempt=1))
        recorder.fence(lost, 1)
        recorder.fence(kept, 1)
        for n in range(3):
            for task_id in (lost, kept):
                await runtime.invoke(InvokeRequest("echo", {"text": f"before{n}"}), from_role="a", task_id=task_id)
        assert await asyncio.to_thread(recorder.flush)
        before = await asyncio.to_thread(record_of, lost)
        assert before[0] >= 6 and before[1] >= 1 and before[3] == 3, before  # written while it held the task
        kept_before = await asyncio.to_thread(record_of, kept)

        # Another worker claims ``lost`` (attempt 2): what this process does of it is not written.
        await asyncio.to_thread(lambda: Task.objects.filter(pk=lost).update(attempt=2, owner="elsewhere"))
        for n in range(3):
            for task_id in (lost, kept):
                await runtime.invoke(InvokeRequest("echo", {"text": f"after{n}"}), from_role="a", task_id=task_id)
        runtime.end_task(lost, TaskStatus.COMPLETED)
        runtime.end_task(kept, TaskStatus.COMPLETED)
        assert await asyncio.to_thread(recorder.flush)
    finally:
        await runtime.stop()
        await asyncio.to_thread(recorder.stop)

    assert await asyncio.to_thread(record_of, lost) == before
    after = await asyncio.to_thread(record_of, kept)
    assert after[0] > kept_before[0] and after[3] == 6 and after[4] == "completed", (kept_before, after)
    assert set(stale_seen) == {lost}
