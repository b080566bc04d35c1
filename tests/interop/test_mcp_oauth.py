"""OAuth 2.1 for /mcp (issue 29; ``interop.mcp_oauth``) driven by the official ``mcp`` SDK's own
OAuth client (``OAuthClientProvider``), as a desktop client's remote connector does it, against
a real daphne process: discovery from the 401, dynamic client registration, the authorization
code with PKCE, the consent page signed in as a person, the token, and tools under the chosen
role's matrix row. Then what must be refused: a non-staff person, a denial,
and an expired or revoked access token.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import re
from datetime import timedelta
from typing import Any
from urllib.parse import parse_qs, urljoin, urlparse

import httpx2
import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import PBKDF2PasswordHasher
from django.utils import timezone
from mcp.client.auth import OAuthClientProvider
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken
from pydantic import AnyUrl

from interop.models import OAuthGrant, RoleToken
from tests.conftest import PASSWORD
from tests.interop.test_mcp_server import reachable_by_matrix
from tests.processes import Server

pytestmark = pytest.mark.django_db(transaction=True)

REDIRECT = "http://127.0.0.1:5999/callback"


class Memory:
    """The SDK's ``TokenStorage``, in memory."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


class Person:
    """A person in a browser: signs in, opens the authorization URL, answers the consent form."""

    def __init__(self, base: str, username: str) -> None:
        # The server process hashes with the production hashers, not the tests' fast one.
        get_user_model().objects.filter(username=username).update(
            password=PBKDF2PasswordHasher().encode(PASSWORD, PBKDF2PasswordHasher().salt())
        )
        self.base = base
        self.http = httpx2.Client(base_url=base, follow_redirects=False, timeout=30)
        page = self.http.get("/login/")
        signed_in = self.http.post(
            "/login/",
            data={"username": username, "password": PASSWORD, "csrfmiddlewaretoken": csrf(page.text), "next": "/"},
            headers={"Referer": base + "/login/"},
        )
        assert signed_in.status_code == 302, signed_in.text[:2000]

    def consent(self, authorization_url: str, decision: str, role: str = "pm") -> httpx2.Response:
        """Open the authorization URL, follow it to the consent page and answer it."""
        to_consent = self.http.get(authorization_url)
        assert to_consent.status_code == 302, to_consent.text
        consent_url = urljoin(self.base, to_consent.headers["location"])
        page = self.http.get(consent_url)
        assert page.status_code == 200, page.text
        return self.http.post(
            consent_url,
            data={"decision": decision, "role": role, "csrfmiddlewaretoken": csrf(page.text)},
            headers={"Referer": consent_url},
        )


def csrf(html: str) -> str:
    found = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html)
    assert found, html[:500]
    return found.group(1)


def connector(server: Server, person: Person, decision: str = "approve", role: str = "pm") -> OAuthClientProvider:
    """The SDK's OAuth client whose browser step is ``person`` answering the consent form."""
    answered: asyncio.Queue[AuthorizationCodeResult] = asyncio.Queue()

    async def redirect_handler(url: str) -> None:
        response = await asyncio.to_thread(person.consent, url, decision, role)
        assert response.status_code == 302, response.text
        query = parse_qs(urlparse(response.headers["location"]).query)
        assert "code" in query, query
        await answered.put(AuthorizationCodeResult(code=query["code"][0], state=query["state"][0]))

    return OAuthClientProvider(
        server_url=f"http://127.0.0.1:{server.port}/mcp",
        client_metadata=OAuthClientMetadata(
            client_name="Desktop test client", redirect_uris=[AnyUrl(REDIRECT)], token_endpoint_auth_method="none"
        ),
        storage=Memory(),
        redirect_handler=redirect_handler,
        callback_handler=answered.get,
    )


async def tool_names(server: Server, auth: Any) -> set[str]:
    async with httpx2.AsyncClient(auth=auth, timeout=30) as http:
        async with streamable_http_client(f"http://127.0.0.1:{server.port}/mcp", http_client=http) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                return {tool.name for tool in (await session.list_tools()).tools}


def test_a_remote_connector_adds_teamclaw_by_its_url_and_acts_as_the_role_the_person_chose(server):
    base = f"http://127.0.0.1:{server.port}"
    # Discovery starts from the 401: it names the protected-resource metadata.
    refused = httpx2.post(base + "/mcp", json={}, timeout=10)
    assert refused.status_code == 401
    assert f'resource_metadata="{base}/.well-known/oauth-protected-resource/mcp"' in refused.headers["www-authenticate"]
    resource = httpx2.get(base + "/.well-known/oauth-protected-resource/mcp", timeout=10).json()
    assert resource["resource"] == base + "/mcp"
    assert resource["authorization_servers"] == [base + "/"]
    metadata = httpx2.get(base + "/.well-known/oauth-authorization-server", timeout=10).json()
    assert metadata["code_challenge_methods_supported"] == ["S256"]
    assert metadata["registration_endpoint"] == base + "/register"

    auth = connector(server, Person(base, "operator"), role="pm")
    assert asyncio.run(tool_names(server, auth)) == reachable_by_matrix(server, "pm")

    # The access token is a role token of the client, for pm, that expires; the code was used.
    [row] = RoleToken.objects.filter(oauth_client__isnull=False)
    assert row.role.role == "pm" and row.expires_at is not None and row.created_by.username == "operator"
    assert OAuthGrant.objects.get().used_at is not None


