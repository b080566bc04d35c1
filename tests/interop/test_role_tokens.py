"""Role-bound tokens: issued once, stored as a digest, listed without secrets, revoked for good."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from interop import role_tokens
from interop.models import RoleToken

pytestmark = pytest.mark.django_db


def test_issue_shows_the_secret_once_and_stores_only_its_digest(api, builtin):
    created = api.post("/api/v1/auth/role-tokens", {"role": "pm", "name": "Claude Desktop"}, format="json")
    assert created.status_code == 201, created.content
    secret = created.json()["token"]
    assert secret.startswith("tcr_") and len(secret) > 40
    assert "no-store" in created["Cache-Control"]  # no cache keeps the secret
    row = RoleToken.objects.get(pk=created.json()["id"])
    assert secret not in (row.digest, row.prefix) and row.digest == role_tokens.digest_of(secret)
    listed = api.get("/api/v1/auth/role-tokens").json()
    assert listed["count"] == 1 and "token" not in listed["results"][0]
    assert listed["results"][0]["role"] == "pm" and listed["results"][0]["active"] is True
    assert role_tokens.authenticate(secret).role.role == "pm"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"role": "nobody", "name": "x"}, "role"),
        ({"role": "pm", "name": "   "}, "name"),
        ({"role": "pm"}, "name"),
        ({"role": "pm", "name": "x", "extra": 1}, "extra"),
        ({"role": 3, "name": "x"}, "role"),
    ],
)
def test_bad_requests_name_the_field_and_issue_nothing(api, builtin, body, field):
    response = api.post("/api/v1/auth/role-tokens", body, format="json")
    assert response.status_code == 400
    assert field in response.json()["errors"]
    assert RoleToken.objects.count() == 0


def test_a_disabled_role_gets_no_token_and_its_tokens_stop_working(api, builtin):
    from capabilities.models import AgentRole

    secret = api.post("/api/v1/auth/role-tokens", {"role": "dba", "name": "x"}, format="json").json()["token"]
    AgentRole.objects.filter(role="dba").update(enabled=False)
    assert role_tokens.authenticate(secret) is None
    refused = api.post("/api/v1/auth/role-tokens", {"role": "dba", "name": "y"}, format="json")
    assert refused.status_code == 400 and "disabled" in refused.json()["errors"]["role"][0]


def test_revoked_tokens_authenticate_nothing_and_stay_listed(api, builtin):
    created = api.post("/api/v1/auth/role-tokens", {"role": "main", "name": "ci"}, format="json").json()
    assert api.delete(f"/api/v1/auth/role-tokens/{created['id']}").status_code == 200
    assert role_tokens.authenticate(created["token"]) is None
    assert api.get("/api/v1/auth/role-tokens?active=false").json()["count"] == 1
    assert api.get("/api/v1/auth/role-tokens?active=true").json()["count"] == 0
    assert api.get("/api/v1/auth/role-tokens?active=maybe").status_code == 400
    assert api.delete("/api/v1/auth/role-tokens/99999").status_code == 404


@pytest.mark.parametrize("secret", ["", "tcr_", "tcr_wrong", "Token abc", "x" * 5000])
def test_unknown_or_malformed_secrets_authenticate_nothing(builtin, secret):
    assert role_tokens.authenticate(secret) is None


def test_only_staff_manage_tokens(viewer_user, builtin):
    client = APIClient()
    client.force_authenticate(viewer_user)
    assert client.get("/api/v1/auth/role-tokens").status_code == 403
    assert client.post("/api/v1/auth/role-tokens", {"role": "pm", "name": "x"}, format="json").status_code == 403
    assert APIClient().get("/api/v1/auth/role-tokens").status_code in (401, 403)


def test_bearer_header_parsing():
    assert role_tokens.bearer_secret("Bearer tcr_abc") == "tcr_abc"
    assert role_tokens.bearer_secret("bearer  tcr_abc ") == "tcr_abc"
    assert role_tokens.bearer_secret("Token tcr_abc") == ""
    assert role_tokens.bearer_secret(None) == ""
