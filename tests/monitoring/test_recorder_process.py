"""The recorder process (``monitoring.recorder_process``, issue 13 item 5): a child process
killed with SIGKILL mid-stream loses nothing and doubles nothing, a batch its predecessor
committed without acknowledging it is not written again, a child that keeps dying hands the
writing to a thread (loudly), and a ``runtime_worker`` host records through a child by
default. Real child processes on the test's SQLite database."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from monitoring.models import Alert, Message, RecorderCheckpoint
from monitoring.recorder import Recorder
from monitoring.recorder_process import RecorderProcess, new_recorder
from teamclaw.runtime.events import AlertRaised, MessageSent
from tests.monitoring.test_recording import status_update
from tests.recorder_writers import DIE_AFTER_COMMIT

pytestmark = pytest.mark.django_db(transaction=True)


def wait_for(check, what: str, timeout: float = 60) -> None:
    """Poll ``check`` until it is true; fail saying ``what`` after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout} s")
        time.sleep(0.01)


def stored_ids() -> list[str]:
    return list(Message.objects.order_by("seq").values_list("id", flat=True))


def test_a_child_killed_mid_stream_loses_nothing_and_writes_nothing_twice():
    """SIGKILL while frames are in flight: a new child gets every frame not acknowledged; the
    database and the live sink's listener each hold every message once, in send order; the
    crash is an alert."""
    recorder = RecorderProcess(batch_size=50, batch_wait_s=0.001)
    committed: list = []
    recorder.add_listener(committed.extend)
    events = [status_update(i, {"text": f"m{i}"}) for i in range(1500)]
    recorder.start()
    try:
        for event in events[:500]:
            recorder.publish(event)
        assert recorder.flush(60)  # the child is up and writing
        first = recorder.process
        assert first is not None
        os.kill(first.pid, signal.SIGSTOP)  # it stops reading: what follows stays unacknowledged
        for event in events[500:1000]:
            recorder.publish(event)
        wait_for(lambda: recorder.unacknowledged >= 5, "frames in flight")
        os.kill(first.pid, signal.SIGKILL)
        for event in events[1000:]:
            recorder.publish(event)
        assert recorder.flush(60)
        assert recorder.process is not None and recorder.process.pid != first.pid
    finally:
        recorder.stop()
    assert first.returncode == -signal.SIGKILL
    assert stored_ids() == [e.message.id for e in events]
    messages = [e.message.id for e in committed if isinstance(e, MessageSent)]
    assert messages == [e.message.id for e in events]
    assert recorder.restarts == 1
    assert recorder.written_events == len(events) + 1  # and the alert
    (alert,) = Alert.objects.filter(kind="recorder")
    assert alert.severity == "warning"
    assert "ended unexpectedly" in alert.message
    assert alert.details["exit_code"] == -signal.SIGKILL
    assert alert.details["resent_frames"] >= 5
    assert not RecorderCheckpoint.objects.exists()  # a clean stop removes its checkpoint


def test_a_batch_committed_just_before_the_crash_is_not_written_again():
    """The child dies after its commit, before its acknowledgement: the frame is sent to the
    next child, which skips it by the checkpoint, so the alert in it is stored once."""
    recorder = RecorderProcess(batch_wait_s=0.001, writer="tests.recorder_writers.DiesAfterCommitWriter")
    marker = AlertRaised(at=time.time(), alert_kind=DIE_AFTER_COMMIT, severity="info", message="x", details={})
    before = [status_update(i, {}) for i in range(5)]
    after = [status_update(i, {}) for i in range(5, 10)]
    recorder.start()
    try:
        for event in before:
            recorder.publish(event)
        assert recorder.flush(60)
        recorder.publish(marker)
        for event in after:
            recorder.publish(event)
        assert recorder.flush(60)
    finally:
        recorder.stop()
    assert recorder.restarts == 1
    assert Alert.objects.filter(kind=DIE_AFTER_COMMIT).count() == 1
    assert Alert.objects.filter(kind="recorder").count() == 1
    assert stored_ids() == [e.message.id for e in before + after]


