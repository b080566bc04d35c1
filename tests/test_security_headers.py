"""Security headers and deployment switches: the Content-Security-Policy on every response
(teamclaw.middleware) and TEAMCLAW_SECURE for a deployment behind TLS (teamclaw.settings)."""

from __future__ import annotations

import pytest


def directives(response) -> dict[str, str]:
    policy = response["Content-Security-Policy"]
    return {part.split(" ", 1)[0]: part.split(" ", 1)[1] for part in (p.strip() for p in policy.split(";"))}


@pytest.mark.parametrize("path", ["/", "/live/", "/login/", "/api/v1/roles", "/nowhere/"])
def test_every_response_carries_a_self_only_policy(page_client, builtin, path):
    found = directives(page_client.get(path))
    assert found["default-src"] == "'self'"
    assert found["script-src"] == "'self'"
    assert found["style-src"] == "'self'"
    assert found["object-src"] == "'none'"
    assert found["frame-ancestors"] == "'none'"
    assert found["connect-src"] == "'self' ws://testserver"  # sockets only to this site
    assert "unsafe" not in page_client.get(path)["Content-Security-Policy"]


def test_a_tls_request_allows_only_its_own_wss_socket(page_client, builtin):
    found = directives(page_client.get("/", secure=True))
    assert found["connect-src"] == "'self' wss://testserver"
