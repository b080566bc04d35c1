"""Login is required everywhere: pages redirect to the login page, the API answers 401."""

from __future__ import annotations

import pytest
from django.test import Client
from rest_framework.test import APIClient

from tests.conftest import PASSWORD

PAGES = ["/", "/tasks/", "/tasks/new/", "/roles/", "/roles/main/", "/capabilities/", "/capabilities/schema_query/"]
API = [
    "/api/v1/roles",
    "/api/v1/roles/main",
    "/api/v1/capabilities",
    "/api/v1/capabilities/schema_query",
    "/api/v1/tasks",
    "/api/v1/schema/",
    "/api/v1/docs/",
]


@pytest.mark.parametrize("path", PAGES)
def test_pages_redirect_anonymous_users_to_login(builtin, path):
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


@pytest.mark.parametrize("path", PAGES)
def test_logged_in_users_see_every_page(page_client, builtin, path):
    assert page_client.get(path).status_code == 200


def test_token_endpoint_exchanges_credentials_for_a_working_token(staff_user, builtin):
    client = APIClient()
    bad = client.post("/api/v1/auth/token", {"username": "operator", "password": "wrong"}, format="json")
    assert bad.status_code == 400
    missing = client.post("/api/v1/auth/token", {"username": "operator"}, format="json")
    assert missing.status_code == 400 and "password" in missing.json()["errors"]
    good = client.post("/api/v1/auth/token", {"username": "operator", "password": PASSWORD}, format="json")
    assert good.status_code == 200
    client.credentials(HTTP_AUTHORIZATION=f"Token {good.json()['token']}")
    assert client.get("/api/v1/roles").status_code == 200


def test_login_page_logs_in(staff_user, builtin):
    client = Client()
    response = client.post("/login/", {"username": "operator", "password": PASSWORD})
    assert response.status_code == 302 and response["Location"] == "/"
    assert client.get("/").status_code == 200


def test_api_docs_are_served_without_any_cdn(api, builtin):
    page = api.get("/api/v1/docs/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "cdn" not in html.lower() and "unpkg" not in html.lower()
    assert api.get("/api/v1/schema/").status_code == 200


def test_a_deeply_nested_json_body_is_a_400_not_a_500(api, builtin):
    body = "[" * 100_000 + "]" * 100_000
    response = api.generic("POST", "/api/v1/tasks", body, content_type="application/json")
    assert response.status_code == 400 and "nests too deeply" in response.json()["detail"]


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
    assert locked.status_code == 429 and "too many failed logins" in locked.json()["detail"]
    page = Client().post("/login/", {"username": "operator", "password": PASSWORD})
    assert page.status_code == 429 and "Too many failed logins" in page.content.decode()


def test_nul_characters_are_refused_but_an_escaped_backslash_u_is_text(api, builtin):
    nul = api.generic(
        "POST",
        "/api/v1/tasks",
        '{"workflow": "generic", "task_description": "a\\u0000b"}',
        content_type="application/json",
    )
    assert nul.status_code == 400 and "NUL" in nul.json()["detail"]
    text = api.generic(
        "POST",
        "/api/v1/tasks",
        '{"workflow": "nope", "task_description": "see \\\\u0000 escapes"}',
        content_type="application/json",
    )
    assert text.status_code == 400 and "workflow" in text.json()["errors"]  # parsed fine; refused for the workflow
