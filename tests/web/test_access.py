"""Login is required everywhere: pages redirect to the login page, the API answers 401."""

from __future__ import annotations

import pytest
from django.test import Client
from rest_framework.test import APIClient

from capabilities.models import ConfigChange, Project
from tests.conftest import PASSWORD
from tests.pages import page_path, page_patterns, parameters, takes_get

ANY = {"alert_id": "1", "token_id": "1", "source_id": "1", "change_id": "1"}
"""A value for each path parameter that needs a number; any text does for the others."""
BUILTIN = {
    "role": "main",
    "capability_id": "schema_query",
    "which": "invoke",
    "slug": "shop",
    "template_type": "persona",
    "version": "1.0.0",
}
"""Path parameters the built-in team (and the project ``shop``) fill."""
NEEDS_A_RUN = {
    "task_id",
    "name",
    "context_id",
    "confirmation_id",
    "alert_id",
    "skill_id",
    "action",
    "workflow_id",
    "token_id",
    "source_id",
    "grant_id",
}
"""Parameters naming what only a run, a skill, a workflow, a role token or an MCP tool source
or a knowledge source creates: the pages that take them are shown logged in by the tests of their objects
(test_live_pages, tests/skills, tests/browser/test_tokens_browser,
tests/interop/test_mcp_source_pages, tests/knowledge/test_page.py, tests/interop/test_mcp_oauth.py)."""
API = [
    "/api/v1/roles",
    "/api/v1/roles/main",
    "/api/v1/capabilities",
    "/api/v1/capabilities/schema_query",
    "/api/v1/tasks",
    "/api/v1/schema/",
    "/api/v1/docs/",
]


@pytest.mark.parametrize("pattern", page_patterns(), ids=lambda p: p.name)
def test_every_page_redirects_anonymous_users_to_login(builtin, pattern):
    path = page_path(pattern, {name: ANY.get(name, "x") for name in parameters(pattern)})
    response = Client().get(path)
    assert response.status_code == 302
    assert response["Location"].startswith("/login/?next=")


@pytest.mark.parametrize("path", API)
def test_api_refuses_anonymous_clients_with_401(builtin, path):
    response = APIClient().get(path)
    assert response.status_code == 401


def test_posting_a_task_anonymously_is_refused(builtin):
    assert APIClient().post("/api/v1/tasks", {"workflow": "generic"}, format="json").status_code == 401
    assert Client().post("/tasks/demo/").status_code == 302


@pytest.mark.parametrize("pattern", page_patterns(), ids=lambda p: p.name)
def test_logged_in_users_see_every_page(page_client, builtin, pattern):
    Project.objects.create(slug="shop", name="Shop")
    path = page_path(pattern, {**BUILTIN, "change_id": str(ConfigChange.objects.order_by("pk").first().pk)})
    if path is None:
        assert set(parameters(pattern)) & NEEDS_A_RUN, f"{pattern.name}: add its parameters to BUILTIN or NEEDS_A_RUN"
        return
    response = page_client.get(path)
    if takes_get(response):
        assert response.status_code == 200, path


def test_token_endpoint_exchanges_credentials_for_a_working_token(staff_user, builtin):
    client = APIClient()
    bad = client.post("/api/v1/auth/token", {"username": "operator", "password": "wrong"}, format="json")
    assert bad.status_code == 400
    missing = client.post("/api/v1/auth/token", {"username": "operator"}, format="json")
    assert missing.status_code == 400
    assert "password" in missing.json()["errors"]
    good = client.post("/api/v1/auth/token", {"username": "operator", "password": PASSWORD}, format="json")
    assert good.status_code == 200
    client.credentials(HTTP_AUTHORIZATION=f"Token {good.json()['token']}")
    assert client.get("/api/v1/roles").status_code == 200


def test_login_page_logs_in(staff_user, builtin):
    client = Client()
    response = client.post("/login/", {"username": "operator", "password": PASSWORD})
    assert response.status_code == 302
    assert response["Location"] == "/"
    assert client.get("/").status_code == 200


