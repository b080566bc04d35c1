"""The blast radius of a prompt change (issue 15, point 5): ``GET
/api/v1/prompts/{role}/{type}/impact?version=`` and the panel on the pages. Tasks and contexts
are rows written directly (running real tasks would only slow this down); which prompt version
they ran on is derived from the config version they pinned."""

from __future__ import annotations

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from capabilities.config import current_version
from capabilities.models import AgentRole, ProjectRoleOverride
from monitoring.models import ExecutionContext, Task
from monitoring.prompt_impact import LIMIT
from tests.prompts.conftest import versions_url

IMPACT = "/api/v1/prompts/pm/persona/impact"


def save(api, content, **body):
    response = api.post(versions_url(), {"content": content, **body}, format="json")
    assert response.status_code == 201, response.json()
    return response.json()


def task(task_id, *, config_version, project=None, status="completed", tokens=0, roles=("pm",), context_status=None):
    row = Task.objects.create(
        id=task_id, title=f"Task {task_id}", status=status, project=project, config_version=config_version
    )
    Task.objects.filter(pk=task_id).update(tokens_used=tokens)
    now = timezone.now()
    for index, role in enumerate(roles):
        ExecutionContext.objects.create(
            id=f"{task_id}-{role}",
            task=row,
            instance_id=f"{role}-{index}",
            role=role,
            project=project,
            status=context_status or ("executing" if status == "running" else "completed"),
            config_version=config_version,
            total_tokens=tokens // 2,
            created_at=now,
            updated_at=now,
        )
    return row


@pytest.fixture
def history(api, builtin, shop):
    """Global pm/persona: 1.0.0 (built in), then 1.0.1 active, then a draft 1.0.2; shop adds
    its own override; tasks before and after 1.0.1 and one still running on 1.0.0."""
    before = current_version()
    task("t-old", config_version=before, tokens=150)
    task("t-run", config_version=before, status="running", project=shop)
    save(api, "Shop persona.", project="shop")
    save(api, "Sharper persona.")
    after = current_version()
    task("t-new", config_version=after, project=shop, tokens=70)
    task("t-dev", config_version=after, roles=("dev",), tokens=999)  # pm never ran in it
    save(api, "Even sharper persona.", activate=False)
    return {"before": before, "after": after}


def test_impact_lists_projects_running_contexts_and_recent_tasks_on_the_replaced_version(api, history):
    response = api.get(IMPACT, {"version": "1.0.2"})
    assert response.status_code == 200, response.json()
    body = response.json()
    assert (body["layer"], body["version"], body["replaces"], body["can_activate"]) == (
        "global",
        "1.0.2",
        "1.0.1",
        True,
    )
    assert body["replaced_since_config_version"] == history["after"]
    assert body["projects"]["results"] == [
        {
            "slug": "shop",
            "name": "Online shop",
            "role_enabled": True,
            "override_version": "1.0.0",
            "uses": "yes, followed by its own override 1.0.0",
        }
    ]
    running = body["running_contexts"]
    assert running["count"] == 1
    assert running["results"][0]["task_id"] == "t-run"
    assert running["results"][0]["pinned_version"] == "1.0.0"  # derived from its pinned config version
    tasks = body["recent_tasks"]
    assert [t["id"] for t in tasks["results"]] == ["t-new"]  # t-old ran on 1.0.0, t-dev had no pm
    assert (tasks["results"][0]["tokens_used"], tasks["results"][0]["role_tokens"], tasks["tokens_used"]) == (
        70,
        35,
        70,
    )
    assert "derived" in body["derived"]


def test_without_a_version_it_is_the_impact_of_a_new_save(api, history):
    body = api.get(IMPACT).json()
    assert (body["version"], body["replaces"], body["can_activate"]) == (None, "1.0.1", None)


def test_a_rollback_target_and_a_draft_that_cannot_render_say_so(api, history):
    save(api, "Tone: {{ tone }}", activate=False)
    body = api.get(IMPACT, {"version": "1.0.3"}).json()
    assert body["can_activate"] is False
    assert "'tone' is used but not declared" in body["refusal"]
    assert api.get(IMPACT, {"version": "1.0.0"}).json()["can_activate"] is True


