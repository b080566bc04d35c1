"""What an anonymous caller can make the OAuth routes of ``/mcp`` store or keep (issue 29;
``interop.mcp_oauth``), against a real daphne process: registration and ``/authorize`` are open
to anyone (RFC 7591, RFC 6749), so every row and in-memory object they create is bounded."""

from __future__ import annotations

import asyncio
import base64
import hashlib
from datetime import timedelta
from urllib.parse import parse_qs, urlparse

import httpx2
import pytest
from django.utils import timezone
from mcp.server.auth.provider import RegistrationError
from mcp.shared.auth import OAuthClientInformationFull

from interop import mcp_oauth
from interop.models import OAuthClient, OAuthGrant, RoleToken
from tests.interop.test_mcp_oauth import REDIRECT, Person
from web.pages.oauth import form_target

pytestmark = pytest.mark.django_db(transaction=True)


def register(base: str, **metadata: object) -> httpx2.Response:
    body = {"client_name": "c", "redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none", **metadata}
    return httpx2.post(base + "/register", json=body, timeout=30)


def test_a_registration_stores_at_most_a_bounded_record_and_no_browser_run_redirect(server):
    base = f"http://127.0.0.1:{server.port}"
    # Before the bound, a 3.5 MB name was stored whole (10 anonymous requests: 35 MB of database).
    big = register(base, client_name="x" * 100_000)
    assert big.status_code == 400, big.text
    assert big.json()["error"] == "invalid_client_metadata"
    assert str(mcp_oauth.REGISTRATION_MAX_BYTES) in big.json()["error_description"]
    metadata = httpx2.get(base + "/.well-known/oauth-authorization-server", timeout=30)
    for response in (big, metadata):  # what every protocol response carries (interop.mounts)
        assert response.headers["x-content-type-options"] == "nosniff"
        assert "frame-ancestors 'none'" in response.headers["content-security-policy"]
    many = register(base, redirect_uris=[f"http://127.0.0.1:5999/cb{n}" for n in range(1000)])
    assert many.status_code == 400, many.text[:300]
    for uri in ("javascript:alert(1)", "JavaScript:alert(1)//", "data:text/html,hi"):
        refused = register(base, redirect_uris=[uri])
        assert refused.status_code == 400, (uri, refused.text)
        assert refused.json()["error"] == "invalid_redirect_uri"
    assert not OAuthClient.objects.exists()
    assert register(base, redirect_uris=["myapp://callback"]).status_code == 201  # a desktop app's own scheme


def test_clients_never_approved_expire_and_are_capped(server, monkeypatch):
    base = f"http://127.0.0.1:{server.port}"
    old = register(base).json()["client_id"]
    OAuthClient.objects.filter(pk=old).update(
        created_at=timezone.now() - timedelta(seconds=mcp_oauth.PENDING_CLIENT_TTL_S + 1)
    )
    assert register(base).status_code == 201
    assert not OAuthClient.objects.filter(pk=old).exists()

    # The cap, in this process (the server's is MAX_PENDING_CLIENTS).
    monkeypatch.setattr(mcp_oauth, "MAX_PENDING_CLIENTS", OAuthClient.objects.count())
    client = OAuthClientInformationFull(
        client_id="one-more", redirect_uris=[REDIRECT], token_endpoint_auth_method="none"
    )
    with pytest.raises(RegistrationError) as refused:
        asyncio.run(mcp_oauth.TeamClawOAuthProvider().register_client(client))
    assert refused.value.error == "invalid_client_metadata"
    assert not OAuthClient.objects.filter(pk="one-more").exists()


def test_authorization_requests_waiting_for_consent_are_capped_per_client_and_old_ones_go(server):
    base = f"http://127.0.0.1:{server.port}"
    client = register(base).json()["client_id"]
    url = (
        f"{base}/authorize?response_type=code&client_id={client}&redirect_uri={REDIRECT}"
        "&code_challenge=" + "a" * 43 + "&code_challenge_method=S256&state=s"
    )
    for _ in range(mcp_oauth.MAX_OPEN_GRANTS_PER_CLIENT):
        opened = httpx2.get(url, timeout=30)
        assert opened.status_code == 302 and opened.headers["location"].startswith("/oauth/consent/")
    full = httpx2.get(url, timeout=30)
    assert full.status_code == 302
    assert parse_qs(urlparse(full.headers["location"]).query)["error"] == ["temporarily_unavailable"]
    assert OAuthGrant.objects.count() == mcp_oauth.MAX_OPEN_GRANTS_PER_CLIENT

    OAuthGrant.objects.update(created_at=timezone.now() - timedelta(seconds=mcp_oauth.GRANT_TTL_S + 1))
    again = httpx2.get(url, timeout=30)
    assert again.headers["location"].startswith("/oauth/consent/")
    assert OAuthGrant.objects.count() == 1


def test_the_per_host_routes_are_kept_for_a_bounded_number_of_hosts():
    """Every port of an allowed host is another issuer URL: before the bound, 3,000 requests
    naming ``Host: localhost:<n>`` grew the server by 58 MB (RSS, measured), for good."""
    endpoint = mcp_oauth.OAuthEndpoint()
    for port in range(1000, 1100):
        endpoint.app_for(f"http://localhost:{port}")
    assert len(endpoint._apps) == mcp_oauth.HOST_APPS
    assert "http://localhost:1099" in endpoint._apps