def test_api_docs_are_served_without_any_cdn(api, builtin):
    page = api.get("/api/v1/docs/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "cdn" not in html.lower()
    assert "unpkg" not in html.lower()
    assert api.get("/api/v1/schema/").status_code == 200


def test_a_deeply_nested_json_body_is_a_400_not_a_500(api, builtin):
    body = "[" * 100_000 + "]" * 100_000
    response = api.generic("POST", "/api/v1/tasks", body, content_type="application/json")
    assert response.status_code == 400
    assert "nests too deeply" in response.json()["detail"]


def test_repeated_wrong_passwords_lock_the_account_from_that_address(staff_user, builtin, settings):
    client = APIClient()
    for _ in range(settings.AXES_FAILURE_LIMIT):
        response = client.post(
            "/api/v1/auth/token",
            {"username": "operator", "password": "wrong"},
            format="json",
            HTTP_X_FORWARDED_FOR=f"10.0.0.{_}",
        )  # a spoofed header changes nothing
        assert response.status_code in (400, 429)
    locked = client.post("/api/v1/auth/token", {"username": "operator", "password": PASSWORD}, format="json")
    assert locked.status_code == 429
    assert "too many failed logins" in locked.json()["detail"]
    page = Client().post("/login/", {"username": "operator", "password": PASSWORD})
    assert page.status_code == 429
    assert "Too many failed logins" in page.content.decode()


def test_nul_characters_are_refused_but_an_escaped_backslash_u_is_text(api, builtin):
    nul = api.generic(
        "POST",
        "/api/v1/tasks",
        '{"workflow": "generic", "task_description": "a\\u0000b"}',
        content_type="application/json",
    )
    assert nul.status_code == 400
    assert "NUL" in nul.json()["detail"]
    text = api.generic(
        "POST",
        "/api/v1/tasks",
        '{"workflow": "nope", "task_description": "see \\\\u0000 escapes"}',
        content_type="application/json",
    )
    assert text.status_code == 400
    assert "workflow" in text.json()["errors"]  # parsed fine; refused for the workflow


def test_a_viewer_may_not_delete_a_workflow(viewer_user, builtin):
    from capabilities.skill_models import Workflow

    Workflow.objects.create(workflow_id="greet", name="Greet", source="orchestration: {}", definition={})
    client = Client()
    client.force_login(viewer_user)
    response = client.post("/workflows/greet/delete/")
    assert response.status_code == 403
    assert Workflow.objects.filter(workflow_id="greet").exists()


@pytest.mark.parametrize(
    ("raw", "key"),
    [
        ('{"capability_id": "schema_query", "from_role": "dba", "from_role": "main"}', "from_role"),
        ('{"capability_id": "schema_query", "from_role": "main", "params": {"table": "a", "table": "b"}}', "table"),
    ],
)
def test_a_json_body_with_a_duplicate_key_is_refused_naming_the_key(api, builtin, raw, key):
    response = api.generic("POST", "/api/v1/capabilities/invoke", raw, content_type="application/json")
    assert response.status_code == 400, response.content
    body = response.json()
    assert set(body) == {"detail", "errors"}
    assert f"duplicate key '{key}'" in body["detail"]
    assert body["errors"] == {"non_field_errors": [body["detail"]]}


def test_a_card_patch_with_a_duplicate_key_changes_nothing(api, builtin):
    before = api.get("/api/v1/capabilities/schema_query").json()
    raw = f'{{"document_version": {before["document_version"]}, "enabled": false, "enabled": true}}'
    response = api.generic("PATCH", "/api/v1/capabilities/schema_query", raw, content_type="application/json")
    assert response.status_code == 400, response.content
    assert "duplicate key 'enabled'" in response.json()["detail"]
    assert api.get("/api/v1/capabilities/schema_query").json() == before
