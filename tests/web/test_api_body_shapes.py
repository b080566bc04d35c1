"""Bodies that are not what an endpoint takes (a JSON null, a list, a form) get the same
answer as before the endpoints shared one input style (teamclaw.api_fields): the
documented "the body must be a JSON object", a form's text read as text (never parsed as
JSON), a form's ``csrfmiddlewaretoken`` allowed, and an unknown skill a 404 whatever the body."""

from __future__ import annotations

import json
from urllib.parse import urlencode

import pytest

from capabilities.models import AgentRole, Project
from team.roles import create_role
from tests.helpers import database_state
from tests.skills.support import skill_yaml

FORM = "application/x-www-form-urlencoded"

OBJECT_BODIES = [
    ("post", "/api/v1/projects"),
    ("patch", "/api/v1/projects/shop"),
    ("post", "/api/v1/roles"),
    ("patch", "/api/v1/roles/pm"),
    ("patch", "/api/v1/capabilities/code_review"),
    ("put", "/api/v1/permissions/invoke-matrix"),
    ("put", "/api/v1/permissions/tool-matrix"),
    ("post", "/api/v1/permissions/invoke-matrix/what-if"),
    ("post", "/api/v1/permissions/tool-matrix/what-if"),
    ("put", "/api/v1/constraints/pm"),
]


@pytest.fixture
def shop(builtin) -> Project:
    return Project.objects.create(slug="shop", name="Shop")


@pytest.mark.parametrize(("method", "url"), OBJECT_BODIES, ids=[f"{m} {u}" for m, u in OBJECT_BODIES])
@pytest.mark.parametrize("body", [None, [], "x", 5, True], ids=["null", "list", "string", "number", "boolean"])
def test_a_body_that_is_not_an_object_is_refused_as_such(api, shop, method, url, body):
    before = database_state()
    response = getattr(api, method)(url, json.dumps(body), content_type="application/json")
    assert response.status_code == 400, response.content
    assert response.json()["errors"] == {"non_field_errors": ["the body must be a JSON object"]}
    assert database_state() == before


def test_a_form_executor_change_is_read_as_text(api, builtin):
    response = api.put("/api/v1/roles/pm/executor", urlencode({"executor": "offline", "model": ""}), content_type=FORM)
    assert response.status_code == 200, response.content
    assert response.json()["executor"] == "offline"


def test_a_form_what_if_is_refused_as_a_media_type_the_endpoint_does_not_take(api, builtin):
    """A form cannot carry the matrix object: the endpoint takes JSON only (415), as its schema says."""
    before = database_state()
    response = api.post("/api/v1/permissions/invoke-matrix/what-if", urlencode({"matrix": "{}"}), content_type=FORM)
    assert response.status_code == 415, response.content
    assert FORM in response.json()["detail"]
    assert database_state() == before


def test_a_form_role_edit_is_not_told_its_text_is_invalid_json(api, builtin):
    version = api.get("/api/v1/roles/pm").json()["version"]
    body = urlencode({"display_name": "PM", "version": version})
    response = api.patch("/api/v1/roles/pm", body, content_type=FORM)
    assert response.status_code == 400, response.content
    reasons = [reason for field in response.json()["errors"].values() for reason in field]
    assert "Value must be valid JSON." not in reasons
    assert response.json()["errors"]["version"] == ["must be a whole number >= 0"]


def test_a_form_role_delete_may_carry_the_csrf_token(api, builtin):
    create_role({"role": "delme", "display_name": "Del"})
    version = api.get("/api/v1/roles/delme").json()["version"]
    body = urlencode({"csrfmiddlewaretoken": "t0ken"})
    response = api.delete(f"/api/v1/roles/delme?version={version}", body, content_type=FORM)
    assert response.status_code == 204, response.content
    assert not AgentRole.objects.filter(role="delme").exists()


def test_a_form_role_delete_still_refuses_a_stranger(api, builtin):
    create_role({"role": "delme", "display_name": "Del"})
    version = api.get("/api/v1/roles/delme").json()["version"]
    body = urlencode({"csrfmiddlewaretoken": "t0ken", "nte": "x"})
    response = api.delete(f"/api/v1/roles/delme?version={version}", body, content_type=FORM)
    assert response.status_code == 400, response.content
    assert list(response.json()["errors"]) == ["nte"]
    assert AgentRole.objects.filter(role="delme").exists()


def test_installing_an_unknown_skill_is_a_404_whatever_the_body(api, builtin):
    for body in ("[]", "{}", '{"config": {}}'):
        response = api.post("/api/v1/skills/nope/install", body, content_type="application/json")
        assert response.status_code == 404, response.content
        assert response.json()["errorCode"] == "not_found"
        assert response.json()["errors"] == {"skillId": ["unknown skill"]}


def test_an_install_body_that_is_not_an_object_is_refused_and_installs_nothing(api, builtin):
    upload = api.post("/api/v1/skills", skill_yaml("p1").encode(), content_type="application/yaml")
    assert upload.status_code == 201, upload.content
    for body in ("[]", '"x"', "5", "true", "null"):
        response = api.post("/api/v1/skills/p1/install", body, content_type="application/json")
        assert response.status_code == 400, (body, response.content)
        assert response.json()["errors"] == {"non_field_errors": ["the body must be a JSON object"]}
    assert api.get("/api/v1/skills/p1").json()["status"] == "DISCOVERED"
    assert api.post("/api/v1/skills/p1/install", "", content_type="application/json").status_code == 200
