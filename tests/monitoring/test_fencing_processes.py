"""Fencing under a pause (issue 28 item 2; ``monitoring.fencing``, README "Scaling out"):
two ``runtime_worker`` processes on PostgreSQL and Redis. The owner of a running review is
stopped (SIGSTOP, a long GC pause or a VM stall) for longer than its lease, the other
worker takes the task over (attempt 2); then the paused one is continued (SIGCONT). From
then on nothing of the paused worker's run reaches the task's record: no message, status,
context change, snapshot or artifact of its agents, and the task completes once, on the
worker that took it over. Runs in the PostgreSQL pass of ``make test``."""

from __future__ import annotations

import os
import signal
import time
from datetime import UTC, datetime

import pytest
from django.conf import settings
from django.db.models import Q
from django.test import override_settings

from monitoring.models import Artifact, ExecutionContext, Message, Snapshot, Task
from runs.models import RuntimeWorker
from runs.tasks import start_task
from tests.helpers import postgres_and_redis
from tests.processes import manage, process_env, wait_until

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres, pytest.mark.redis]

REDIS_URL = "redis://127.0.0.1:6379/8"
LEASE_S = 2
THINK_MS = 700
"""Each step of the review waits this long (the offline agents' paced demo), so the run is
mid-way through its steps when its worker is paused."""


@pytest.fixture
def services(builtin):
    postgres_and_redis(REDIS_URL)


def record(task_id: str, instances: set[str], contexts: set[str]) -> dict[str, object]:
    """What the paused worker's agents (``instances``, ``contexts``) have in the task's record."""
    mine = Q(from_instance__in=instances) | Q(to_instance__in=instances)
    return {
        "messages": sorted(Message.objects.filter(mine, task_id=task_id).values_list("id", "status")),
        "contexts": sorted(ExecutionContext.objects.filter(pk__in=contexts).values_list("id", "status", "updated_at")),
        "snapshots": sorted(Snapshot.objects.filter(context_id__in=contexts).values_list("id", flat=True)),
        "artifacts": sorted(
            Artifact.objects.filter(task_id=task_id, context_id__in=contexts).values_list("name", "created_at")
        ),
    }


def test_a_worker_paused_past_its_lease_writes_nothing_more_of_the_task_it_lost(services, tmp_path):
    env = process_env(REDIS_URL=REDIS_URL, TEAMCLAW_RUNTIME="remote", TEAMCLAW_LEASE_S=str(LEASE_S))
    workers = [
        manage("runtime_worker", "--concurrency", "4", env=env, log=tmp_path / f"worker-{n}.log") for n in (1, 2)
    ]
    paused = None
    try:
        wait_until(lambda: RuntimeWorker.objects.filter(stopped_at=None).count() == 2, 60, "both workers to beat")
        with override_settings(TEAMCLAW={**settings.TEAMCLAW, "RUNTIME": "remote"}, REDIS_URL=REDIS_URL):
            task = start_task(
                workflow="requirement_review",
                input_markdown="# Shop\n\nUsers buy books.\n\n## Payment\n\nCards and vouchers.\n",
                think_time_ms=THINK_MS,
            )
        responses = Message.objects.filter(task_id=task.id, type="invoke_response")
        wait_until(lambda: responses.count() >= 3, 60, "the review to be under way")
        owner = Task.objects.get(pk=task.id).owner
        [paused] = [w for w in workers if w.process.pid == RuntimeWorker.objects.get(pk=owner).pid]
        os.kill(paused.process.pid, signal.SIGSTOP)
        stopped_at = datetime.now(tz=UTC)
        wait_until(lambda: Task.objects.get(pk=task.id).attempt == 2, LEASE_S + 10, "the other worker's takeover")
        taken_at = time.monotonic()
        time.sleep(0.5)  # the paused worker's recorder child wrote what it had been sent
        contexts = set(
            ExecutionContext.objects.filter(task_id=task.id, created_at__lt=stopped_at).values_list("pk", flat=True)
        )
        instances = set(ExecutionContext.objects.filter(pk__in=contexts).values_list("instance_id", flat=True))
        # the resume closed the paused run's open contexts; the new owner runs on in contexts of its own
        wait_until(
            lambda: responses.exclude(Q(from_instance__in=instances) | Q(to_instance__in=instances)).exists(),
            30,
            "the new owner to record a step",
        )
        before = record(task.id, instances, contexts)
        os.kill(paused.process.pid, signal.SIGCONT)
        wait_until(lambda: Task.objects.get(pk=task.id).status == "completed", 120, "the review to complete")
        time.sleep(2 * LEASE_S)  # time enough for the paused worker to write, were it allowed to
        assert paused.process.poll() is None, paused.output()  # alive, only fenced
        after = record(task.id, instances, contexts)
        ended = Task.objects.get(pk=task.id)
        print(f"\ntaken over {taken_at:.0f}; paused worker's rows before SIGCONT and after: {len(before['messages'])}")
    finally:
        if paused is not None and paused.process.poll() is None:
            os.kill(paused.process.pid, signal.SIGCONT)
        for process in workers:
            process.stop()
    assert after == before
    assert (ended.status, ended.attempt, ended.owner) == ("completed", 2, "")
    # completed once: one answer to the user who started it
    assert Message.objects.filter(task_id=task.id, type="invoke_response", to_role="user").count() == 1
    assert "taken over by another worker" in paused.output()
