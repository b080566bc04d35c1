"""The recorder: after a flush the database holds exactly what was sent, in order, with each
message's final status (DESIGN.md §3.3), including drops and expiries. Each test runs with
both recorders: the writer thread (``thread``) and the child process (``process``,
``monitoring.recorder_process``); tests/monitoring/test_recorder_process.py kills the child."""

from __future__ import annotations

import asyncio

import pytest

from monitoring.models import ExecutionContext, Message, Snapshot, Task
from monitoring.recorder import LARGE_PAYLOAD_CHARS, MESSAGE_ROWS_PER_STATEMENT, Recorder
from monitoring.recorder_process import RecorderProcess, new_recorder
from teamclaw.runtime import (
    ArtifactWritten,
    CollectingSink,
    Constraints,
    ExecutorRegistry,
    InvokeRequest,
    ManualClock,
    MessageSent,
    OfflineExecutor,
    Priority,
    Runtime,
    TaskStatus,
)
from teamclaw.runtime.messages import AgentMessage, DeliveryStatus, MessageContext, MessageType, Party
from tests.factories import small_snapshot
from tests.runtime.conftest import settle

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(params=["thread", "process"])
def mode(request) -> str:
    """The recorder a test runs with (TEAMCLAW_RECORDER)."""
    return request.param


async def test_database_holds_every_message_in_send_order_with_its_final_status(mode):
    recorder = new_recorder(mode, batch_size=7, batch_wait_s=0.001)  # small batches: statuses cross batch edges
    recorder.start()
    sink = CollectingSink()
    clock = ManualClock()
    gate = asyncio.Event()
    offline = OfflineExecutor(charge_tokens=False)

    async def held(call):
        if call.params["text"].startswith("hold"):
            await gate.wait()
        return {"text": call.params["text"]}

    offline.register("echo", held)
    runtime = Runtime(
        snapshot=small_snapshot(constraints=Constraints(max_concurrent_instances=1, max_retries=0)),
        clock=clock,
        sinks=[recorder, sink],
        mailbox_capacity=3,
        executors=ExecutorRegistry({"offline": offline}),
    )
    try:
        task = await runtime.begin_task(entry_role="a")
        tid = task.task_id
        for i in range(20):  # plain traffic
            await runtime.invoke(InvokeRequest("echo", {"text": f"m{i}"}), from_role="a", task_id=tid)
        await runtime.invoke(InvokeRequest("echo", {"text": "x"}), from_role="b", task_id=tid)  # denied
        blocker = asyncio.create_task(
            runtime.invoke(InvokeRequest("echo", {"text": "hold"}), from_role="a", task_id=tid)
        )
        await settle()
        short = [
            asyncio.create_task(
                runtime.invoke(InvokeRequest("echo", {"text": f"s{i}"}, timeout=5), from_role="a", task_id=tid)
            )
            for i in range(2)
        ]
        low = asyncio.create_task(
            runtime.invoke(InvokeRequest("echo", {"text": "low"}, priority=Priority.LOW), from_role="a", task_id=tid)
        )
        await settle()
        urgent = asyncio.create_task(
            runtime.invoke(InvokeRequest("echo", {"text": "u"}, priority=Priority.URGENT), from_role="a", task_id=tid)
        )  # evicts "low"
        await settle()
        full = await runtime.invoke(InvokeRequest("echo", {"text": "refused"}), from_role="a", task_id=tid)
        assert full.error.code == "queue_full"
        clock.advance(6)  # the two short-lived requests expire in the queue
        await settle()
        gate.set()
        await asyncio.gather(blocker, urgent, low, *short)
        runtime.end_task(tid, TaskStatus.COMPLETED)
        await asyncio.to_thread(recorder.flush)
    finally:
        await runtime.stop()
        await asyncio.to_thread(recorder.stop)

    sent: dict[str, tuple[int, str]] = {}
    for event in sink.events:
        if event.kind in ("message", "message_status"):
            message = event.message
            sent[message.id] = (message.seq, str(event.status))
    rows = await asyncio.to_thread(lambda: list(Message.objects.order_by("seq").values_list("id", "seq", "status")))
    assert [(r[0], r[1]) for r in rows] == sorted(((mid, seq) for mid, (seq, _) in sent.items()), key=lambda x: x[1])
    assert {r[0]: r[2] for r in rows} == {mid: status for mid, (_, status) in sent.items()}
    statuses = [r[2] for r in rows]
    assert {"delivered", "denied", "dropped", "expired"} <= set(statuses)
    assert statuses.count("expired") == 2
    assert statuses.count("denied") == 1
    counts = await asyncio.to_thread(
        lambda: (
            Task.objects.get().status,
            ExecutionContext.objects.count(),
            Snapshot.objects.count(),
            Message.objects.filter(type="invoke_response").count(),
        )
    )
    # the start, the final state, and (issue 30) one as each call was taken and one as it was answered
    assert counts[:2] == ("completed", 1) and counts[3] == 22
    assert counts[2] == 2 + 2 * counts[3]
    assert recorder.failed_batches == 0


