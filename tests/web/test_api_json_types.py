"""The API takes JSON values with the type they were sent as (teamclaw.api_fields): a number
where a string belongs is a 400 naming the field, never stored as its text, and nothing of
the refused request is saved."""

from __future__ import annotations

from typing import Any

import pytest

from capabilities.models import Project
from capabilities.skill_models import Workflow
from monitoring.models import Message, Task
from prompts.models import PromptVersion
from tests.helpers import database_state

VERSIONS = "/api/v1/prompts/pm/persona/versions"


def assert_refused(response: Any, field: str, reason: str = "must be a string, not a number") -> None:
    assert response.status_code == 400, response.content
    body = response.json()
    assert body["errors"][field] == [reason]
    assert body["detail"] == f"{field}: {reason}"


@pytest.fixture
def shop(db) -> Project:
    return Project.objects.create(slug="shop", name="Shop", tech_stack="Django")


@pytest.fixture
def greet(db) -> Workflow:
    """A saved workflow to run (its steps do not matter: the refusal comes first)."""
    return Workflow.objects.create(workflow_id="greet", name="Greet", source="", definition={})


def test_a_number_is_not_saved_as_a_persona(api, builtin):
    before = database_state()
    active = PromptVersion.objects.get(template__role__role="pm", template__template_type="persona", is_active=True)
    response = api.post(VERSIONS, {"content": 123}, format="json")
    assert_refused(response, "content")
    assert database_state() == before
    assert PromptVersion.objects.get(pk=active.pk).is_active


def test_a_number_as_prompt_enhancement_refuses_the_task(api, builtin):
    before = database_state()
    response = api.post(
        "/api/v1/tasks",
        {"workflow": "generic", "task_description": "Write a haiku", "prompt_enhancement": 5},
        format="json",
    )
    assert_refused(response, "prompt_enhancement")
    assert Task.objects.count() == 0
    assert database_state() == before


def test_a_number_as_capability_id_is_not_invoked_as_its_text(api, builtin):
    before = database_state()
    response = api.post("/api/v1/capabilities/invoke", {"capability_id": 42, "from_role": "main"}, format="json")
    assert_refused(response, "capability_id")
    assert Message.objects.count() == 0
    assert database_state() == before


STRING_FIELDS = [
    # prompts/api.py
    ("post", VERSIONS, {"content": "Be brief.", "note": 7}, "note"),
    ("post", VERSIONS, {"content": "Be brief.", "version": 2}, "version"),
    ("post", VERSIONS, {"content": "Be brief.", "language": 1}, "language"),
    ("post", VERSIONS, {"content": "Be brief.", "base_version": 1.0}, "base_version"),
    ("post", VERSIONS, {"content": "Be brief.", "project": 5}, "project"),
    ("post", VERSIONS, {"content": "Be brief.", "bump": 1}, "bump"),
    ("post", "/api/v1/prompts/pm/persona/rollback", {"version": 1}, "version"),
    ("post", "/api/v1/prompts/pm/persona/rollback", {"version": "1.0.0", "note": 3}, "note"),
    ("post", "/api/v1/prompts/pm/persona/activate", {"version": 1.0}, "version"),
    ("post", "/api/v1/prompts/pm/persona/preview", {"content": 5}, "content"),
    ("post", "/api/v1/prompts/pm/render", {"task_description": 5}, "task_description"),
    ("post", "/api/v1/prompts/pm/render", {"prompt_enhancement": 5}, "prompt_enhancement"),
    ("post", "/api/v1/prompts/pm/render", {"task_id": 5}, "task_id"),
    # monitoring/api.py, live_api.py, runtime_api.py
    ("post", "/api/v1/tasks", {"workflow": "generic", "task_description": 5}, "task_description"),
    ("post", "/api/v1/tasks", {"workflow": "generic", "task_description": "x", "title": 3}, "title"),
    ("post", "/api/v1/tasks", {"workflow": "generic", "task_description": "x", "project": 5}, "project"),
    ("post", "/api/v1/tasks", {"workflow": 1, "task_description": "x"}, "workflow"),
    ("post", "/api/v1/auth/token", {"username": 5, "password": "x"}, "username"),
    ("post", "/api/v1/contexts/nope/instructions", {"text": 5}, "text"),
    ("post", "/api/v1/contexts/nope/snapshots", {"label": 5}, "label"),
    ("post", "/api/v1/capabilities/invoke", {"address": 1, "from_role": "main"}, "address"),
    ("post", "/api/v1/capabilities/invoke", {"capability_id": "schema_query", "from_role": 1}, "from_role"),
    (
        "post",
        "/api/v1/capabilities/invoke",
        {"capability_id": "schema_query", "from_role": "main", "task_id": 9},
        "task_id",
    ),
    ("post", "/api/v1/capabilities/invoke", {"capability_id": "x", "from_role": "main", "priority": 1}, "priority"),
    ("post", "/api/v1/hooks", {"event_type": 5, "from_role": "main", "broadcast": True}, "event_type"),
    ("post", "/api/v1/hooks", {"event_type": "x", "from_role": "main", "target_roles": [5]}, "target_roles"),
    # capabilities/*api.py (the bodies read by hand)
    ("put", "/api/v1/roles/pm/executor", {"model": 4}, "model"),
    ("post", "/api/v1/roles", {"role": "reviewer", "display_name": 5}, "display_name"),
    ("patch", "/api/v1/roles/pm", {"version": 1, "display_name": 5}, "display_name"),
    ("post", "/api/v1/projects", {"slug": "web", "name": 5}, "name"),
    ("patch", "/api/v1/projects/shop", {"version": 1, "description": 5}, "description"),
    ("put", "/api/v1/constraints/pm", {"version": 1, "constraints": {}, "note": 5}, "note"),
    ("put", "/api/v1/permissions/invoke-matrix", {"version": 1, "matrix": {}, "note": 5}, "note"),
    ("post", "/api/v1/skills", {"yaml": 5}, "yaml"),
    ("post", "/api/v1/skills/any/activate", {"role": 5}, "role"),
    ("post", "/api/v1/workflows/greet/run", {"project": 5}, "project"),
]


