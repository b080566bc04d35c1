"""A task's trace (issue 30, ``monitoring.trace``): every call its agents made as a tree,
from the record, through the API and the page, for the user who may see the task only."""

from __future__ import annotations

import json

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from monitoring.models import Artifact, Task
from tests.documents import CLINIC
from tests.helpers import wait_for_task


@pytest.fixture
def reviewed(api, runtime_host) -> Task:
    response = api.post("/api/v1/tasks", {"workflow": "requirement_review", "input_markdown": CLINIC}, format="json")
    assert response.status_code == 201
    task = wait_for_task(runtime_host, response.json()["task_id"])
    assert task.status == "completed"
    return task


def test_the_trace_lists_every_agent_and_the_experts_rounds(api, reviewed):
    trace = api.get(f"/api/v1/tasks/{reviewed.id}/trace").json()
    assert trace["task_id"] == reviewed.id and trace["status"] == "completed"
    agents = {node["role"]: node for node in trace["nodes"]}
    assert {"main", "architect", "pm", "ai_expert", "domain_expert", "consolidator"} <= set(agents)
    contexts = {node["id"] for node in trace["nodes"]}
    assert contexts == set(reviewed.contexts.values_list("id", flat=True))
    main = agents["main"]
    reviews = [c for c in main["children"] if c["kind"] == "invoke" and c["capability_id"] == "expert_review"]
    rounds = {(c["role"], c["round"]) for c in reviews}
    experts = {"architect", "pm", "ai_expert", "domain_expert"}
    assert rounds == {(role, mode) for role in experts for mode in ("review", "evaluate", "respond")}
    for role in experts:  # each expert's node lists the three rounds it answered (pm: the quality check too)
        rounds_of_role = {c["id"] for c in reviews if c["role"] == role}
        assert len(rounds_of_role) == 3 and rounds_of_role <= set(agents[role]["links"]["received"])
    for call in reviews:
        assert call["status"] == "ok"
        assert call["latency_ms"] >= 0
        assert call["links"]["callee_context_id"] == agents[call["role"]]["id"]
        assert call["input"]["mode"] == call["round"]
    ai_review = next(c for c in reviews if c["role"] == "ai_expert" and c["round"] == "review")
    assert ai_review["links"]["artifacts"] == ["review_ai.json"]
    assert ai_review["output"]["artifact"] == "review_ai.json"
    (write,) = [c for c in main["children"] if c["kind"] == "tool_use"]
    assert write["capability_id"] == "file_write" and write["status"] == "used"
    started = [c["started_at"] for c in main["children"]]
    assert started == sorted(started)


def test_an_operator_wait_is_a_node_with_its_decision(api, runtime_host):
    from tests.live_helpers import wait_for_confirmation
    from tests.runs.test_fork_policy import set_main_file_write

    set_main_file_write(api, "confirm")
    task_id = api.post(
        "/api/v1/tasks", {"workflow": "requirement_review", "input_markdown": CLINIC}, format="json"
    ).json()["task_id"]
    confirmation = wait_for_confirmation(runtime_host, task_id)
    running = api.get(f"/api/v1/tasks/{task_id}/trace").json()
    main = next(n for n in running["nodes"] if n["role"] == "main")
    (waiting,) = [c for c in main["children"] if c["kind"] == "operator_wait"]
    assert waiting["status"] == "pending" and waiting["latency_ms"] is None
    api.post(f"/api/v1/confirmations/{confirmation.id}", {"approve": True}, format="json")
    wait_for_task(runtime_host, task_id)
    main = next(n for n in api.get(f"/api/v1/tasks/{task_id}/trace").json()["nodes"] if n["role"] == "main")
    (waited,) = [c for c in main["children"] if c["kind"] == "operator_wait"]
    assert waited["id"] == confirmation.id
    assert waited["status"] == "approved" and waited["latency_ms"] >= 0
    assert waited["output"]["decided_by"] == "operator"


def test_the_page_shows_each_finding_with_the_line_it_quotes(page_client, reviewed):
    issues = [
        issue
        for artifact in Artifact.objects.filter(task=reviewed, name__startswith="review_")
        for issue in json.loads(artifact.content)["issues"]
    ]
    assert issues, "the experts found nothing in the clinic document"
    lines = CLINIC.splitlines()
    page = page_client.get(f"/tasks/{reviewed.id}/trace/", HTTP_ACCEPT_LANGUAGE="en").content.decode()
    for issue in issues:
        assert f'id="finding-{issue["id"]}"' in page
        line = issue["location"]["line"]
        if isinstance(line, int) and 0 < line <= len(lines):
            from django.utils.html import escape

            assert escape(lines[line - 1]) in page
    task_page = page_client.get(f"/tasks/{reviewed.id}/").content.decode()
    assert f'href="/tasks/{reviewed.id}/trace/"' in task_page


def test_a_task_the_user_may_not_see_has_no_trace(reviewed, viewer_user, client):
    other = APIClient()
    other.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=viewer_user).key}")
    assert other.get(f"/api/v1/tasks/{reviewed.id}/trace").status_code == 404
    client.force_login(viewer_user)
    assert client.get(f"/tasks/{reviewed.id}/trace/").status_code == 404
    assert other.get("/api/v1/tasks/nope/trace").status_code == 404


def test_each_context_records_the_prompt_versions_it_rendered_and_the_trace_shows_them(api, transactional_db, settings):
    """Issue 30 point 5: on a model, every agent that rendered its prompt records the exact
    versions (global and project layer) on its context; the trace's agent node shows them."""
    from prompts.models import PromptVersion
    from tests.executors.test_review_on_a_model import ReviewBrain
    from tests.model_server import host_on_model

    with host_on_model(settings, ReviewBrain(), MODEL_STREAM=False) as model:
        body = {"workflow": "requirement_review", "input_markdown": CLINIC}
        response = api.post("/api/v1/tasks", body, format="json")
        assert response.status_code == 201, response.content
        task = wait_for_task(model.host, response.json()["task_id"])
    assert task.status == "completed", task.error
    nodes = {n["role"]: n for n in api.get(f"/api/v1/tasks/{task.id}/trace").json()["nodes"]}
    active = {
        (v.template.role.role, v.template.template_type): v.version
        for v in PromptVersion.objects.filter(is_active=True, template__project=None).select_related("template__role")
    }
    checked = 0
    for role in ("architect", "pm", "ai_expert", "domain_expert"):
        versions = nodes[role]["prompt_versions"]
        assert versions, f"{role} recorded no prompt version"
        for template_type, layers in versions.items():
            assert layers == {"global": active[(role, template_type)], "project": None}
            checked += 1
    assert checked >= 4