async def test_one_unstorable_event_costs_only_itself_and_raises_an_alert(mode):
    from monitoring.models import Alert

    recorder = new_recorder(mode, batch_wait_s=0.001)
    committed: list = []
    recorder.add_listener(committed.extend)
    sink = CollectingSink()
    runtime = Runtime(snapshot=small_snapshot(), sinks=[sink], clock=ManualClock())
    try:
        for _ in range(3):
            await runtime.invoke(InvokeRequest("echo", {"text": "x"}), from_role="a")
    finally:
        await runtime.stop()
    poisoned = ArtifactWritten(
        task_id="no-such-task",
        project_id=None,
        name="a.md",
        content="x",
        content_type="text/markdown",
        context_id=None,
        role="",
        instance_id="",
        at=1.0,
    )
    batch = [*sink.events[:5], poisoned, *sink.events[5:]]
    recorder.start()
    for event in batch:
        recorder.publish(event)
    await asyncio.to_thread(recorder.flush)
    await asyncio.to_thread(recorder.stop)
    messages = {e.message.id for e in sink.events if e.kind == "message"}
    stored = await asyncio.to_thread(lambda: set(Message.objects.values_list("id", flat=True)))
    alerts = await asyncio.to_thread(
        lambda: list(Alert.objects.filter(kind="recorder").values_list("message", flat=True))
    )
    assert stored == messages
    assert recorder.lost_events == 1
    assert len(alerts) == 1
    assert "artifact" in alerts[0]
    assert poisoned not in committed  # the live sink is never shown what the database lacks
    assert len(committed) == len(batch) - 1


async def test_each_heartbeat_refreshes_the_recorded_instance(mode):
    """The dashboard's "last heartbeat" and "handled" come from the AgentInstance rows, so
    every beat is recorded, not only health changes (PRD §4.2)."""
    from monitoring.models import AgentInstance

    recorder = new_recorder(mode, batch_wait_s=0.001)
    recorder.start()
    clock = ManualClock(start=1_000_000.0)
    offline = OfflineExecutor(charge_tokens=False)

    async def echo(call):
        return {"text": call.params["text"]}

    offline.register("echo", echo)
    runtime = Runtime(
        snapshot=small_snapshot(), clock=clock, sinks=[recorder], executors=ExecutorRegistry({"offline": offline})
    )
    try:
        for i in range(3):
            assert (await runtime.invoke(InvokeRequest("echo", {"text": f"m{i}"}), from_role="a")).success
        (instance,) = runtime.pool.alive("b")
        await asyncio.to_thread(recorder.flush)
        before = await asyncio.to_thread(AgentInstance.objects.get, instance_id=instance.instance_id)
        clock.advance(30)
        runtime.heartbeat(instance.instance_id)
        await asyncio.to_thread(recorder.flush)
        after = await asyncio.to_thread(AgentInstance.objects.get, instance_id=instance.instance_id)
        assert (after.last_heartbeat - before.last_heartbeat).total_seconds() == pytest.approx(30, abs=1)
        assert after.processed == 3
        assert after.healthy
    finally:
        await runtime.stop()
        await asyncio.to_thread(recorder.stop)


