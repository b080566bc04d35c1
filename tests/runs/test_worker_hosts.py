"""Issue 31 item 3: which host and process runs what (a worker's hostname, pid and id, which is
``<hostname>-<pid>-<hex>``) is for staff only; every signed-in user still sees the workers'
state and load, on ``/api/v1/workers``, the dashboard and a task's ``worker``."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from capabilities.models import Project
from monitoring.models import Task
from runs.models import RuntimeWorker
from tests.helpers import Reader, reader

HOST = "build-host-7"
PID = 4242
WORKER = f"{HOST}-{PID}-0a1b2c3d"


@pytest.fixture
def readers(db, builtin, staff_user) -> dict[str, Reader]:
    """A live worker running a task of project ``a`` that ``member-a`` started; ``member-b``
    started one in project ``b``."""
    now = timezone.now()
    RuntimeWorker.objects.create(
        id=WORKER, kind="worker", hostname=HOST, pid=PID, concurrency=4, started_at=now, heartbeat_at=now
    )
    users = {"staff": staff_user}
    for slug in ("a", "b"):
        Project.objects.create(slug=slug, name=slug.upper())
        users[slug] = get_user_model().objects.create_user(f"member-{slug}", password="x")
        Task.objects.create(id=f"t-{slug}", project_id=slug, created_by=users[slug], status="running", owner=WORKER)
    return {name: reader(user) for name, user in users.items()}


def test_the_workers_api_names_hosts_to_staff_only(readers):
    # (a runtime host an earlier test of this process started may be listed too)
    (staff_row,) = [r for r in readers["staff"].api.get("/api/v1/workers").json()["results"] if r["id"] == WORKER]
    assert (staff_row["hostname"], staff_row["pid"], staff_row["running"]) == (HOST, PID, 2)
    for name in ("a", "b"):
        response = readers[name].api.get("/api/v1/workers")
        assert response.status_code == 200
        rows = response.json()["results"]
        assert rows and all(not {"id", "hostname", "pid"} & set(row) for row in rows)
        assert ("alive", 2, 4) in [(row["state"], row["running"], row["concurrency"]) for row in rows]
        assert HOST not in json.dumps(rows)


def test_the_dashboard_names_hosts_to_staff_only(readers):
    assert WORKER in readers["staff"].page.get("/").content.decode()
    for name in ("a", "b"):
        page = readers[name].page.get("/").content.decode()
        assert "Runtime workers" in page
        assert HOST not in page and f"-{PID}-" not in page


def test_a_task_names_its_worker_to_staff_only(readers):
    assert readers["staff"].api.get("/api/v1/tasks/t-a").json()["worker"] == WORKER
    own = readers["a"].api.get("/api/v1/tasks/t-a")
    assert own.status_code == 200 and own.json()["worker"] is None
    listed = readers["b"].api.get("/api/v1/tasks").json()["results"]
    assert [(t["task_id"], t["worker"]) for t in listed] == [("t-b", None)]
