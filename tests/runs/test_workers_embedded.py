"""Execution that outlives a process, on the embedded default (SQLite, no Redis): real OS
processes on this test's database (docs/architecture.md §3).

- A terminal's ``run_workflow`` waiting for a tool confirmation is approved through the web
  API of another process, and then finishes.
- A web process without a runtime (``TEAMCLAW_RUNTIME=remote``) has the API's invokes and
  hooks run by a ``runtime_worker``, which follows the configuration saved in another process.
- ``kill -9`` of the server while a task waits on a confirmation: after ``mark_interrupted``
  and a new start the task is still waiting (the same confirmation), is approved through the
  new server and completes; no step completed before the crash runs twice.
"""

from __future__ import annotations

import time
from collections import Counter

import pytest
from rest_framework.authtoken.models import Token

from capabilities.models import ToolPermission
from monitoring.models import AgentInstance, Message, Task, ToolConfirmation
from runs.host import current_host
from runs.models import RuntimeWorker
from runs.tasks import sample_requirement
from tests.processes import Server, manage, process_env, wait_until

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def main_confirms_file_writes(builtin):
    ToolPermission.objects.filter(project=None, role__role="main", tool="file_write").update(mode="confirm")


def pending_confirmation(task_id: str) -> ToolConfirmation | None:
    return ToolConfirmation.objects.filter(task_id=task_id, status="pending").first()


def requests_per_step(task_id: str) -> Counter[tuple[str, str, str]]:
    """How many invoke requests were sent per step (caller, capability, callee role)."""
    rows = Message.objects.filter(task_id=task_id, type="invoke_request").exclude(status="denied")
    return Counter(rows.values_list("from_role", "capability_id", "to_role"))


def test_a_terminal_run_waiting_for_a_confirmation_is_approved_through_the_web_api(
    main_confirms_file_writes, runtime_host, api, tmp_path
):
    # runtime_host: this process is a server with an embedded worker polling for tasks too; it
    # must never take the terminal's task (the terminal owns it from the moment it exists).
    document = tmp_path / "bookstore.md"
    document.write_text(sample_requirement(), encoding="utf-8")
    run = manage(
        "run_workflow",
        "requirement_review",
        "--input",
        str(document),
        "--output",
        str(tmp_path / "out"),
        # a lease long enough that a loaded machine's missed heartbeat is not a takeover: this
        # test is about ownership, tests/monitoring/test_fencing_processes.py about takeovers
        env=process_env(TEAMCLAW_LEASE_S="15"),
        log=tmp_path / "run_workflow.log",
    )
    try:
        task = wait_until(lambda: Task.objects.filter(title="bookstore").first(), 60, f"the task\n{run.output()}")
        assert task.owner == RuntimeWorker.objects.get(pid=run.process.pid).pk
        confirmation = wait_until(lambda: pending_confirmation(task.id), 60, f"a confirmation\n{run.output()}")
        assert Task.objects.get(pk=task.id).attempt == 1
        response = api.post(f"/api/v1/confirmations/{confirmation.id}", {"approve": True}, format="json")
        assert response.status_code == 200, response.json()
        assert response.json()["status"] == "approved"
        assert run.process.wait(60) == 0, run.output()
    finally:
        run.stop()
    task.refresh_from_db()
    assert task.status == "completed"
    assert task.owner == ""
    confirmation.refresh_from_db()
    assert (confirmation.status, confirmation.decided_by) == ("approved", "operator")
    assert "Completed:" in run.output()
    assert (tmp_path / "out" / "requirement_final.md").exists()


