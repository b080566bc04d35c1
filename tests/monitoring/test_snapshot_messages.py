"""Snapshots store their context's message references once (``monitoring.models.SnapshotMessage``):
each snapshot reads back the whole state it was taken with (PRD §4.6), while each reference is
one row, not one per snapshot that held it. Both recorders (thread and process), in small
batches so a context's references cross batch and frame edges."""

from __future__ import annotations

import json

import pytest
from asgiref.sync import sync_to_async

from monitoring.models import ExecutionContext, Snapshot, SnapshotMessage
from monitoring.recorder_process import new_recorder
from monitoring.replay import build_timeline, step
from teamclaw.runtime import (
    CollectingSink,
    EventKind,
    ExecutorRegistry,
    InvokeRequest,
    ManualClock,
    OfflineExecutor,
    Runtime,
    TaskStatus,
)
from tests.factories import small_snapshot

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(params=["thread", "process"])
def mode(request) -> str:
    return request.param


async def record_invokes(mode: str, count: int) -> CollectingSink:
    """``count`` invokes a -> echo in one task, recorded by ``mode``'s recorder; the events."""
    recorder = new_recorder(mode, batch_size=5, batch_wait_s=0.001)
    recorder.start()
    sink = CollectingSink()
    offline = OfflineExecutor(charge_tokens=False)

    async def echo(call):
        return {"text": call.params["text"]}

    offline.register("echo", echo)
    runtime = Runtime(
        snapshot=small_snapshot(),
        clock=ManualClock(),
        sinks=[recorder, sink],
        executors=ExecutorRegistry({"offline": offline}),
    )
    try:
        task = await runtime.begin_task(entry_role="a")
        for i in range(count):
            result = await runtime.invoke(InvokeRequest("echo", {"text": f"m{i}"}), from_role="a", task_id=task.task_id)
            assert result.success
        runtime.end_task(task.task_id, TaskStatus.COMPLETED)
    finally:
        await runtime.stop()
        recorder.flush()
        recorder.stop()
    return sink


def plain(value):
    return json.loads(json.dumps(value))


def window(snap) -> range:
    """The positions of ``snap``'s message references in its context's stream."""
    return range(snap.messages_end - len(snap.state["input_context"]["messages"]), snap.messages_end)


def stored_rows() -> tuple[dict[str, Snapshot], dict[str, dict], int]:
    """Snapshot rows by id, their whole states (``Snapshot.state``) and the SnapshotMessage count."""
    rows = {row.id: row for row in Snapshot.objects.all()}
    return rows, {pk: row.state for pk, row in rows.items()}, SnapshotMessage.objects.count()


async def test_each_snapshot_reads_back_its_whole_state_and_each_reference_is_stored_once(mode):
    sink = await record_invokes(mode, 12)
    taken = [event.snapshot for event in sink.of(EventKind.SNAPSHOT)]
    held = sum(len(snap.state["input_context"]["messages"]) for snap in taken)
    distinct = {(snap.messages_stream, position) for snap in taken for position in window(snap)}
    rows, states, references = await sync_to_async(stored_rows)()
    assert set(rows) == {snap.id for snap in taken}
    for snap in taken:
        assert states[snap.id] == plain(snap.state), snap.trigger
    assert references == len(distinct) < held
    ranged = [row for row in rows.values() if isinstance(row.stored_state["input_context"]["messages"], dict)]
    assert len(ranged) == len(taken)  # every one of them stored as a range


def replayed_states(context_id: str) -> list[dict]:
    """The state replay shows at each step of the context's timeline (None before its first snapshot)."""
    timeline = build_timeline(ExecutionContext.objects.get(pk=context_id))
    return [step(timeline, index)["state"] for index in range(len(timeline.entries))]


async def test_replay_shows_each_steps_message_references(mode):
    sink = await record_invokes(mode, 3)
    taken = [event.snapshot for event in sink.of(EventKind.SNAPSHOT)]
    last = [snap for snap in taken if snap.context_id == taken[-1].context_id][-1]
    assert len(last.state["input_context"]["messages"]) >= 6
    states = [state for state in await sync_to_async(replayed_states)(last.context_id) if state]
    assert states[-1]["input_context"]["messages"] == plain(last.state["input_context"]["messages"])
    assert all(isinstance(state["input_context"]["messages"], list) for state in states)
