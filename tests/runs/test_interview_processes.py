"""The interview across real OS processes (docs/architecture.md §3, §6 "Operators in the
loop"): answers go to whichever worker runs the task, and survive ``kill -9`` of it.

- A web process without a runtime (``TEAMCLAW_RUNTIME=remote``) takes the operator's answers;
  a ``runtime_worker`` runs the task and goes on with them.
- ``kill -9`` of the server after interview round 1 was answered: the resumed task asks
  round 2 under the same id, never asks round 1 again, and finishes with every answer.
"""

from __future__ import annotations

import json

import pytest
from rest_framework.authtoken.models import Token

from monitoring.models import Artifact, Task, ToolConfirmation
from runs.models import RuntimeWorker
from tests.processes import Server, manage, process_env, wait_until

pytestmark = pytest.mark.django_db(transaction=True)

IDEA = "Add a CSV export of the order list for shop admins"


def pending(task_id: str, what: str) -> ToolConfirmation | None:
    return ToolConfirmation.objects.filter(task_id=task_id, kind="input", tool=what, status="pending").first()


def questions(row: ToolConfirmation) -> dict[str, str]:
    return {q["id"]: f"Answer to {q['id']}." for q in row.args["questions"]}


def test_a_web_process_without_a_runtime_takes_the_answers_a_worker_goes_on_with(builtin, api, settings, tmp_path):
    settings.TEAMCLAW = {**settings.TEAMCLAW, "RUNTIME": "remote"}
    worker = manage("runtime_worker", "--concurrency", "2", env=process_env(), log=tmp_path / "worker.log")
    try:
        wait_until(lambda: RuntimeWorker.objects.filter(pid=worker.process.pid).exists(), 60, "the worker")
        response = api.post("/api/v1/tasks", {"workflow": "requirement_review", "description": IDEA}, format="json")
        assert response.status_code == 201, response.content
        task_id = response.json()["task_id"]
        for _ in (1, 2):
            row = wait_until(lambda: pending(task_id, "interview"), 60, lambda: f"a round\n{worker.output()}")
            answered = api.post(f"/api/v1/tasks/{task_id}/answers", {"answers": questions(row)}, format="json")
            assert answered.status_code == 200, answered.content
            answered_row = row.pk
            wait_until(
                lambda pk=answered_row: ToolConfirmation.objects.get(pk=pk).status == "answered", 10, "the answer"
            )
        wait_until(lambda: pending(task_id, "next_action"), 60, lambda: f"the draft\n{worker.output()}")
        assert api.post(f"/api/v1/tasks/{task_id}/next", {"action": "end"}, format="json").status_code == 200
        wait_until(lambda: Task.objects.get(pk=task_id).status == "completed", 60, lambda: worker.output())
    finally:
        worker.stop()
    task = Task.objects.get(pk=task_id)
    assert task.owner == "" and task.attempt == 1
    result = json.loads(Artifact.objects.get(task=task, name="interview_result.json").content)
    assert [a["answer"] for a in result["answers"]] == [f"Answer to {a['id']}." for a in result["answers"]]


def test_kill_9_during_the_interview_then_the_task_resumes_with_the_answers_given(staff_user, tmp_path):
    token = Token.objects.create(user=staff_user).key
    env = process_env()
    first = Server(env, tmp_path / "server-1.log", token)
    try:
        status, body = first.api("POST", "tasks", {"workflow": "requirement_review", "description": IDEA})
        assert status == 201, body
        task_id = body["task_id"]
        round_1 = wait_until(lambda: pending(task_id, "interview"), 60, lambda: f"round 1\n{first.output()}")
        status, body = first.api("POST", f"tasks/{task_id}/answers", {"answers": questions(round_1)})
        assert status == 200, body
        round_2 = wait_until(
            lambda: (
                ToolConfirmation.objects.filter(task_id=task_id, kind="input", status="pending")
                .exclude(pk=round_1.pk)
                .first()
            ),
            60,
            lambda: f"round 2\n{first.output()}",
        )
        first.kill()
    finally:
        first.stop()
    assert Task.objects.get(pk=task_id).status == "running"  # nothing closed it: the process died

    second = Server(env, tmp_path / "server-2.log", token)
    try:
        wait_until(lambda: Task.objects.get(pk=task_id).attempt == 2, 30, lambda: f"the takeover\n{second.output()}")
        # The resumed attempt asks round 2 again under the same id, and never round 1.
        wait_until(
            lambda: (
                ToolConfirmation.objects.filter(pk=round_2.pk, status="pending")
                .exclude(context_id=round_2.context_id)
                .exists()
            ),
            30,
            lambda: f"round 2 asked again\n{second.output()}",
        )
        assert ToolConfirmation.objects.filter(task_id=task_id, kind="input").count() == 2
        assert ToolConfirmation.objects.get(pk=round_1.pk).status == "answered"
        status, body = second.api("POST", f"tasks/{task_id}/answers", {"answers": questions(round_2)})
        assert status == 200, body
        wait_until(lambda: pending(task_id, "next_action"), 60, lambda: f"the draft\n{second.output()}")
        status, body = second.api("POST", f"tasks/{task_id}/next", {"action": "end"})
        assert status == 200, body
        wait_until(lambda: Task.objects.get(pk=task_id).status == "completed", 60, lambda: second.output())
    finally:
        second.stop()
    result = json.loads(Artifact.objects.get(task_id=task_id, name="interview_result.json").content)
    assert len(result["answers"]) == 6 and all(a["answer"] for a in result["answers"])
