"""A key the endpoint does not know is refused, never dropped (teamclaw.api_fields): a 400
naming the key and the fields the endpoint expects, and nothing of the request is saved. A
misspelt ``prompt_enhancment`` must not start a task without its enhancement."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import resolve

from capabilities.models import Project
from capabilities.skill_models import Workflow
from monitoring.models import Task
from prompts.models import PromptVersion
from team.roles import create_role
from tests.conftest import PASSWORD
from tests.factories import PLUGIN
from tests.helpers import database_state, wait_for_task
from tests.skills.support import skill_yaml
from web import api_urls

CURRENT = object()
"""In a body below: the document version a GET of the same URL answers under that key."""

FLOW = "orchestration:\n  id: greet\n  name: Greet\n  steps: []\n"

# (method, url, a body the endpoint would take, the misspelt key added to it)
MISSPELT = [
    ("post", "/api/v1/auth/token", {"username": "operator", "password": PASSWORD}, "remember_me"),
    ("post", "/api/v1/auth/role-tokens", {"role": "pm", "name": "Claude Desktop"}, "rol"),
    ("post", "/api/v1/mcp-sources", {"name": "time", "command": "mcp-server-time", "args": []}, "comand"),
    ("post", "/api/v1/mcp-sources/999/refresh", {"note": "after the upgrade"}, "nte"),
    ("post", "/api/v1/roles", {"role": "reviewer", "display_name": "Reviewer"}, "descripton"),
    ("patch", "/api/v1/roles/pm", {"version": CURRENT, "display_name": "PM"}, "dispaly_name"),
    ("delete", "/api/v1/roles/translator", {"version": CURRENT}, "nte"),
    ("put", "/api/v1/roles/pm/executor", {"executor": "offline"}, "modle"),
    ("post", "/api/v1/capabilities", PLUGIN, "type"),
    ("patch", "/api/v1/capabilities/code_review", {"document_version": CURRENT, "timeout": 300}, "timout"),
    ("put", "/api/v1/permissions/invoke-matrix", {"version": CURRENT, "matrix": {}}, "nots"),
    ("put", "/api/v1/permissions/tool-matrix", {"version": CURRENT, "matrix": {}}, "nots"),
    ("post", "/api/v1/permissions/invoke-matrix/what-if", {"matrix": {}}, "dayz"),
    ("post", "/api/v1/config/changes/1/revert", {"version": CURRENT, "note": "undo"}, "nte"),
    ("post", "/api/v1/permissions/tool-matrix/what-if", {"matrix": {}}, "dayz"),
    ("put", "/api/v1/constraints/pm", {"version": CURRENT, "constraints": {"max_retries": 2}}, "constraint"),
    ("post", "/api/v1/projects", {"slug": "web", "name": "Web"}, "tech_stak"),
    ("patch", "/api/v1/projects/shop", {"version": CURRENT, "name": "Shop 2"}, "descripton"),
    ("post", "/api/v1/knowledge/sources", {"role": "translator", "load_level": "basic"}, "load_levle"),
    ("post", "/api/v1/knowledge/sources/1/reindex", {"load_level": "full"}, "load_levle"),
    ("post", "/api/v1/knowledge/folders", {"project": "shop", "load_level": "full"}, "projet"),
    ("post", "/api/v1/knowledge/folders/shop/refresh", {"load_level": "full"}, "load_levle"),
    ("post", "/api/v1/skills", {"yaml": skill_yaml("weather")}, "yml"),
    ("delete", "/api/v1/skills/hello", {"force": True}, "forse"),
    ("post", "/api/v1/skills/hello/install", {"config": {}}, "confg"),
    ("post", "/api/v1/skills/hello/activate", {"role": "devops"}, "rol"),
    ("post", "/api/v1/skills/hello/deactivate", {"force": True}, "forse"),
    ("post", "/api/v1/workflows", {"yaml": FLOW.replace("greet", "wave")}, "yml"),
    ("put", "/api/v1/workflows/greet", {"yaml": FLOW}, "yml"),
    ("post", "/api/v1/workflows/greet/run", {"input": {}, "project": "shop"}, "projet"),
    ("post", "/api/v1/tasks", {"workflow": "generic", "task_description": "Write a haiku"}, "prompt_enhancment"),
    ("post", "/api/v1/contexts/ctx1/snapshots", {"label": "before"}, "lable"),
    ("post", "/api/v1/contexts/ctx1/instructions", {"text": "Be brief"}, "txt"),
    (
        "post",
        "/api/v1/capabilities/invoke",
        {"capability_id": "schema_query", "from_role": "coderA", "params": {"table": "t"}},
        "timout",
    ),
    ("post", "/api/v1/hooks", {"event_type": "build.done", "from_role": "main", "broadcast": True}, "paylod"),
    ("post", "/api/v1/confirmations/conf1", {"approve": True}, "aprove"),
    ("post", "/api/v1/tasks/t1/cancel", {"reason": "changed my mind"}, "reson"),
    ("put", "/api/v1/mcp-sources/1/credentials", {"bearer_token": "secret-token"}, "bearer_tokn"),
    ("post", "/api/v1/tasks/t1/fork", {"from_step": 0}, "from_stpe"),
    ("post", "/api/v1/tasks/t1/answers", {"answers": {"r1-goal": "Save time"}}, "answer"),
    ("post", "/api/v1/tasks/t1/decisions", {"decisions": {"c1": "accept"}}, "decision"),
    ("post", "/api/v1/tasks/t1/next", {"action": "review"}, "actoin"),
    ("post", "/api/v1/tasks/t1/open_points", {"point": "c-1", "answer": "Yes"}, "anwser"),
    ("post", "/api/v1/tasks/t1/revisions", {}, "vesion"),
    ("post", "/api/v1/prompts/pm/persona/versions", {"content": "Be brief."}, "activte"),
    ("post", "/api/v1/prompts/pm/persona/rollback", {"version": "1.0.0"}, "nte"),
    ("post", "/api/v1/prompts/pm/persona/activate", {"version": "1.0.0"}, "nte"),
    ("post", "/api/v1/prompts/pm/persona/preview", {"content": "Hi {{ who }}"}, "valus"),
    ("post", "/api/v1/prompts/pm/render", {"task_description": "Ship it"}, "prompt_enhancment"),
]

NO_ENVELOPE = {
    ("api-config-import", "post"): "the body is a configuration document, checked against its own JSON Schema",
    ("api-alert-resolve", "post"): "takes no body",
}
"""Writing endpoints the parametrized test leaves out, and why."""


@pytest.fixture
def world(builtin, settings) -> None:
    """What the bodies above name: a project, a custom role, a discovered skill, a workflow."""
    settings.TEAMCLAW = {**settings.TEAMCLAW, "HTTP_EXECUTOR_ALLOWED_HOSTS": ["plugins.internal"]}
    Project.objects.create(slug="shop", name="Shop", tech_stack="Django")
    create_role({"role": "translator", "display_name": "Translator"})
    Workflow.objects.create(workflow_id="greet", name="Greet", source=FLOW, definition={})


def with_versions(api, url: str, body: dict[str, Any]) -> dict[str, Any]:
    """``body`` with each ``CURRENT`` replaced by the version a GET of ``url`` answers."""
    if not any(value is CURRENT for value in body.values()):
        return dict(body)
    document = api.get(url).json()
    return {key: document[key] if value is CURRENT else value for key, value in body.items()}


@pytest.mark.parametrize(("method", "url", "body", "key"), MISSPELT, ids=[f"{m} {u} {k}" for m, u, _, k in MISSPELT])
def test_a_misspelt_key_is_refused_naming_it_and_nothing_changes(api, world, method, url, body, key):
    if "/skills/hello" in url:
        upload = api.post("/api/v1/skills", skill_yaml("hello").encode(), content_type="application/yaml")
        assert upload.status_code == 201, upload.content
    sent = {**with_versions(api, url, body), key: "x"}
    before = database_state()
    response = getattr(api, method)(url, sent, format="json")
    assert response.status_code == 400, response.content
    errors = response.json()["errors"]
    assert list(errors) == [key], errors  # the only thing wrong with the body
    reason = errors[key][0]
    if body:
        assert reason.startswith("unknown field; expected one of: ")
        assert all(name in reason for name in body)
    else:  # an endpoint that takes an empty object
        assert reason == "unknown field; send no fields"
    assert response.json()["detail"] == f"{key}: {reason}"
    assert database_state() == before


def test_every_writing_endpoint_is_covered():
    """A new POST/PUT/PATCH endpoint under /api/v1/ joins MISSPELT (or says why not)."""
    covered = {(resolve(url.split("?")[0]).url_name, method) for method, url, _, _ in MISSPELT}
    writing = {
        (pattern.name, method)
        for pattern in api_urls.urlpatterns
        for method in ("post", "put", "patch")
        if hasattr(pattern.callback.cls, method)
    }
    assert writing - covered == set(NO_ENVELOPE)


def test_every_unknown_key_is_listed_at_once_with_the_other_problems(api, builtin):
    before = database_state()
    response = api.post(
        "/api/v1/tasks",
        {"workflow": "generic", "task_description": 5, "prompt_enhancment": "Rhyme.", "titel": "Haiku"},
        format="json",
    )
    assert response.status_code == 400
    expected = (
        "unknown field; expected one of: workflow, input_markdown, task_description, title, project, "
        "prompt_enhancement, description, decision_mode, start_at, project_type"
    )
    assert response.json()["errors"] == {
        "prompt_enhancment": [expected],
        "titel": [expected],
        "task_description": ["must be a string, not a number"],
    }
    assert database_state() == before


def test_a_domain_check_lists_unknown_keys_with_its_own_refusals(api, builtin):
    version = api.get("/api/v1/roles/pm").json()["version"]
    response = api.patch("/api/v1/roles/pm", {"version": version, "enabled": "no", "colour": "red"}, format="json")
    assert response.status_code == 400
    assert response.json()["errors"] == {
        "colour": [
            "unknown field; expected one of: version, display_name, emoji, description, responsibilities, "
            "display_name_zh, description_zh, responsibilities_zh, enabled, note"
        ],
        "enabled": ["must be true or false"],
    }


def test_only_the_envelope_is_checked_values_keep_their_own_rules(api, builtin, settings):
    """An object value is validated by its own rules (``params`` by the card's JSON Schema at
    invoke time; here a card's ``executor_config``), listed with the envelope's unknown keys."""
    settings.TEAMCLAW = {**settings.TEAMCLAW, "HTTP_EXECUTOR_ALLOWED_HOSTS": ["plugins.internal"]}
    card = {**PLUGIN, "executor_config": {**PLUGIN["executor_config"], "retries": 3}, "colour": "red"}
    errors = api.post("/api/v1/capabilities", card, format="json").json()["errors"]
    assert set(errors) == {"colour", "executor_config"}
    assert errors["executor_config"] == ["unknown keys: retries"]


def test_correct_bodies_are_still_taken(api, builtin):
    executor = api.put("/api/v1/roles/pm/executor", {"executor": "offline", "model": "", "endpoint": ""}, format="json")
    assert executor.status_code == 200, executor.content
    matrix = api.get("/api/v1/permissions/invoke-matrix").json()
    saved = api.put(
        "/api/v1/permissions/invoke-matrix",
        {"version": matrix["version"], "matrix": {"pm": {"dba": True}}, "note": "pm asks the dba"},
        format="json",
    )
    assert saved.status_code == 200
    assert saved.json()["matrix"]["pm"]["dba"] is True
    project = {"slug": "web", "name": "Web", "description": "Shop", "tech_stack": "Vue", "note": "new"}
    assert api.post("/api/v1/projects", project, format="json").status_code == 201
    version = api.post(
        "/api/v1/prompts/pm/persona/versions", {"content": "Be brief.", "bump": "minor", "note": "n"}, format="json"
    )
    assert version.status_code == 201
    assert version.json()["version"] == "1.1.0"


def test_a_form_body_may_carry_the_csrf_token_but_no_other_stranger(api, builtin):
    """Browser forms add ``csrfmiddlewaretoken``, which Django's CSRF check reads: not unknown."""
    url = "/api/v1/prompts/pm/persona/versions"
    form = {"content": "Be brief.", "csrfmiddlewaretoken": "t0ken"}
    assert api.post(url, form, format="multipart").status_code == 201
    refused = api.post(url, {**form, "activte": "false"}, format="multipart")
    assert refused.status_code == 400
    assert list(refused.json()["errors"]) == ["activte"]
    assert PromptVersion.objects.filter(template__role__role="pm", template__template_type="persona").count() == 2


def test_a_skill_uploaded_as_a_multipart_file_is_still_taken(api, builtin):
    file = SimpleUploadedFile("skill-index.yaml", skill_yaml("hello").encode(), content_type="application/yaml")
    upload = api.post("/api/v1/skills", {"file": file}, format="multipart")
    assert upload.status_code == 201, upload.content


def test_a_task_with_its_prompt_enhancement_spelt_right_runs_with_it(api, runtime_host):
    body = {"workflow": "generic", "task_description": "Write a haiku", "prompt_enhancement": "Rhyme."}
    response = api.post("/api/v1/tasks", body, format="json")
    assert response.status_code == 201, response.content
    task = wait_for_task(runtime_host, response.json()["task_id"])
    assert task.prompt_enhancement == "Rhyme."
    assert Task.objects.count() == 1