@pytest.mark.parametrize(
    ("method", "url", "body", "field"), STRING_FIELDS, ids=[f"{m} {u} {f}" for m, u, _, f in STRING_FIELDS]
)
def test_a_number_for_a_string_field_is_refused_naming_the_field(api, builtin, shop, greet, method, url, body, field):
    before = database_state()
    response = getattr(api, method)(url, body, format="json")
    if field == "target_roles":
        assert response.status_code == 400
        assert response.json()["errors"] == {"target_roles.0": ["must be a string, not a number"]}
    else:
        assert_refused(response, field)
    assert database_state() == before


@pytest.mark.parametrize("value", [True, ["pm"], {"text": "pm"}])
def test_the_refusal_says_which_type_was_sent(api, builtin, value):
    names = {bool: "a boolean", list: "an array", dict: "an object"}
    response = api.post(VERSIONS, {"content": value}, format="json")
    assert_refused(response, "content", f"must be a string, not {names[type(value)]}")


BOOLEAN_FIELDS = [
    ("post", VERSIONS, {"content": "Be brief.", "activate": "no"}, "activate", "a string"),
    ("post", VERSIONS, {"content": "Be brief.", "activate": 0}, "activate", "a number"),
    ("post", "/api/v1/hooks", {"event_type": "x", "from_role": "main", "broadcast": "yes"}, "broadcast", "a string"),
    ("post", "/api/v1/confirmations/any", {"approve": 1}, "approve", "a number"),
    ("post", "/api/v1/skills/any/deactivate", {"force": "yes"}, "force", "a string"),
]


@pytest.mark.parametrize(
    ("method", "url", "body", "field", "sent"), BOOLEAN_FIELDS, ids=[f"{u} {f}" for _, u, _, f, _ in BOOLEAN_FIELDS]
)
def test_a_boolean_field_takes_json_true_or_false_only(api, builtin, method, url, body, field, sent):
    before = database_state()
    response = getattr(api, method)(url, body, format="json")
    assert_refused(response, field, f"must be true or false, not {sent}")
    assert database_state() == before


def test_a_number_field_refuses_a_string(api, builtin):
    body = {"capability_id": "schema_query", "from_role": "main", "timeout": "5"}
    response = api.post("/api/v1/capabilities/invoke", body, format="json")
    assert_refused(response, "timeout", "must be a number, not a string")


def test_a_form_body_still_spells_booleans_as_text(api, builtin):
    """Forms carry only text: there ``"false"`` is read as false, as DRF always did."""
    response = api.post(VERSIONS, {"content": "Be brief.", "activate": "false"}, format="multipart")
    assert response.status_code == 201, response.content
    assert response.json()["is_active"] is False
    assert response.json()["content"] == "Be brief."


def test_strings_of_the_right_type_are_still_taken(api, builtin):
    response = api.post(VERSIONS, {"content": "Be brief.", "note": "shorter", "activate": True}, format="json")
    assert response.status_code == 201, response.content
    assert response.json()["content"] == "Be brief."
    assert response.json()["note"] == "shorter"
