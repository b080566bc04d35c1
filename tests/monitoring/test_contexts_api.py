"""/api/v1/contexts, snapshots and instructions (PRD §4.6, US-05, US-08)."""

from __future__ import annotations

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from monitoring.models import ExecutionContext, Snapshot, Task
from runs.tasks import start_task
from tests.helpers import wait_for_task
from tests.live_helpers import start_deploying_task, wait_for_confirmation

FIELDS = {
    "id",
    "instance_id",
    "role",
    "task_id",
    "status",
    "progress",
    "input_context",
    "output_state",
    "resource_usage",
}


def token_client(user) -> APIClient:
    client = APIClient()
    token, _ = Token.objects.get_or_create(user=user)
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client


@pytest.fixture
def finished_task(runtime_host, staff_user) -> Task:
    task = start_task(workflow="generic", task_description="Write the changelog", user=staff_user)
    return wait_for_task(runtime_host, task.id)


def test_contexts_need_authentication(builtin):
    for path in ("/api/v1/contexts", "/api/v1/contexts/x", "/api/v1/contexts/x/snapshots", "/api/v1/stats/tokens"):
        assert APIClient().get(path).status_code == 401
    assert APIClient().post("/api/v1/contexts/x/instructions", {"text": "hi"}, format="json").status_code == 401


def test_contexts_list_filters_and_shapes(api, finished_task):
    body = api.get(f"/api/v1/contexts?task_id={finished_task.id}").json()
    stored = {c.id: c for c in finished_task.contexts.all()}
    assert body["count"] == len(stored) >= 2
    for item in body["results"]:
        assert FIELDS <= set(item)
        row = stored[item["id"]]
        assert (item["role"], item["status"], item["progress"]) == (row.role, row.status, row.progress)
        assert item["resource_usage"]["total_tokens"] == row.input_tokens + row.output_tokens
        assert item["resource_usage"]["estimated"] is True  # offline executor
        assert set(item["input_context"]) == {"artifacts", "messages", "user_instructions", "prompt_versions"}
        assert set(item["output_state"]) == {"generated_artifacts", "pending_questions", "errors"}
    pm_only = api.get(f"/api/v1/contexts?task_id={finished_task.id}&role=pm").json()["results"]
    assert [c["role"] for c in pm_only] == ["pm"]
    assert api.get("/api/v1/contexts?status=completed").json()["count"] == len(stored)
    assert api.get("/api/v1/contexts?status=executing").json()["count"] == 0
    bad = api.get("/api/v1/contexts?status=sleeping")
    assert bad.status_code == 400
    assert "status" in bad.json()["errors"]


def test_context_detail_and_other_users(api, finished_task, viewer_user):
    context = finished_task.contexts.get(role="main")
    body = api.get(f"/api/v1/contexts/{context.id}").json()
    assert body["id"] == context.id
    assert body["task_id"] == finished_task.id
    assert body["output_state"]["generated_artifacts"] == context.output_state["generated_artifacts"]
    viewer = token_client(viewer_user)
    assert viewer.get(f"/api/v1/contexts/{context.id}").status_code == 404
    assert viewer.get("/api/v1/contexts").json()["count"] == 0
    assert api.get("/api/v1/contexts/nope").status_code == 404


def test_snapshots_list_in_order_with_type_trigger_label_and_state(api, finished_task):
    context = finished_task.contexts.get(role="main")
    body = api.get(f"/api/v1/contexts/{context.id}/snapshots").json()
    snaps = body["results"]
    assert body["count"] == context.snapshots.count() >= 3
    assert [s["sequence"] for s in snaps] == sorted(s["sequence"] for s in snaps)
    assert snaps[0]["trigger"] == "start"
    assert snaps[0]["type"] == "auto"
    triggers = [s["trigger"] for s in snaps]
    assert "before invoke requirement_analysis" in triggers
    assert "after invoke requirement_analysis" in triggers
    assert all({"type", "trigger", "label", "state", "created_at"} <= set(s) for s in snaps)
    assert snaps[0]["state"]["id"] == context.id