def _first_tokens(base: str) -> tuple[str, dict[str, str], dict[str, str]]:
    """A client connected through the consent page: ``(client_id, code form, token response)``."""
    person = Person(base, "operator")
    client = register(base).json()["client_id"]
    verifier = "v" * 64
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")
    url = (
        f"{base}/authorize?response_type=code&client_id={client}&redirect_uri={REDIRECT}"
        f"&code_challenge={challenge}&code_challenge_method=S256&state=s"
    )
    code = parse_qs(urlparse(person.consent(url, "approve").headers["location"]).query)["code"][0]
    form = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": REDIRECT,
        "client_id": client,
        "code_verifier": verifier,
    }
    tokens = httpx2.post(base + "/token", data=form, timeout=10)
    assert tokens.status_code == 200, tokens.text
    return client, form, tokens.json()


def _mcp_status(base: str, access: str) -> int:
    return httpx2.post(base + "/mcp", json={}, headers={"Authorization": f"Bearer {access}"}, timeout=10).status_code


def test_a_code_used_twice_revokes_what_it_gave(server):
    """OAuth 2.1 §4.1.3: the second use is refused and the tokens the first gave are revoked,
    since whoever replays it may be the one who holds them."""
    base = f"http://127.0.0.1:{server.port}"
    client, form, tokens = _first_tokens(base)
    assert _mcp_status(base, tokens["access_token"]) != 401
    again = httpx2.post(base + "/token", data=form, timeout=10)
    assert again.status_code == 400 and again.json()["error"] == "invalid_grant"
    assert _mcp_status(base, tokens["access_token"]) == 401
    refreshed = httpx2.post(
        base + "/token",
        data={"grant_type": "refresh_token", "refresh_token": tokens["refresh_token"], "client_id": client},
        timeout=10,
    )
    assert refreshed.status_code == 400


def test_a_refresh_token_used_twice_revokes_every_token_of_the_client(server):
    """OAuth 2.1 §4.3.1 (rotation): a rotated refresh token coming back means two holders; the
    live pair the rotation gave is revoked, and the client connects again. Revoking a used one
    at /revoke revokes nothing more."""
    base = f"http://127.0.0.1:{server.port}"
    client, _form, tokens = _first_tokens(base)
    body = {"grant_type": "refresh_token", "refresh_token": tokens["refresh_token"], "client_id": client}
    rotated = httpx2.post(base + "/token", data=body, timeout=10)
    assert rotated.status_code == 200, rotated.text
    new = rotated.json()
    # (the SDK's RevocationRequest requires a client_secret field, empty for a public client)
    revoked_old = httpx2.post(
        base + "/revoke", data={"token": tokens["refresh_token"], "client_id": client, "client_secret": ""}
    )
    assert revoked_old.status_code == 200, revoked_old.text
    assert _mcp_status(base, new["access_token"]) != 401

    replay = httpx2.post(base + "/token", data=body, timeout=10)
    assert replay.status_code == 400 and replay.json()["error"] == "invalid_grant"
    assert _mcp_status(base, new["access_token"]) == 401
    again = {**body, "refresh_token": new["refresh_token"]}
    assert httpx2.post(base + "/token", data=again, timeout=10).status_code == 400
    assert not RoleToken.objects.filter(oauth_client_id=client, revoked_at=None).exists()


@pytest.mark.parametrize(
    ("redirect_uri", "source"),
    [
        ("http://127.0.0.1:5999/cb", "http://127.0.0.1:5999"),
        ("https://claude.ai/api/mcp/auth_callback", "https://claude.ai"),
        ("myapp://callback", "myapp:"),
        ("http://[::1]:8080/cb", "http://[::1]:8080"),
        ("javascript:alert(1)", ""),
        ("http://a b;script-src *:1/", ""),  # nothing of it may reach the policy's other directives
        ("http://u:p@host/cb", ""),
    ],
)
def test_the_consent_page_lets_its_form_reach_the_redirect_target_and_nothing_else(redirect_uri, source):
    assert form_target(redirect_uri) == source


def test_nul_in_a_registration_or_an_authorization_request_is_refused_not_a_500(server):
    """PostgreSQL text and jsonb cannot hold NUL: there a NUL in ``client_name`` was a 500 and one
    in ``state`` the SDK's ``server_error`` (checked on PostgreSQL; SQLite stored them)."""
    base = f"http://127.0.0.1:{server.port}"
    for metadata in ({"client_name": "a\u0000b"}, {"software_id": "x\u0000"}):
        refused = register(base, **metadata)
        assert refused.status_code == 400, refused.text
        assert refused.json()["error"] == "invalid_client_metadata"
    assert not OAuthClient.objects.exists()
    client = register(base).json()["client_id"]
    url = (
        f"{base}/authorize?response_type=code&client_id={client}&redirect_uri={REDIRECT}"
        "&code_challenge=" + "a" * 43 + "&code_challenge_method=S256&state=s%00x"
    )
    answer = parse_qs(urlparse(httpx2.get(url, timeout=30).headers["location"]).query)
    assert answer["error"] == ["invalid_request"] and "NUL" in answer["error_description"][0]
    assert not OAuthGrant.objects.exists()
