"""The OAuth consent page of /mcp (issue 29; ``web.pages.oauth``) answered in a real browser
(Playwright + Debian Chromium): the answer must reach the client's redirect URI. Chromium
applies the page's CSP ``form-action`` to the redirect that answers the form, so a policy of
``'self'`` alone blocked every approval and denial (tests driving the form over HTTP did not
see it)."""

from __future__ import annotations

import secrets
from urllib.parse import parse_qs, urlparse

import pytest
from mcp.server.auth.provider import AuthorizationParams
from pydantic import AnyUrl

from interop.models import OAuthClient, OAuthGrant

pytestmark = pytest.mark.django_db(transaction=True)


def open_grant(redirect_uri: str) -> OAuthGrant:
    client = OAuthClient.objects.create(
        client_id="desktop", name="Desktop", info={"client_id": "desktop", "redirect_uris": [redirect_uri]}
    )
    params = AuthorizationParams(
        state="s1",
        scopes=None,
        code_challenge="a" * 43,
        redirect_uri=AnyUrl(redirect_uri),
        redirect_uri_provided_explicitly=True,
    )
    return OAuthGrant.objects.create(id=secrets.token_urlsafe(24), client=client, params=params.model_dump(mode="json"))


@pytest.mark.parametrize(("decision", "answer"), [("approve", "code"), ("deny", "error")])
def test_the_answer_goes_back_to_the_client_in_a_real_browser(logged_in_page, live_server, builtin, decision, answer):
    page = logged_in_page
    callback = "http://127.0.0.1:5999/callback"
    grant = open_grant(callback)
    reached: list[str] = []

    def client_answers(route) -> None:  # the desktop client's local listener
        reached.append(route.request.url)
        route.fulfill(status=200, body="connected", content_type="text/plain")

    page.route("http://127.0.0.1:5999/**", client_answers)
    page.goto(f"{live_server.url}/oauth/consent/{grant.id}/")
    if decision == "approve":
        page.select_option("#id_role", "pm")
    page.click(f"#oauth-{decision}")
    page.wait_for_url("http://127.0.0.1:5999/callback**")
    [url] = reached
    query = parse_qs(urlparse(url).query)
    assert answer in query and query["state"] == ["s1"]
