"""Commands sent while a task is being taken over (issue 28 item 4; README "Scaling out"):
PostgreSQL, Redis, one web process without a runtime and two ``runtime_worker`` processes,
with the default lease (10 s). Three reviews wait for the operator's confirmation on the
first worker, which is killed (``kill -9``); at once a cancel, an approval and an
instruction are sent, one to each task. Each waits through the lease and the takeover and is
answered by the worker that took the task over: the cancel ends its task ``terminated``, the
approval lets its task complete, the instruction reaches the agent of the same role in the
resumed run (one ``user_instruction`` snapshot), and none is refused. Runs in the PostgreSQL
pass of ``make test``."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from rest_framework.authtoken.models import Token

from monitoring.models import ExecutionContext, Snapshot, Task, ToolConfirmation
from runs.models import RuntimeCommand, RuntimeWorker
from tests.helpers import held_project, postgres_and_redis
from tests.processes import Server, manage, process_env, wait_until

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres, pytest.mark.redis]

REDIS_URL = "redis://127.0.0.1:6379/9"
LEASE_S = 10  # the default: a command's wait must cover it


@pytest.fixture
def services(builtin):
    postgres_and_redis(REDIS_URL)
    held_project()


def pending(task_id: str) -> ToolConfirmation | None:
    return ToolConfirmation.objects.filter(task_id=task_id, status="pending").first()


def test_a_cancel_an_approval_and_an_instruction_sent_during_a_takeover_each_get_their_answer(
    services, staff_user, tmp_path
):
    token = Token.objects.create(user=staff_user).key
    env = process_env(REDIS_URL=REDIS_URL, TEAMCLAW_RUNTIME="remote", TEAMCLAW_LEASE_S=str(LEASE_S))
    first = manage("runtime_worker", "--concurrency", "4", env=env, log=tmp_path / "worker-1.log")
    second = web = None
    try:
        web = Server(env, tmp_path / "web.log", token)
        tasks = []
        for n in range(3):
            body = {
                "workflow": "requirement_review",
                "input_markdown": f"# Shop {n}\n\nUsers buy books.",
                "project": "held",
            }
            status, answer = web.api("POST", "tasks", body)
            assert status == 201, answer
            tasks.append(answer["task_id"])
        wait_until(lambda: all(pending(t) for t in tasks), 90, "the three reviews to wait for the operator")
        second = manage("runtime_worker", "--concurrency", "4", env=env, log=tmp_path / "worker-2.log")
        wait_until(lambda: RuntimeWorker.objects.filter(stopped_at=None).count() == 2, 60, "the second worker")
        cancelled, approved, instructed = tasks
        asked = {t: pending(t) for t in tasks}
        old_context = ExecutionContext.objects.get(pk=asked[instructed].context_id)

        first.kill()
        sends = {
            "cancel": ("POST", f"tasks/{cancelled}/cancel", {"reason": "duplicate"}),
            "approval": ("POST", f"confirmations/{asked[approved].id}", {"approve": True}),
            "instruction": ("POST", f"contexts/{old_context.id}/instructions", {"text": "Keep it short."}),
        }
        started = time.monotonic()

        def send(what: str) -> tuple[int, object, float]:
            status, answer = web.api(*sends[what])
            return status, answer, time.monotonic() - started

        with ThreadPoolExecutor(3) as pool:
            answers = dict(zip(sends, pool.map(send, sends), strict=True))
        print("\n" + ", ".join(f"{what} {status} after {took:.1f} s" for what, (status, _, took) in answers.items()))
        assert answers["cancel"][0] == 200, answers["cancel"]
        assert answers["approval"][0] == 200, answers["approval"]
        assert answers["instruction"][0] == 201, answers["instruction"]
        assert all(took < LEASE_S + 10 for _, _, took in answers.values()), answers

        wait_until(lambda: Task.objects.get(pk=cancelled).status == "terminated", 10, "the cancelled task to end")
        wait_until(lambda: Task.objects.get(pk=approved).status == "completed", 60, "the approved task to complete")
        # the instruction went to the agent of the same role in the resumed run, once
        answer = answers["instruction"][1]
        assert answer["snapshot"]["context_id"] == answer["context_id"]
        new_context = ExecutionContext.objects.get(pk=answer["context_id"])
        assert (new_context.task_id, new_context.role) == (instructed, old_context.role)
        assert new_context.pk != old_context.pk
        instructions = Snapshot.objects.filter(context__task_id=instructed, trigger="user_instruction")
        assert instructions.count() == 1
        again = wait_until(lambda: pending(instructed), 30, "the resumed run to ask again")
        assert again.id == asked[instructed].id
        status, answer = web.api("POST", f"confirmations/{again.id}", {"approve": True})
        assert status == 200, answer
        wait_until(lambda: Task.objects.get(pk=instructed).status == "completed", 60, "the instructed task")
    finally:
        for process in [p for p in (web, first, second) if p is not None]:
            process.stop()
    assert {t: Task.objects.get(pk=t).attempt for t in tasks} == {t: 2 for t in tasks}
    # each command was taken once, by the new owner, and answered
    commands = RuntimeCommand.objects.filter(task_id__in=[cancelled, instructed])
    assert sorted(commands.values_list("kind", "status")) == [("cancel", "done"), ("instruction", "done")]
