"""Scaling out (README "Scaling out"): PostgreSQL and Redis, two web processes without a runtime
(``TEAMCLAW_RUNTIME=remote``) and two ``runtime_worker`` processes, all real OS processes.

Forty reviews spread over both workers. In project ``held`` main's ``file_write`` needs a
confirmation, so three reviews wait for the operator (a role runs at most four instances per
worker, PRD §4.7, so a worker holding all three still has a main for the rest). An
instruction, a cancel and approvals sent through either web process reach whichever worker
runs the task; after ``kill -9`` of one worker its waiting task is taken over by the other
within the lease + 5 s, still waiting for the same confirmation, and finishes once approved,
with no step completed before the crash sent again. Runs in the PostgreSQL pass of
``make test``; skipped on SQLite and without Redis.
"""

from __future__ import annotations

import time
from collections import Counter

import pytest
from rest_framework.authtoken.models import Token

from monitoring.models import ExecutionContext, Message, Snapshot, Task, ToolConfirmation
from runs.models import InstanceSlot, RuntimeWorker
from tests.helpers import held_project, postgres_and_redis
from tests.processes import Server, manage, process_env, wait_until, wait_while_progressing

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres, pytest.mark.redis]

REDIS_URL = "redis://127.0.0.1:6379/7"
TASKS = 40
HELD = 3
HELD_AT = (5, 18, 31)
LEASE_S = 2


@pytest.fixture
def services(builtin):
    postgres_and_redis(REDIS_URL)
    held_project()


def requests_per_step(task_id: str) -> Counter[tuple[str, str, str]]:
    rows = Message.objects.filter(task_id=task_id, type="invoke_request").exclude(status="denied")
    return Counter(rows.values_list("from_role", "capability_id", "to_role"))


def state(task_ids: list[str]) -> str:
    """What the tasks are doing, for a failure message."""
    tasks = Counter(Task.objects.filter(pk__in=task_ids).values_list("status", "attempt"))
    waiting = ToolConfirmation.objects.filter(task_id__in=task_ids, status="pending").count()
    errors = set(Task.objects.filter(pk__in=task_ids).exclude(error=None).values_list("error__code", flat=True))
    return f"tasks {dict(tasks)}, {waiting} waiting, errors {errors}{stuck(task_ids)}"


def stuck(task_ids: list[str]) -> str:
    """Where the running tasks that wait for no operator stand (for a failure message): the
    last recorded message of each, and who holds the instance slots."""
    running = Task.objects.filter(pk__in=task_ids, status="running").exclude(
        pk__in=ToolConfirmation.objects.filter(status="pending").values("task_id")
    )
    lines = []
    for task_id in running.values_list("pk", flat=True):
        last = Message.objects.filter(task_id=task_id).order_by("-seq").first()
        lines.append(f"{task_id}: last {last} {last.capability_id if last else ''}")
    slots = [f"{s} {s.instance_id} wanted={s.wanted_at}" for s in InstanceSlot.objects.all()]
    return "" if not lines else "\n" + "\n".join(lines + slots)


def pending(task_id: str) -> ToolConfirmation | None:
    return ToolConfirmation.objects.filter(task_id=task_id, status="pending").first()


def owner(task_id: str) -> str:
    return Task.objects.get(pk=task_id).owner