def test_manual_snapshot_through_the_api(api, finished_task, viewer_user):
    context = finished_task.contexts.get(role="pm")
    response = api.post(f"/api/v1/contexts/{context.id}/snapshots", {"label": "baseline"}, format="json")
    assert response.status_code == 201, response.content
    created = response.json()
    assert (created["type"], created["trigger"], created["label"]) == ("manual", "manual", "baseline")
    stored = Snapshot.objects.get(pk=created["id"])
    assert stored.context_id == context.id
    assert stored.sequence == context.snapshots.count()
    listed = api.get(f"/api/v1/contexts/{context.id}/snapshots").json()["results"]
    assert listed[-1]["id"] == created["id"]
    assert listed[-1]["label"] == "baseline"

    too_long = api.post(f"/api/v1/contexts/{context.id}/snapshots", {"label": "x" * 301}, format="json")
    assert too_long.status_code == 400
    assert "label" in too_long.json()["errors"]
    assert api.post("/api/v1/contexts/nope/snapshots", {"label": "x"}, format="json").status_code == 404
    disguised = api.post(f"/api/v1/contexts/{context.id}/snapshots", {"label": "ok\u202egnp.exe"}, format="json")
    assert disguised.status_code == 400
    assert "U+202E" in disguised.json()["errors"]["label"][0]
    viewer = token_client(viewer_user)
    assert viewer.post(f"/api/v1/contexts/{context.id}/snapshots", {}, format="json").status_code == 404
    assert Snapshot.objects.filter(context=context, type="manual").count() == 1


def test_instructions_need_text_and_a_running_context(api, finished_task):
    context = finished_task.contexts.get(role="main")
    blank = api.post(f"/api/v1/contexts/{context.id}/instructions", {"text": "  "}, format="json")
    assert blank.status_code == 400
    assert "text" in blank.json()["errors"]
    missing = api.post(f"/api/v1/contexts/{context.id}/instructions", {}, format="json")
    assert missing.status_code == 400
    assert "text" in missing.json()["errors"]
    finished = api.post(f"/api/v1/contexts/{context.id}/instructions", {"text": "hurry up"}, format="json")
    assert finished.status_code == 409
    assert "completed" in finished.json()["detail"]
    context.refresh_from_db()
    assert context.input_context["user_instructions"] == []


def test_an_instruction_to_a_running_agent_is_recorded_and_snapshotted(api, runtime_host, staff_user):
    task = start_deploying_task(runtime_host, staff_user)
    confirmation = wait_for_confirmation(runtime_host, task.id)
    response = api.post(
        f"/api/v1/contexts/{confirmation.context_id}/instructions", {"text": "Use the blue slot"}, format="json"
    )
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["snapshot"]["trigger"] == "user_instruction"
    assert body["snapshot"]["type"] == "auto"
    assert body["snapshot"]["state"]["input_context"]["user_instructions"] == ["Use the blue slot"]
    context = ExecutionContext.objects.get(pk=confirmation.context_id)
    assert context.input_context["user_instructions"] == ["Use the blue slot"]
    live = api.post(f"/api/v1/contexts/{context.id}/snapshots", {"label": "while waiting"}, format="json")
    assert live.status_code == 201
    assert live.json()["state"]["status"] == "waiting_user"
    from runs.confirmations import decide

    decide(confirmation.id, True, staff_user)
    assert wait_for_task(runtime_host, task.id).status == "completed"


def test_the_message_log_api_lists_only_tasks_the_caller_may_see(api, finished_task, viewer_user):
    everything = api.get(f"/api/v1/messages?task_id={finished_task.id}").json()
    assert everything["count"] > 0
    viewer = token_client(viewer_user)
    assert viewer.get(f"/api/v1/messages?task_id={finished_task.id}").json()["count"] == 0
    assert viewer.get("/api/v1/messages").json()["count"] == 0
