"""Tasks that outlive their worker (docs/architecture.md §3): leases and claims, resuming from
the record, commands and confirmations through the database, cancelling, listing
confirmations. In one process; tests/test_workers_*.py cross real processes."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from capabilities.models import ToolPermission
from monitoring.models import Message, Task, ToolConfirmation
from monitoring.recorder import Recorder
from monitoring.recovery import mark_interrupted
from runs import host as host_module
from runs.dispatch import claim_tasks
from runs.models import RuntimeWorker
from runs.pinned_config import pinned_for
from runs.resume import tokens_spent
from runs.tasks import run_spec, start_task
from teamclaw.runtime.events import ConfirmationChanged, ConfirmationState
from teamclaw.runtime.resume import RecordedConfirmation, RecordedStep, ResumeJournal
from tests.helpers import wait_for_task
from tests.live_helpers import wait_for_confirmation

REVIEW = "# Shop\n\nUsers buy books quickly."


@pytest.fixture
def main_confirms_file_writes(builtin):
    ToolPermission.objects.filter(project=None, role__role="main", tool="file_write").update(mode="confirm")


def queued_task(task_id: str, **fields) -> Task:
    spec = run_spec("task_orchestration", {"workflow": "generic", "task_description": "x"}, "x")
    return Task.objects.create(id=task_id, kind="task", workflow="generic", status="queued", run_spec=spec, **fields)


def confirmation_row(confirmation_id: str, task_id: str, *, after_s: int = 0, **fields) -> ToolConfirmation:
    """A recorded file_write confirmation of main (pending unless ``status`` says otherwise)."""
    now = timezone.now() + timedelta(seconds=after_s)
    return ToolConfirmation.objects.create(
        id=confirmation_id,
        context_id="c",
        instance_id="i",
        role="main",
        task_id=task_id,
        tool="file_write",
        created_at=now,
        expires_at=now + timedelta(minutes=10),
        **fields,
    )


# -- the journal ------------------------------------------------------------------------------


def test_a_journal_answers_each_recorded_step_once_in_order_and_nothing_else():
    journal = ResumeJournal.of(
        2,
        [
            RecordedStep("main", "expert_review", {"mode": "review", "n": 1}, {"findings": ["a"]}),
            RecordedStep("main", "expert_review", {"n": 1, "mode": "review"}, {"findings": ["b"]}),
        ],
    )
    assert journal.answer("main", "expert_review", {"mode": "review", "n": 1}) == {"findings": ["a"]}
    assert journal.answer("main", "expert_review", {"n": 1, "mode": "review"}) == {"findings": ["b"]}
    assert journal.answer("main", "expert_review", {"mode": "review", "n": 1}) is None  # used up: live
    assert journal.answer("pm", "expert_review", {"mode": "review", "n": 1}) is None  # another caller
    assert (journal.answered, journal.remaining) == (2, 0)


def test_a_journal_hands_back_a_confirmation_by_role_tool_and_arguments():
    recorded = RecordedConfirmation("c1", "main", "file_write", {"path": "a.md", "content": "x"}, "pending")
    journal = ResumeJournal.of(2, [], [recorded])
    assert journal.confirmation("main", "file_write", {"path": "a.md", "content": "other"}) is None
    assert journal.confirmation("main", "file_write", {"content": "x", "path": "a.md"}) == recorded
    assert journal.confirmation("main", "file_write", {"path": "a.md", "content": "x"}) is None


# -- claims and leases ------------------------------------------------------------------------


def test_only_one_of_two_racing_workers_claims_a_task(transactional_db, builtin):
    for n in range(20):
        queued_task(f"race-{n}")

    def claim(worker: str) -> list[str]:
        taken: list[str] = []
        try:
            while Task.objects.filter(status="queued").exists():
                taken += [t.pk for t in claim_tasks(worker, 1)]
        finally:
            connection.close()
        return taken

    with ThreadPoolExecutor(2) as pool:
        first, second = pool.map(claim, ["worker-a", "worker-b"])
    assert sorted(first + second) == sorted(f"race-{n}" for n in range(20))  # each exactly once
    assert set(Task.objects.values_list("attempt", flat=True)) == {1}


def test_a_running_task_is_claimed_only_once_its_lease_has_expired(transactional_db, builtin):
    future = timezone.now() + timedelta(seconds=30)
    queued_task("held", owner="worker-a", lease_expires_at=future)
    Task.objects.filter(pk="held").update(status="running", attempt=1)
    assert claim_tasks("worker-b", 5) == []
    Task.objects.filter(pk="held").update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    [task] = claim_tasks("worker-b", 5)
    assert (task.owner, task.attempt, task.status) == ("worker-b", 2, "running")


def test_finished_tasks_and_tasks_without_a_run_spec_are_never_claimed(transactional_db, builtin):
    queued_task("done")
    Task.objects.filter(pk="done").update(status="completed")
    Task.objects.create(id="legacy", kind="task", status="running")
    Task.objects.create(id="invoke", kind="invoke", status="running")
    assert claim_tasks("worker-a", 5) == []


def test_mark_interrupted_leaves_workflow_runs_to_resume_and_closes_the_rest(transactional_db, builtin):
    queued_task("resumable")
    Task.objects.filter(pk="resumable").update(status="running", attempt=1)
    Task.objects.create(id="legacy", kind="invoke", status="running")
    for task_id in ("resumable", "legacy"):
        confirmation_row(f"cf-{task_id}", task_id)
    counts = mark_interrupted()
    assert (counts["resumable"], counts["tasks"], counts["confirmations"]) == (1, 1, 1)
    assert Task.objects.get(pk="resumable").status == "running"
    assert ToolConfirmation.objects.get(pk="cf-resumable").status == "pending"
    assert Task.objects.get(pk="legacy").status == "failed"
    assert ToolConfirmation.objects.get(pk="cf-legacy").status == "expired"


# -- resuming -----------------------------------------------------------------------------------


def test_a_task_given_up_by_a_stopping_worker_resumes_on_the_next_with_its_confirmation_waiting(
    runtime_host, main_confirms_file_writes, staff_user, api
):
    task = start_task(workflow="requirement_review", input_markdown=REVIEW, user=staff_user)
    confirmation = wait_for_confirmation(runtime_host, task.id)
    sent = Message.objects.filter(task_id=task.id, type="invoke_request").count()
    runtime_host.recorder.flush()
    spent_before, _ = tokens_spent(task.id)
    assert spent_before > 0
    host_module.reset_host()  # a clean stop: the task is given up, not failed
    task.refresh_from_db()
    assert task.status == "running"
    assert task.lease_expires_at <= timezone.now()

    host = host_module.get_host()  # the next worker takes it over at once
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        host.recorder.flush()
        again = ToolConfirmation.objects.get(pk=confirmation.id)
        if again.context_id != confirmation.context_id:
            break
        time.sleep(0.05)
    assert again.status == "pending"
    assert again.created_at == confirmation.created_at  # when the operator was first asked
    # While it still waits, the task shows the steps answered from the record (written at the
    # worker's next heartbeat, every 3 s); before, only once it ended.
    deadline = time.monotonic() + 10
    while not Task.objects.filter(pk=task.id, resumed_steps=sent - 1).exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert Task.objects.get(pk=task.id).resumed_steps == sent - 1
    assert ToolConfirmation.objects.filter(task_id=task.id).count() == 1
    assert again.context_id != confirmation.context_id  # the resumed attempt's main asked it
    response = api.post(f"/api/v1/confirmations/{confirmation.id}", {"approve": True}, format="json")
    assert response.status_code == 200, response.json()
    task = wait_for_task(host, task.id)
    assert (task.status, task.attempt) == ("completed", 2)
    deadline = time.monotonic() + 10
    while Task.objects.filter(pk=task.id).exclude(owner="").exists() and time.monotonic() < deadline:
        time.sleep(0.05)  # the worker closes its lease (and counts resumed steps) just after
    task.refresh_from_db()
    # Only the operator's hand-over to main ran again; every step main had completed was
    # answered from the record.
    assert Message.objects.filter(task_id=task.id, type="invoke_request").count() == sent + 1
    assert task.resumed_steps == sent - 1
    assert task.artifacts.filter(name="requirement_final.md").exists()
    # The task's count went on from the first attempt's tokens, as the token statistics
    # (the contexts of both attempts) count them; before, it counted the last attempt only.
    spent_in_all, _ = tokens_spent(task.id)
    assert spent_in_all > spent_before
    assert task.tokens_used == spent_in_all


def test_a_resumed_task_runs_on_the_configuration_it_started_on(
    runtime_host, main_confirms_file_writes, staff_user, api
):
    """PRD §4.8: a change saved while a task is between workers does not reach it. Here main's
    file_write moves from confirm to allow; the resumed attempt still asks the operator."""
    from monitoring.models import ExecutionContext
    from runs.models import PinnedConfig
    from tests.runs.test_tasks_api import set_main_file_write

    task = start_task(workflow="requirement_review", input_markdown=REVIEW, user=staff_user)
    confirmation = wait_for_confirmation(runtime_host, task.id)
    runtime_host.recorder.flush()
    task.refresh_from_db()
    started_on = task.config_version
    assert started_on > 0 and PinnedConfig.objects.filter(version=started_on, project_key="").exists()
    host_module.reset_host()
    set_main_file_write(api, "allow")

    host = host_module.get_host()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        host.recorder.flush()
        again = ToolConfirmation.objects.get(pk=confirmation.id)
        if again.context_id != confirmation.context_id:
            break
        time.sleep(0.05)
    assert again.context_id != confirmation.context_id, "the resumed attempt did not ask the operator again"
    assert again.status == "pending"
    response = api.post(f"/api/v1/confirmations/{confirmation.id}", {"approve": True}, format="json")
    assert response.status_code == 200, response.json()
    task = wait_for_task(host, task.id)
    assert (task.status, task.attempt) == ("completed", 2)
    versions = set(ExecutionContext.objects.filter(task_id=task.id).values_list("config_version", flat=True))
    assert versions == {started_on}


def test_only_the_documents_unfinished_tasks_run_on_are_kept(transactional_db, builtin):
    from runs import pinned_config
    from runs.models import PinnedConfig
    from team.snapshot import build_snapshot

    built = build_snapshot(None)
    older = [replace(built, version=built.version + n) for n in (1, 2, 3)]
    snapshot = replace(built, version=built.version + 4)
    pinned_config.remember(older[0])
    pinned_config.remember(older[1])
    queued_task("waits", config_version=older[1].version)
    pinned_config.remember(older[2])
    pinned_config.remember(snapshot)
    pinned_config.remember(snapshot)  # stored once
    kept = sorted(PinnedConfig.objects.values_list("version", flat=True))
    assert kept == [older[1].version, snapshot.version]
    resumed = pinned_for(Task.objects.get(pk="waits"))
    assert resumed == older[1]
    assert pinned_for(queued_task("new")) is None  # never started: it runs on the current one
    PinnedConfig.objects.update(document={"format": 99})
    assert pinned_for(Task.objects.get(pk="waits")) is None  # unreadable: logged, current one


def test_a_task_whose_executor_cannot_resume_fails_interrupted(runtime_host, staff_user):
    offline = runtime_host.runtime.executors.get("offline")
    offline.resumable = False  # before the task is claimable: the host's poll may take it at once
    try:
        spec = run_spec("task_orchestration", {"workflow": "generic", "task_description": "x"}, "x")
        Task.objects.create(  # a task whose worker stopped mid-run: running, its lease expired
            id="cannot-resume",
            kind="task",
            workflow="generic",
            status="running",
            attempt=1,
            lease_expires_at=timezone.now(),
            run_spec=spec,
            executor="offline",
        )
        deadline = time.monotonic() + 10
        while Task.objects.get(pk="cannot-resume").status == "running" and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        del offline.resumable
    task = Task.objects.get(pk="cannot-resume")
    assert task.status == "failed"
    assert task.error["code"] == "interrupted"


# -- confirmations decided on the record ----------------------------------------------------------


def test_the_recorder_never_turns_a_decided_confirmation_back_to_pending(runtime_host, main_confirms_file_writes):
    task = start_task(workflow="requirement_review", input_markdown=REVIEW)
    confirmation = wait_for_confirmation(runtime_host, task.id)
    # Another process decided it on the record; this runtime re-announces it as pending.
    ToolConfirmation.objects.filter(pk=confirmation.id).update(status="rejected", decided_by="someone")
    runtime = runtime_host.runtime
    pending = runtime.confirmations[confirmation.id]
    runtime_host.call_soon(runtime._confirmations._changed, pending)  # re-emit as the runtime would
    task = wait_for_task(runtime_host, task.id)
    assert ToolConfirmation.objects.get(pk=confirmation.id).status == "rejected"
    assert task.status == "completed"  # the copy was skipped, the review completed


# -- cancelling ---------------------------------------------------------------------------------


def test_cancelling_a_running_task_terminates_it(runtime_host, main_confirms_file_writes, api, staff_user):
    task = start_task(workflow="requirement_review", input_markdown=REVIEW, user=staff_user)
    confirmation = wait_for_confirmation(runtime_host, task.id)
    response = api.post(f"/api/v1/tasks/{task.id}/cancel", {"reason": "wrong document"}, format="json")
    assert response.status_code == 200, response.json()
    task = wait_for_task(runtime_host, task.id)
    assert task.status == "terminated"
    assert task.error["code"] == "cancelled"
    assert task.error["message"] == "wrong document"
    assert ToolConfirmation.objects.get(pk=confirmation.id).status == "expired"
    again = api.post(f"/api/v1/tasks/{task.id}/cancel", {}, format="json")
    assert again.status_code == 409
    assert "already ended (terminated)" in again.json()["detail"]


def test_cancelling_a_queued_task_needs_no_worker(transactional_db, builtin, api):
    queued_task("waiting")
    response = api.post("/api/v1/tasks/waiting/cancel", {}, format="json")
    assert response.status_code == 200, response.json()
    assert response.json()["status"] == "terminated"
    assert Task.objects.get(pk="waiting").error["message"] == "cancelled by operator"


def test_cancel_refuses_other_users_and_bad_reasons(transactional_db, builtin, api, viewer_user):
    queued_task("mine")
    other = APIClient()
    other.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=viewer_user).key}")
    assert other.post("/api/v1/tasks/mine/cancel", {}, format="json").status_code in (403, 404)
    bad = api.post("/api/v1/tasks/mine/cancel", {"reason": 7}, format="json")
    assert bad.status_code == 400
    assert "reason" in bad.json()["errors"]
    assert api.post("/api/v1/tasks/nope/cancel", {}, format="json").status_code == 404
    assert Task.objects.get(pk="mine").status == "queued"


def test_the_task_page_cancels_with_a_reason(transactional_db, builtin, page_client):
    queued_task("page-task")
    page = page_client.get("/tasks/page-task/")
    assert "Cancel task" in page.content.decode()
    response = page_client.post("/tasks/page-task/cancel", {"reason": "not needed"}, follow=True)
    assert "Task cancelled: it is terminated." in response.content.decode()
    assert "Cancel task" not in response.content.decode()
    assert Task.objects.get(pk="page-task").error["message"] == "not needed"


# -- listing confirmations ------------------------------------------------------------------------


def test_confirmations_are_listed_by_task_and_status(transactional_db, builtin, api):
    queued_task("t1")
    queued_task("t2")
    for n, (task_id, status) in enumerate([("t1", "pending"), ("t1", "approved"), ("t2", "pending")]):
        confirmation_row(f"cf{n}", task_id, status=status, after_s=n)
    body = api.get("/api/v1/confirmations", {"task_id": "t1"}).json()
    assert [row["id"] for row in body["results"]] == ["cf1", "cf0"]
    body = api.get("/api/v1/confirmations", {"status": "pending"}).json()
    assert {row["id"] for row in body["results"]} == {"cf0", "cf2"}
    bad = api.get("/api/v1/confirmations", {"status": "maybe"})
    assert bad.status_code == 400
    assert "status" in bad.json()["errors"]
    assert api.get("/api/v1/confirmations", {"task_id": ""}).status_code == 400


def test_a_task_document_says_it_waits_for_a_tool_confirmation(transactional_db, builtin, api):
    """A task waiting for a tool confirmation names it in ``waiting_for`` (after the inputs it
    asks for) and lists it with its id under ``confirmations``; a decided one is gone. Before,
    ``waiting_for`` was empty, and a client polling it waited for ever."""
    queued_task("t1")
    confirmation_row("cf-old", "t1", status="approved")
    confirmation_row("cf-new", "t1", after_s=1)
    body = api.get("/api/v1/tasks/t1").json()
    assert body["waiting_for"] == ["file_write"]
    assert body["confirmations"] == [{"id": "cf-new", "tool": "file_write", "role": "main"}]


def test_confirmations_of_tasks_a_user_may_not_see_are_not_listed(transactional_db, builtin, viewer_user):
    queued_task("hidden")
    confirmation_row("cf-hidden", "hidden")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=viewer_user).key}")
    assert client.get("/api/v1/confirmations").json()["results"] == []


def test_an_expiry_never_erases_a_decision_on_the_record(transactional_db, builtin):
    """A cancel (or a timeout) that expires a tool use in the runtime just after an operator
    approved it on the record leaves the record saying who approved it."""
    now = timezone.now()
    confirmation_row("cf-raced", "t", status="approved", decided_by="operator")
    recorder = Recorder()
    recorder.start()
    try:
        state = ConfirmationState(
            "cf-raced", "c", "i", "main", "t", None, "file_write", {}, "expired", now.timestamp(), now.timestamp(), None
        )
        recorder.publish(ConfirmationChanged(at=now.timestamp(), confirmation=state))
        recorder.flush()
    finally:
        recorder.stop()
    row = ToolConfirmation.objects.get(pk="cf-raced")
    assert (row.status, row.decided_by) == ("approved", "operator")


def test_a_cancel_reason_with_a_nul_is_refused_on_the_page_and_the_api(transactional_db, builtin, api, page_client):
    queued_task("nul")
    response = api.post("/api/v1/tasks/nul/cancel", {"reason": "a\x00b"}, format="json")
    assert response.status_code == 400
    assert "reason" in response.json()["errors"]
    response = page_client.post("/tasks/nul/cancel", {"reason": "a\x00b"})
    assert response.status_code == 400  # the page again, the reason next to the field (CancelForm)
    assert "Null characters are not allowed." in response.content.decode()
    assert Task.objects.get(pk="nul").status == "queued"


def test_a_worker_whose_task_was_taken_over_stops_running_it_and_records_nothing(
    runtime_host, main_confirms_file_writes, settings
):
    """A worker paused past its lease finds at its next heartbeat that another owns the task:
    it stops it locally, and nothing of that stop reaches the record (no 'terminated', the
    confirmation still waiting for the new owner)."""
    settings.TEAMCLAW = {**settings.TEAMCLAW, "WORKER_HEARTBEAT_S": 1}
    task = start_task(workflow="requirement_review", input_markdown=REVIEW)
    confirmation = wait_for_confirmation(runtime_host, task.id)
    Task.objects.filter(pk=task.id).update(owner="another-worker", attempt=2)
    deadline = time.monotonic() + 10
    while task.id in runtime_host.runtime.tasks and time.monotonic() < deadline:
        time.sleep(0.05)
    assert task.id not in runtime_host.runtime.tasks
    runtime_host.recorder.flush()
    task.refresh_from_db()
    assert (task.status, task.owner) == ("running", "another-worker")
    assert ToolConfirmation.objects.get(pk=confirmation.id).status == "pending"


# -- the workers an operator sees ----------------------------------------------------------------


def test_workers_are_listed_alive_first_with_what_they_run(transactional_db, builtin, api, page_client):
    now = timezone.now()

    def worker(worker_id: str, beat_s_ago: float, **fields) -> None:
        RuntimeWorker.objects.create(
            id=worker_id,
            kind="worker",
            hostname="h",
            pid=1,
            concurrency=4,
            started_at=now - timedelta(hours=1),
            heartbeat_at=now - timedelta(seconds=beat_s_ago),
            **fields,
        )

    worker("w-alive", 1)
    worker("w-silent", 3600)
    worker("w-stopped", 60, stopped_at=now)
    queued_task("running-here", owner="w-alive")
    Task.objects.filter(pk="running-here").update(status="running")
    rows = api.get("/api/v1/workers").json()["results"]
    assert [(r["id"], r["state"], r["running"]) for r in rows] == [
        ("w-alive", "alive", 1),
        ("w-stopped", "stopped", 0),
        ("w-silent", "silent", 0),
    ]
    page = page_client.get("/").content.decode()
    assert "Runtime workers" in page
    assert "w-alive" in page
    assert "1 of 4" in page


def test_the_fork_form_without_its_prompt_field_is_refused_not_a_server_error(transactional_db, builtin, page_client):
    queued_task("form-task")
    response = page_client.post("/tasks/form-task/fork", {"from_step": "0", "change_prompt": "1"}, follow=True)
    assert response.status_code == 200
    assert "still queued; fork it once it has ended" in response.content.decode()