def test_kill_9_of_the_server_while_a_task_waits_on_a_confirmation_then_it_resumes(
    main_confirms_file_writes, staff_user, tmp_path
):
    token = Token.objects.create(user=staff_user).key
    env = process_env()
    first = Server(env, tmp_path / "server-1.log", token)
    try:
        status, body = first.api(
            "POST", "tasks", {"workflow": "requirement_review", "input_markdown": "# Shop\n\nUsers buy books quickly."}
        )
        assert status == 201, body
        task_id = body["task_id"]
        confirmation = wait_until(lambda: pending_confirmation(task_id), 60, f"a confirmation\n{first.output()}")
        before = requests_per_step(task_id)
        first.kill()
    finally:
        first.stop()
    task = Task.objects.get(pk=task_id)
    assert (task.status, task.attempt) == ("running", 1)  # nothing closed it: the process died

    cleanup = manage("mark_interrupted", env=env, log=tmp_path / "mark_interrupted.log")
    assert cleanup.process.wait(60) == 0
    cleanup.stop()
    assert "1 unfinished task: each resumes where it stopped" in cleanup.output()

    second = Server(env, tmp_path / "server-2.log", token)
    try:
        # The new server's worker takes the task over once its lease (2 s here) has expired.
        wait_until(lambda: Task.objects.get(pk=task_id).attempt == 2, 30, f"the takeover\n{second.output()}")
        still = wait_until(
            lambda: (
                ToolConfirmation.objects.filter(pk=confirmation.id, context_id__isnull=False)
                .exclude(context_id=confirmation.context_id)
                .first()
            ),
            30,
            f"the resumed attempt asking the same confirmation\n{second.output()}",
        )
        assert still.status == "pending"
        assert ToolConfirmation.objects.filter(task_id=task_id).count() == 1
        status, body = second.api("POST", f"confirmations/{confirmation.id}", {"approve": True})
        assert status == 200, body
        wait_until(lambda: Task.objects.get(pk=task_id).status == "completed", 60, f"completion\n{second.output()}")
        wait_until(lambda: Task.objects.get(pk=task_id).owner == "", 10, "the worker closing its lease")
    finally:
        second.stop()
    task = Task.objects.get(pk=task_id)
    assert task.attempt == 2
    assert task.resumed_steps == sum(count for (caller, _, _), count in before.items() if caller == "main")
    after = requests_per_step(task_id)
    # Every step main completed before the crash was answered from the record, not sent again;
    # only the operator's hand-over to main (in flight at the crash) was executed twice.
    assert after - before == Counter({("user", "task_orchestration", "main"): 1})
    names = set(task.artifacts.values_list("name", flat=True))
    assert {"requirement_final.md", "quality_report.json"} <= names


def test_a_web_process_without_a_runtime_has_invokes_and_hooks_run_by_a_worker(builtin, api, settings, tmp_path):
    settings.TEAMCLAW = {**settings.TEAMCLAW, "RUNTIME": "remote"}
    worker = manage("runtime_worker", "--concurrency", "2", env=process_env(), log=tmp_path / "worker.log")
    try:
        wait_until(lambda: RuntimeWorker.objects.filter(pid=worker.process.pid).exists(), 60, "the worker")
        invoke = {"capability_id": "schema_query", "from_role": "coderA", "params": {"table": "users"}}
        response = api.post("/api/v1/capabilities/invoke", invoke, format="json")
        assert response.status_code == 200, response.json()
        body = response.json()
        assert body["success"], body
        assert body["result"] == body["data"]
        worker_instances = AgentInstance.objects.filter(instance_id=body["from_instance"])
        assert worker_instances.exists()  # the answer came from the worker's runtime
        # Health as this web process knows it: the worker's instance, read from the database.
        health = api.get("/api/v1/health/schema_query").json()
        assert health["status"] == "HEALTHY", health
        worker_id = RuntimeWorker.objects.get(pid=worker.process.pid).id
        assert {(i["instance_id"], i["worker"]) for i in health["instances"]} == {(body["from_instance"], worker_id)}
        assert api.get("/api/v1/capabilities/schema_query/health").json()["status"] == "available"
        hook = {"event_type": "deploy.done", "from_role": "devops", "target_roles": ["main"], "payload": {}}
        response = api.post("/api/v1/hooks", hook, format="json")
        assert response.status_code == 200, response.json()
        assert [ack["status"] for ack in response.json()["acks"]] == ["received"]
        response = api.post("/api/v1/capabilities/invoke", {**invoke, "task_id": "no-such-task"}, format="json")
        assert response.status_code == 400
        assert "task_id" in response.json()["errors"]
        # A change saved in this process reaches the worker's next call (PRD §4.8).
        doc = api.get("/api/v1/capabilities/schema_query").json()
        off = {"document_version": doc["document_version"], "enabled": False}
        assert api.patch("/api/v1/capabilities/schema_query", off, format="json").status_code == 200
        time.sleep(0.5)  # the worker's next poll (250 ms) notes the new config version
        body = api.post("/api/v1/capabilities/invoke", invoke, format="json").json()
        assert body["error"]["code"] == "capability_disabled", body
    finally:
        worker.stop()
    # schema_query is disabled now; another card says what a web process without workers can tell.
    health = api.get("/api/v1/health/task_orchestration").json()
    assert health["status"] == "UNHEALTHY" and "no runtime worker is alive" in health["message"], health
    assert api.get("/api/v1/capabilities/task_orchestration/health").json()["status"] == "unavailable"
    assert current_host() is None  # this process never started a runtime