def test_the_project_layer_touches_only_its_project(api, history):
    body = api.get(IMPACT, {"project": "shop"}).json()
    assert body["layer"] == "project shop"
    assert [p["slug"] for p in body["projects"]["results"]] == ["shop"]
    assert [t["id"] for t in body["recent_tasks"]["results"]] == ["t-new"]
    assert [c["task_id"] for c in body["running_contexts"]["results"]] == ["t-run"]
    assert body["running_contexts"]["results"][0]["pinned_version"] is None  # the override did not exist yet


def test_a_disabled_role_does_not_use_it(api, history, shop):
    ProjectRoleOverride.objects.create(project=shop, role=AgentRole.objects.get(role="pm"), enabled=False)
    project = api.get(IMPACT).json()["projects"]["results"][0]
    assert (project["role_enabled"], project["uses"]) == (False, "no: the role is disabled in this project")


def test_recent_tasks_are_capped_and_counted(api, builtin):
    for index in range(LIMIT + 3):
        task(f"t{index:02}", config_version=current_version())
    tasks = api.get(IMPACT).json()["recent_tasks"]
    assert (tasks["count"], tasks["limit"], len(tasks["results"])) == (LIMIT + 3, LIMIT, LIMIT)


@pytest.mark.parametrize(
    ("url", "params", "status"),
    [
        ("/api/v1/prompts/nobody/persona/impact", {}, 404),
        ("/api/v1/prompts/pm/biography/impact", {}, 404),
        (IMPACT, {"version": "9.9.9"}, 404),
        (IMPACT, {"project": "nowhere"}, 404),
        (IMPACT, {"version": "v1"}, 400),
    ],
)
def test_bad_input(api, builtin, url, params, status):
    response = api.get(url, params)
    assert response.status_code == status
    body = response.json()
    assert "detail" in body and "errors" in body
    if status == 400:
        assert list(body["errors"]) == ["version"]


def test_impact_needs_a_login(builtin, client):
    assert client.get(IMPACT).status_code in (401, 403)


def test_a_viewer_sees_only_the_tasks_they_may_see(history, viewer_user):
    viewer = APIClient()
    viewer.force_authenticate(viewer_user)
    body = viewer.get(IMPACT).json()
    assert (body["recent_tasks"]["count"], body["running_contexts"]["count"]) == (0, 0)
    assert body["projects"]["count"] == 1  # the configuration itself is not private


def test_the_template_page_shows_the_impact_next_to_the_actions(page_client, history):
    html = page_client.get("/prompts/pm/persona/").content.decode()
    assert 'id="impact"' in html
    assert html.index('id="impact"') < html.index('id="history"')
    assert 'id="impact-replaces">1.0.1<' in html
    assert "Task t-new" in html and "Task t-old" not in html
    assert "Online shop" in html and "followed by its own override 1.0.0" in html
    assert "/tasks/t-run/" in html  # the running context, pinned to 1.0.0


def test_the_activate_and_rollback_confirmations_show_the_impact_before_the_button(page_client, history):
    for url in ("/prompts/pm/persona/activate/1.0.2/", "/prompts/pm/persona/rollback/1.0.0/"):
        html = page_client.get(url).content.decode()
        assert html.index('id="impact"') < html.index('id="confirm-button"'), url
        assert "Task t-new" in html
    editor = page_client.get("/prompts/pm/persona/edit/").content.decode()
    assert 'id="impact"' in editor and "Task t-new" in editor


def test_the_confirmation_of_a_draft_that_cannot_render_says_so_up_front(page_client, api, history):
    save(api, "Tone: {{ tone }}", activate=False)
    html = page_client.get("/prompts/pm/persona/activate/1.0.3/").content.decode()
    assert 'id="impact-refusal"' in html
    assert "is used but not declared" in html