def status_update(number: int, payload: dict) -> MessageSent:
    """A delivered status_update message event, as the runtime emits it."""
    message = AgentMessage(
        type=MessageType.STATUS_UPDATE,
        sender=Party(role="a", instance_id="a-1"),
        recipient=Party(role="b", instance_id="b-1"),
        payload={"n": number, **payload},
        context=MessageContext("task-big", "task-big"),
        timestamp=1_700_000_000_000 + number,
    )
    return MessageSent(message, DeliveryStatus.DELIVERED, at=1.0)


async def test_a_batch_larger_than_one_insert_statement_is_stored_whole_and_in_order(mode):
    """Rows go in MESSAGE_ROWS_PER_STATEMENT at a time (a large payload alone); a batch of two
    full statements, a remainder and a large one loses nothing and keeps the send order and
    each payload as sent."""
    count = 2 * MESSAGE_ROWS_PER_STATEMENT + 7
    payloads = [{"text": f"m{i}"} for i in range(count)]
    payloads[3] = {"big": 2**70, "nested": {"unicode": "naïve ✓"}}  # beyond orjson's 64-bit ints
    payloads[60] = {"keys": {1: "int key", 1e-07: "float key", "s": None}}  # keys spelled as json spells them
    payloads[61] = {"score": float("nan"), "limit": float("inf")}  # not JSON: stored as null
    payloads[70] = {"text": "x" * (LARGE_PAYLOAD_CHARS + 1)}  # inserted on its own
    events = [status_update(i, p) for i, p in enumerate(payloads)]
    recorder = new_recorder(mode, batch_size=10_000, batch_wait_s=0.5)  # one batch holds them all
    recorder.start()
    try:
        for event in events:
            recorder.publish(event)
        assert await asyncio.to_thread(recorder.flush)
    finally:
        await asyncio.to_thread(recorder.stop)
    rows = await asyncio.to_thread(
        lambda: list(Message.objects.filter(task_id="task-big").order_by("seq").values_list("id", "payload"))
    )
    assert [r[0] for r in rows] == [e.message.id for e in events]
    assert rows[3][1]["big"] == 2**70
    assert rows[3][1]["nested"] == {"unicode": "naïve ✓"}
    assert rows[60][1]["keys"] == {"1": "int key", "1e-07": "float key", "s": None}
    assert rows[61][1] == {"n": 61, "score": None, "limit": None}
    assert len(rows[70][1]["text"]) == LARGE_PAYLOAD_CHARS + 1
    assert [r[1]["n"] for r in rows] == list(range(count))
    assert recorder.failed_batches == 0
    assert recorder.written_events == count


async def record_one(recorder, event) -> list[str]:
    """Start ``recorder``, publish ``event``, flush (it must succeed), stop; the stored
    message ids."""
    recorder.start()
    try:
        recorder.publish(event)
        assert await asyncio.to_thread(recorder.flush)
    finally:
        await asyncio.to_thread(recorder.stop)
    return await asyncio.to_thread(lambda: list(Message.objects.values_list("id", flat=True)))


async def test_a_batch_that_failed_is_written_again_on_a_fresh_connection(monkeypatch):
    from django.db import OperationalError, connection

    recorder = Recorder(batch_wait_s=0.001)
    original = Recorder.write
    connections_used: list[int] = []

    def flaky_write(self, batch):
        connection.ensure_connection()
        connections_used.append(id(connection.connection))
        if len(connections_used) == 1:
            connection.connection.close()  # dead underneath, as after a database restart
            raise OperationalError("server closed the connection unexpectedly")
        original(self, batch)

    monkeypatch.setattr(Recorder, "write", flaky_write)
    event = status_update(0, {"text": "after a restart"})
    stored = await record_one(recorder, event)
    assert stored == [event.message.id]
    assert recorder.failed_batches == 1
    assert recorder.lost_events == 0
    assert len(connections_used) == 2


async def test_the_recorder_process_writes_a_batch_that_failed_again():
    """The child's writer retries as the thread's does (the same BatchWriter); its count of
    failed batches reaches the runtime's process with the acknowledgement."""
    recorder = RecorderProcess(batch_wait_s=0.001, writer="tests.recorder_writers.FailsOnceWriter")
    event = status_update(0, {"text": "after a restart"})
    stored = await record_one(recorder, event)
    assert stored == [event.message.id]
    assert recorder.failed_batches == 1
    assert recorder.lost_events == 0
    assert recorder.written_events == 1
