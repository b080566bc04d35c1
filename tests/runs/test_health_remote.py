"""Capability health in a web process that runs no agents (``TEAMCLAW_RUNTIME=remote``;
``runs.health.workers_capability_status``): read from the runtime workers' rows and their
instance slots, without starting a runtime here. The skill page's view of it is tested in
``tests/skills/test_skill_pages.py``, the path with a real worker process in
``tests/runs/test_workers_embedded.py``."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from runs.host import current_host
from runs.models import InstanceSlot, RuntimeWorker

pytestmark = pytest.mark.django_db(transaction=True)
"""Transactional, so that a runtime host an earlier test of this process left running is
stopped first (``tests/conftest.py::no_runtime_left_running``) and ``current_host() is None``
below says this process started none."""


@pytest.fixture
def remote(settings, builtin):
    """A web process without agents, starting from no worker rows and no held slots, whatever
    earlier tests in the run left."""
    settings.TEAMCLAW = {**settings.TEAMCLAW, "RUNTIME": "remote"}
    RuntimeWorker.objects.all().delete()
    InstanceSlot.objects.all().delete()


def worker(worker_id: str, *, kind: str = "worker", silent_s: float = 0) -> RuntimeWorker:
    now = timezone.now()
    return RuntimeWorker.objects.create(
        id=worker_id,
        kind=kind,
        hostname="h",
        pid=1,
        concurrency=4,
        started_at=now - timedelta(seconds=silent_s + 1),
        heartbeat_at=now - timedelta(seconds=silent_s),
    )


def hold(role: str, index: int, owner: str, instance_id: str) -> None:
    InstanceSlot.objects.update_or_create(
        role=role,
        index=index,
        defaults={
            "owner": owner,
            "instance_id": instance_id,
            "acquired_at": timezone.now(),
            "lease_expires_at": timezone.now() + timedelta(seconds=10),
        },
    )


def test_with_no_live_worker_every_capability_is_unhealthy_and_says_why(remote, api):
    worker("w-silent", silent_s=3600)
    health = api.get("/api/v1/health/schema_query").json()
    assert health["status"] == "UNHEALTHY"
    assert "no runtime worker is alive" in health["message"] and "runtime_worker" in health["message"]
    assert health["instances"] == []
    assert api.get("/api/v1/capabilities/schema_query/health").json()["status"] == "unavailable"
    assert current_host() is None


def test_a_live_workers_instances_are_the_capabilitys(remote, api):
    worker("w-1")
    hold("dba", 0, "w-1", "dba-aaaa")
    hold("dba", 1, "w-silent", "dba-bbbb")  # held by a worker that stopped beating: not counted
    worker("w-silent", silent_s=3600)
    health = api.get("/api/v1/health/schema_query").json()
    assert health["status"] == "HEALTHY", health
    assert [(i["instance_id"], i["worker"]) for i in health["instances"]] == [("dba-aaaa", "w-1")]
    assert health["lastHeartbeat"] is not None
    document = api.get("/api/v1/capabilities/schema_query/health").json()
    assert document["status"] == "available" and document["enabled"] is True
    assert api.get("/api/v1/health/no_such_capability").status_code == 404
    assert current_host() is None


def test_a_terminal_run_alone_serves_only_its_own_task(remote, api):
    """A run_workflow in a terminal holds slots for its own task: its instances answer nobody
    else, so they neither make the capability healthy nor are listed."""
    worker("cmd-1", kind="command")
    hold("dba", 0, "cmd-1", "dba-terminal")
    health = api.get("/api/v1/health/schema_query").json()
    assert health["status"] == "UNHEALTHY" and "no runtime worker is alive" in health["message"], health
    assert health["instances"] == []
    worker("w-1")  # a worker that takes calls: healthy, one spawned on the first call
    health = api.get("/api/v1/health/schema_query").json()
    assert health["status"] == "HEALTHY" and health["instances"] == [], health
    assert "the newest runtime worker heartbeat was" in health["message"]  # a dead one shows its age


def test_an_instances_worker_is_named_to_staff_only(remote, api, viewer_user):
    """Issue 31: a worker's id is ``<hostname>-<pid>-<hex>``; who is not staff sees the
    instances and their health, not where they run."""
    worker("build-host-7-4242-0a1b2c3d")
    hold("dba", 0, "build-host-7-4242-0a1b2c3d", "dba-aaaa")
    paths = ("/api/v1/health/schema_query", "/api/v1/capabilities/schema_query/health")
    for path in paths:
        assert [i["worker"] for i in api.get(path).json()["instances"]] == ["build-host-7-4242-0a1b2c3d"]
    api.force_authenticate(viewer_user)
    for path in paths:
        body = api.get(path).json()
        assert [(i["instance_id"], i["worker"]) for i in body["instances"]] == [("dba-aaaa", None)]
        assert "build-host-7" not in str(body)