def test_a_person_who_is_not_staff_cannot_connect_a_client_and_a_denial_goes_back_as_access_denied(server, viewer_user):
    base = f"http://127.0.0.1:{server.port}"
    viewer_person = Person(base, "viewer")
    client = httpx2.post(
        base + "/register",
        json={"client_name": "x", "redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none"},
        timeout=10,
    ).json()
    url = (
        f"{base}/authorize?response_type=code&client_id={client['client_id']}&redirect_uri={REDIRECT}"
        "&code_challenge=" + "a" * 43 + "&code_challenge_method=S256&state=s1"
    )
    approved = viewer_person.consent(url, "approve")
    assert approved.status_code == 400
    assert "only a staff user" in approved.text
    assert not RoleToken.objects.filter(oauth_client__isnull=False).exists()

    denied = viewer_person.consent(url.replace("state=s1", "state=s2"), "deny")
    assert denied.status_code == 302
    assert parse_qs(urlparse(denied.headers["location"]).query) == {"error": ["access_denied"], "state": ["s2"]}


def test_codes_are_good_once_and_tokens_stop_when_expired_revoked_or_refreshed(server):
    base = f"http://127.0.0.1:{server.port}"
    person = Person(base, "operator")
    client = httpx2.post(
        base + "/register",
        json={"client_name": "y", "redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none"},
        timeout=10,
    ).json()
    verifier = "v" * 64
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")
    url = (
        f"{base}/authorize?response_type=code&client_id={client['client_id']}&redirect_uri={REDIRECT}"
        f"&code_challenge={challenge}&code_challenge_method=S256&state=s"
    )
    back = person.consent(url, "approve", role="architect")
    code = parse_qs(urlparse(back.headers["location"]).query)["code"][0]
    form = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": REDIRECT,
        "client_id": client["client_id"],
        "code_verifier": verifier,
    }
    wrong = httpx2.post(base + "/token", data={**form, "code_verifier": "w" * 64}, timeout=10)
    assert wrong.status_code == 400 and wrong.json()["error"] == "invalid_grant"
    tokens = httpx2.post(base + "/token", data=form, timeout=10)
    assert tokens.status_code == 200, tokens.text
    # (a code or refresh token used twice: tests/interop/test_mcp_oauth_abuse.py)

    access, refresh = tokens.json()["access_token"], tokens.json()["refresh_token"]
    bearer = {"Authorization": f"Bearer {access}"}
    assert asyncio.run(tool_names(server, _Bearer(access))) == reachable_by_matrix(server, "architect")

    refreshed = httpx2.post(
        base + "/token",
        data={"grant_type": "refresh_token", "refresh_token": refresh, "client_id": client["client_id"]},
        timeout=10,
    )
    assert refreshed.status_code == 200, refreshed.text
    # The old access token went with the refresh.
    assert httpx2.post(base + "/mcp", json={}, headers=bearer, timeout=10).status_code == 401
    new_access = refreshed.json()["access_token"]
    assert asyncio.run(tool_names(server, _Bearer(new_access))) == reachable_by_matrix(server, "architect")
    RoleToken.objects.filter(oauth_client__isnull=False, revoked_at=None).update(
        expires_at=timezone.now() - timedelta(seconds=1)
    )
    expired = httpx2.post(base + "/mcp", json={}, headers={"Authorization": f"Bearer {new_access}"}, timeout=10)
    assert expired.status_code == 401 and 'error="invalid_token"' in expired.headers["www-authenticate"]


def test_an_unknown_or_answered_consent_request_is_a_page_that_says_so(server):
    base = f"http://127.0.0.1:{server.port}"
    person = Person(base, "operator")
    page = person.http.get("/oauth/consent/nothing-here/")
    assert page.status_code == 404
    assert "start again from the client" in page.text


class _Bearer(httpx2.Auth):
    def __init__(self, secret: str) -> None:
        self.secret = secret

    def auth_flow(self, request: httpx2.Request) -> Any:
        request.headers["Authorization"] = f"Bearer {self.secret}"
        yield request


def test_the_consent_page_speaks_the_page_language(client, staff_user, builtin):
    from interop.models import OAuthClient

    OAuthClient.objects.create(client_id="c1", name="桌面客户端", info={"client_id": "c1", "redirect_uris": [REDIRECT]})
    OAuthGrant.objects.create(id="g1", client_id="c1", params={"redirect_uri": REDIRECT, "state": "s"})
    client.force_login(staff_user)
    page = client.get("/oauth/consent/g1/", HTTP_ACCEPT_LANGUAGE="zh-hans")
    assert page.status_code == 200
    text = page.content.decode()
    assert "连接客户端" in text and "以此角色行事" not in text and "扮演角色" in text
    assert "Connect a client" not in text and "asks to call" not in text
