"""With no runtime worker alive, an outside call and a command are answered ``no_worker``
(503) at once instead of waiting for nobody (issue 28, point 4), and nothing is left queued
to be applied later behind the operator's back."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from monitoring.models import Task
from runs.models import RuntimeCommand, RuntimeWorker
from runs.workers import workers_alive


@pytest.fixture
def remote(settings):
    """This process is a web process without a runtime (README "Scaling out")."""
    settings.TEAMCLAW = {**settings.TEAMCLAW, "RUNTIME": "remote"}


def dead_worker(worker_id: str = "host-1-dead") -> RuntimeWorker:
    """A worker that stopped beating a minute ago (``kill -9``), the only one listed: rows an
    earlier test's processes left are removed, so no worker is alive."""
    RuntimeWorker.objects.exclude(pk=worker_id).delete()
    long_ago = timezone.now() - timedelta(minutes=1)
    return RuntimeWorker.objects.create(
        id=worker_id, kind="worker", hostname="host", pid=1, concurrency=4, started_at=long_ago, heartbeat_at=long_ago
    )


def test_an_invoke_with_no_worker_alive_is_no_worker_at_once(api, builtin, remote):
    dead_worker()
    assert not workers_alive()
    invoke = {"capability_id": "schema_query", "from_role": "coderA", "params": {"table": "users"}, "timeout": 60}
    response = api.post("/api/v1/capabilities/invoke", invoke, format="json")
    assert response.status_code == 503, response.content
    body = response.json()
    assert body["errorCode"] == "no_worker"
    assert "runtime_worker" in body["detail"]
    assert not RuntimeCommand.objects.exists()  # nothing left to run later


def test_a_hook_with_no_worker_alive_is_no_worker(api, builtin, remote):
    dead_worker()
    hook = {"event_type": "deploy.done", "from_role": "devops", "target_roles": ["main"], "payload": {}}
    response = api.post("/api/v1/hooks", hook, format="json")
    assert response.status_code == 503, response.content
    assert response.json()["errorCode"] == "no_worker"


def test_a_command_for_a_task_whose_worker_died_with_no_other_is_no_worker(api, builtin, remote, staff_user):
    worker = dead_worker()
    task = Task.objects.create(
        id="t-held", status="running", title="held", owner=worker.id, created_by=staff_user, run_spec={"x": 1}
    )
    response = api.post(f"/api/v1/tasks/{task.id}/cancel", {"reason": "stop"}, format="json")
    assert response.status_code == 503, response.content
    assert response.json()["errorCode"] == "no_worker"
    assert not RuntimeCommand.objects.exists()
    task.refresh_from_db()
    assert task.status == "running"  # nothing was applied


def test_a_live_worker_counts_and_a_stopped_one_does_not(builtin):
    worker = dead_worker("w-live")
    assert not workers_alive()
    RuntimeWorker.objects.filter(pk=worker.pk).update(heartbeat_at=timezone.now())
    assert workers_alive()
    RuntimeWorker.objects.filter(pk=worker.pk).update(stopped_at=timezone.now())
    assert not workers_alive()
    RuntimeWorker.objects.filter(pk=worker.pk).update(stopped_at=None, kind="command")
    assert not workers_alive()  # a terminal run takes no outside calls
