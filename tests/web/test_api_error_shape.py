"""Every API error is ``{"detail": str, "errors": {field: [reason]}}`` (README "REST API",
teamclaw.api_errors): ``errors`` is there even when no field is at fault (then ``{}``), and
refusals with more to say keep their extra keys."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import RequestFactory
from rest_framework.test import APIClient

from teamclaw.error_views import server_error
from teamclaw.lockout import lockout_response

INVOKE_MATRIX = "/api/v1/permissions/invoke-matrix"


def error_body(response: Any, status: int) -> dict[str, Any]:
    """The JSON error body, checked for the shape every API error has."""
    assert response.status_code == status, response.content
    body = json.loads(response.content)
    assert isinstance(body["detail"], str)
    assert body["detail"]
    assert isinstance(body["errors"], dict)
    assert all(isinstance(r, list) and all(isinstance(x, str) for x in r) for r in body["errors"].values())
    return body


def test_malformed_json_is_a_400_in_the_error_shape(api, builtin):
    response = api.post("/api/v1/tasks", data=b'{"workflow": ', content_type="application/json")
    body = error_body(response, 400)
    assert body["detail"].startswith("JSON parse error")
    assert body["errors"] == {}


@pytest.mark.parametrize("number", ["1e400", "-1e400", "1.5e309"])
def test_a_number_too_large_for_a_float_is_a_parse_error_saying_so(api, builtin, number):
    """Python reads 1e400 as infinity, which no field can take and JSON cannot write back:
    refused at parsing, like NaN, instead of a field's "Value must be valid JSON"."""
    body = b'{"version": 0, "constraints": {"max_concurrent_instances": ' + number.encode() + b"}}"
    response = api.put("/api/v1/constraints/coderA", data=body, content_type="application/json")
    detail = error_body(response, 400)["detail"]
    assert f"{number} is too large in magnitude for a JSON number" in detail
    config = api.post(
        "/api/v1/config/import",
        data=b'{"format": "teamclaw-config/1", "x": ' + number.encode() + b"}",
        content_type="application/json",
    )
    assert (
        config.status_code == 400
        and "too large in magnitude for a JSON number" in config.json()["errors"]["document"][0]
    )


def test_a_stale_matrix_save_is_a_409_in_the_error_shape_with_its_conflict_keys(api, builtin):
    loaded = api.get(INVOKE_MATRIX).json()
    first = api.put(INVOKE_MATRIX, {"version": loaded["version"], "matrix": {"coderA": {"dba": False}}}, format="json")
    assert first.status_code == 200
    stale = api.put(INVOKE_MATRIX, {"version": loaded["version"], "matrix": {"pm": {"dba": True}}}, format="json")
    body = error_body(stale, 409)
    assert body["errors"] == {}
    assert {"current_version", "your_version", "changes", "current"} <= set(body)
    assert body["your_version"] == loaded["version"]
    assert body["current_version"] > loaded["version"]


@pytest.mark.parametrize("path", ["/api/v1/tasks", "/api/v1/config/export", "/api/v1/docs/"])
def test_no_credentials_is_a_401_in_the_error_shape(db, path):
    response = APIClient().get(path)
    assert response["Content-Type"] == "application/json"
    assert error_body(response, 401) == {"detail": "Authentication credentials were not provided.", "errors": {}}


def test_a_wrong_token_is_a_401_in_the_error_shape(db):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Token not-a-token")
    assert error_body(client.get("/api/v1/roles"), 401)["errors"] == {}


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/tasks/no-such-task",  # get_object_or_404 (Django's Http404)
        "/api/v1/capabilities/no_such_card",  # NotFound raised by the view
        "/api/v1/health/no_such_card",  # the view's own error_response
        "/api/v1/no/such/endpoint",  # no URL matches: Django's 404 handler
    ],
)
def test_not_found_is_a_404_in_the_error_shape(api, builtin, path):
    assert error_body(api.get(path), 404)["errors"] == {}


def test_not_allowed_is_a_403_in_the_error_shape(builtin, viewer_user):
    client = APIClient()
    client.force_authenticate(viewer_user)
    body = {"capability_id": "schema_query", "from_role": "main"}
    assert error_body(client.post("/api/v1/capabilities/invoke", body, format="json"), 403)["errors"] == {}


def test_a_wrong_method_and_a_wrong_media_type_are_in_the_error_shape(api, builtin):
    assert error_body(api.delete("/api/v1/tasks"), 405)["errors"] == {}
    response = api.post("/api/v1/tasks", data=b"<task/>", content_type="application/xml")
    assert error_body(response, 415)["errors"] == {}


def test_field_errors_keep_naming_each_field(api, builtin):
    body = error_body(api.post("/api/v1/tasks", {"title": "x"}, format="json"), 400)
    assert body["detail"] == "workflow: This field is required."
    assert body["errors"] == {"workflow": ["This field is required."]}


def test_a_runtime_refusal_of_a_hook_keeps_its_error_next_to_the_shape(api, runtime_host):
    version = api.get("/api/v1/roles/dba").json()["version"]
    assert api.patch("/api/v1/roles/dba", {"version": version, "enabled": False}, format="json").status_code == 200
    hook = {"event_type": "schema_changed", "from_role": "coderA", "target_roles": ["dba"]}
    body = error_body(api.post("/api/v1/hooks", hook, format="json"), 400)
    assert body["errors"] == {}
    assert body["error"]["code"] == "capability_disabled"


def test_server_errors_and_lockouts_under_api_are_in_the_error_shape():
    request = RequestFactory().get("/api/v1/roles")
    assert error_body(server_error(request), 500)["errors"] == {}
    assert error_body(lockout_response(RequestFactory().post("/api/v1/auth/token")), 429)["errors"] == {}


def test_a_version_the_document_never_had_is_told_apart_from_a_stale_one(api, builtin):
    """The config version (from "saved as config version N") sent for a document's own: a
    409 that says which number to send, not "changed since you loaded it" with no changes."""
    doc = api.get("/api/v1/constraints/dba").json()
    ahead = api.put(
        "/api/v1/constraints/dba", {"version": doc["version"] + 7, "constraints": {"max_retries": 2}}, format="json"
    )
    body = error_body(ahead, 409)
    assert f"the document is at version {doc['version']}, not {doc['version'] + 7}" in body["detail"]
    assert "not the config version; nothing was saved" in body["detail"]
    saved = api.put(
        "/api/v1/constraints/dba", {"version": doc["version"], "constraints": {"max_retries": 2}}, format="json"
    )
    assert saved.status_code == 200
    stale = api.put(
        "/api/v1/constraints/dba", {"version": doc["version"], "constraints": {"max_retries": 1}}, format="json"
    )
    assert "the constraints of dba changed by " in error_body(stale, 409)["detail"]


@pytest.mark.parametrize(
    ("path", "words"),
    [
        ("/api/v1/constraints/nosuchrole", "role 'nosuchrole' does not exist"),
        ("/api/v1/roles/nosuchrole", "role 'nosuchrole' does not exist"),
        ("/api/v1/projects/nowhere", "project 'nowhere' does not exist"),
        ("/api/v1/tasks/nosuchtask", "task 'nosuchtask' does not exist"),
    ],
)
def test_a_missing_thing_is_named_not_its_model_class(api, builtin, path, words):
    body = error_body(api.get(path), 404)
    assert body["detail"] == words
    assert "matches the given query" not in body["detail"]
    if path.startswith("/api/v1/constraints/"):
        assert error_body(api.put(path, {"version": 0, "constraints": {}}, format="json"), 404)["detail"] == words