def test_two_web_processes_and_two_workers_share_the_work_and_survive_a_kill_9(services, staff_user, tmp_path):
    token = Token.objects.create(user=staff_user).key
    env = process_env(REDIS_URL=REDIS_URL, TEAMCLAW_RUNTIME="remote", TEAMCLAW_LEASE_S=str(LEASE_S))
    workers = [
        manage("runtime_worker", "--concurrency", "8", env=env, log=tmp_path / f"worker-{n}.log") for n in (1, 2)
    ]
    webs: list[Server] = []
    try:
        webs = [Server(env, tmp_path / f"web-{n}.log", token) for n in (1, 2)]
        task_ids, held = [], []
        for n in range(TASKS):
            body = {"workflow": "requirement_review", "input_markdown": f"# Shop {n}\n\nUsers buy books."}
            if n in HELD_AT:
                body["project"] = "held"
            status, answer = webs[n % 2].api("POST", "tasks", body)
            assert status == 201, answer
            assert answer["status"] == "queued"  # no runtime in the web process
            task_ids.append(answer["task_id"])
            if "project" in body:
                held.append(answer["task_id"])
        free = [t for t in task_ids if t not in held]
        # Forty reviews take about 20 s here, several times that on a loaded machine: the
        # wait fails once nothing has moved for a minute (Message.seq grows with every step).
        wait_while_progressing(
            lambda: (
                Task.objects.filter(pk__in=free, status="completed").count() == len(free)
                and ToolConfirmation.objects.filter(task_id__in=held, status="pending").count() == HELD
            ),
            lambda: Message.objects.filter(task_id__in=task_ids).count(),
            60,
            lambda: f"the free tasks to complete and the held ones to wait: {state(task_ids)}",
        )
        done_by = Counter(
            Message.objects.filter(task_id__in=free, type="invoke_request", from_role="user").values_list(
                "to_instance", flat=True
            )
        )
        assert len(done_by) >= 2, done_by  # main instances of both workers took reviews

        # An instruction through each web process to a waiting agent.
        for web, task_id in zip(webs, held[:2], strict=True):
            context = ExecutionContext.objects.get(pk=pending(task_id).context_id)
            status, answer = web.api("POST", f"contexts/{context.id}/instructions", {"text": "Keep it short."})
            assert status == 201, answer
            assert Snapshot.objects.filter(context_id=context.id, trigger="user_instruction").exists()

        # A cancel and an approval, each through the web process of the other task.
        status, answer = webs[1].api("POST", f"tasks/{held[0]}/cancel", {"reason": "duplicate"})
        assert status == 200, answer
        status, answer = webs[0].api("POST", f"confirmations/{pending(held[1]).id}", {"approve": True})
        assert status == 200, answer
        wait_until(lambda: Task.objects.get(pk=held[0]).status == "terminated", 10, "the cancel")
        wait_until(lambda: Task.objects.get(pk=held[1]).status == "completed", 30, "the approved task")

        # kill -9 of a worker that runs a waiting task: the other takes its tasks over.
        waiting = held[2:]
        victim = owner(waiting[0])
        orphans = [t for t in waiting if owner(t) == victim]
        before = {task_id: requests_per_step(task_id) for task_id in orphans}
        asked = {task_id: pending(task_id) for task_id in orphans}
        victim_pid = RuntimeWorker.objects.get(pk=victim).pid
        [victim_process] = [w for w in workers if w.process.pid == victim_pid]
        [survivor_process] = [w for w in workers if w is not victim_process]
        survivor = RuntimeWorker.objects.get(pid=survivor_process.process.pid, stopped_at=None).pk
        victim_process.kill()
        killed_at = time.monotonic()
        wait_until(
            lambda: all(
                (row := pending(t)) is not None and row.id == asked[t].id and row.context_id != asked[t].context_id
                for t in orphans
            ),
            LEASE_S + 5,
            lambda: f"the other worker asking the orphans' confirmations again: {state(orphans)}",
        )
        takeover_s = time.monotonic() - killed_at
        assert {owner(t) for t in orphans} == {survivor}

        for n, task_id in enumerate(waiting):
            status, answer = webs[n % 2].api("POST", f"confirmations/{pending(task_id).id}", {"approve": True})
            assert status == 200, answer
        wait_until(
            lambda: not Task.objects.filter(pk__in=task_ids, status__in=["queued", "running"]).exists(),
            60,
            lambda: f"every task to end: {state(task_ids)}",
        )
    finally:
        for process in [*webs, *workers]:
            process.stop()
    statuses = Counter(Task.objects.filter(pk__in=task_ids).values_list("status", flat=True))
    assert statuses == Counter({"completed": TASKS - 1, "terminated": 1})
    for task_id in orphans:
        assert Task.objects.get(pk=task_id).attempt == 2
        # Nothing main completed before the crash was sent again; only the hand-over to main was.
        assert requests_per_step(task_id) - before[task_id] == Counter({("user", "task_orchestration", "main"): 1})
    print(f"\n{len(orphans)} orphaned task(s) taken over and waiting again {takeover_s:.1f} s after kill -9")