def test_a_child_that_keeps_dying_hands_the_writing_to_a_thread_loudly(caplog):
    """After ``max_restarts`` deaths in a row no child is started again: the runtime's process
    writes on a thread, nothing is lost, and a critical alert and log say so."""
    recorder = RecorderProcess(batch_wait_s=0.001, writer="tests.recorder_writers.AlwaysDiesWriter", max_restarts=1)
    events = [status_update(i, {}) for i in range(20)]
    recorder.start()
    try:
        for event in events:
            recorder.publish(event)
        assert recorder.flush(120)
        assert recorder.process is None
    finally:
        recorder.stop()
    assert recorder.failure is not None and "died 2 times in a row" in recorder.failure
    assert stored_ids() == [e.message.id for e in events]
    alerts = list(Alert.objects.filter(kind="recorder").order_by("created_at").values_list("severity", "message"))
    assert [severity for severity, _ in alerts] == ["warning", "critical"]
    assert "a thread of the runtime's process" in alerts[1][1]
    assert any(r.levelname == "CRITICAL" and "died 2 times" in r.getMessage() for r in caplog.records)


def test_an_event_that_cannot_be_pickled_costs_only_itself_and_raises_an_alert():
    """The thread recorder's rule across the process boundary: the event is counted lost and
    a critical alert takes its place; the rest of its frame is stored."""
    events = [status_update(i, {}) for i in range(3)]
    events[1] = status_update(1, {"lock": threading.Lock()})  # pickle refuses it
    recorder = RecorderProcess(batch_wait_s=0.001)
    recorder.start()
    try:
        for event in events:
            recorder.publish(event)
        assert recorder.flush(60)
    finally:
        recorder.stop()
    assert stored_ids() == [events[0].message.id, events[2].message.id]
    assert recorder.lost_events == 1
    (alert,) = Alert.objects.filter(kind="recorder")
    assert alert.severity == "critical"
    assert alert.message.startswith("a message event could not be recorded: TypeError")


def test_a_runtime_worker_host_records_through_a_child_process(builtin, settings):
    """``TEAMCLAW_RECORDER=auto`` (the default): a ``runtime_worker`` host writes its events
    from a child process, the live sink still gets each batch after its commit; ``thread``
    keeps the writer thread."""
    from runs.host import RuntimeHost, recorder_mode
    from teamclaw.runtime import InvokeRequest

    assert (recorder_mode("worker"), recorder_mode("embedded"), recorder_mode("command")) == (
        "process",
        "thread",
        "thread",
    )
    settings.TEAMCLAW = {**settings.TEAMCLAW, "RECORDER": "thread"}
    assert recorder_mode("worker") == "thread"
    assert isinstance(new_recorder(recorder_mode("worker")), Recorder)
    settings.TEAMCLAW = {**settings.TEAMCLAW, "RECORDER": "auto"}

    host = RuntimeHost(name="worker", worker="worker").start()
    committed: list = []
    try:
        assert isinstance(host.recorder, RecorderProcess)
        host.recorder.add_listener(committed.extend)
        assert host.runtime is not None
        result = host.call(
            host.runtime.invoke(
                InvokeRequest("schema_query", {"table": "users"}, target_role="dba"), from_role="coderA"
            ),
            timeout=30,
        )
        assert result.success, result.error
        assert host.recorder.flush(60)
        child = host.recorder.process
        assert child is not None and child.poll() is None
    finally:
        host.stop()
    assert child.returncode == 0
    sent = [e.message.id for e in committed if isinstance(e, MessageSent)]
    assert len(sent) == 2  # the request and its response
    assert set(Message.objects.filter(id__in=sent).values_list("id", flat=True)) == set(sent)
