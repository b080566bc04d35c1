"""What a dead worker leaves behind is cleaned up (issue 28, point 5): once its tasks have
moved it is marked stopped, and the messages its mailboxes still held are marked as never
delivered when another worker resumes the task."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from monitoring.models import Message, Task
from runs.models import RuntimeWorker
from runs.resume import journal_for
from runs.workers import retire_dead_workers, worker_rows


def worker(worker_id: str, silent_for_s: float) -> RuntimeWorker:
    beat = timezone.now() - timedelta(seconds=silent_for_s)
    return RuntimeWorker.objects.create(
        id=worker_id, kind="worker", hostname="h", pid=1, concurrency=2, started_at=beat, heartbeat_at=beat
    )


def test_a_silent_worker_is_stopped_once_its_tasks_have_moved(builtin):
    worker("alive", 0)
    dead = worker("dead", 120)
    task = Task.objects.create(id="t1", status="running", owner=dead.id, run_spec={"workflow": "generic"})
    assert "dead" not in retire_dead_workers()  # its task has not moved yet: still silent
    assert {r["id"]: r["state"] for r in worker_rows()}["dead"] == "silent"
    Task.objects.filter(pk=task.pk).update(owner="alive")  # taken over
    assert "dead" in retire_dead_workers()
    assert {r["id"]: r["state"] for r in worker_rows()}["dead"] == "stopped"
    assert RuntimeWorker.objects.get(pk="alive").stopped_at is None
    assert "dead" not in retire_dead_workers()


def test_messages_a_dead_attempt_left_queued_are_marked_undelivered_on_resume(builtin):
    task = Task.objects.create(id="t2", status="running", owner="w2", attempt=2, run_spec={"workflow": "generic"})
    common = {"type": "invoke_request", "task_id": task.id, "priority": "normal", "ttl_ms": 1000, "timestamp_ms": 1}
    Message.objects.create(id="m-queued", seq=1, status="queued", **common)
    Message.objects.create(id="m-done", seq=2, status="delivered", **common)
    journal_for(task)
    queued = Message.objects.get(pk="m-queued")
    assert queued.status == "dropped"
    assert queued.reason.startswith("undelivered: its worker stopped") and "attempt 2" in queued.reason
    assert Message.objects.get(pk="m-done").status == "delivered"
