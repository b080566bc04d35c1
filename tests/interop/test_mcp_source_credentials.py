"""Credentials of HTTP MCP tool sources (issue 29; ``interop.source_credentials``): a hosted MCP
server that answers 401 without a bearer token (``mcp_guarded_server.py``, its own OS process)
is discovered and called once TeamClaw holds the token, and the token is never shown back in
full, never in the audit trail or the export, and not stored in the clear. Bad credentials are
400s naming the field, and nothing is saved."""

from __future__ import annotations

import asyncio
import json
import re
import socket
import sys
from collections.abc import Iterator

import pytest
from h11 import _abnf as h11_abnf

from capabilities.models import ConfigChange
from capabilities.tool_catalogue import source_headers
from interop import source_credentials
from interop.mcp_sources import catalogue
from interop.models import McpToolSource
from teamclaw.runtime.mcp_tools import McpTools
from tests.processes import Child, free_port, wait_until

pytestmark = pytest.mark.django_db(transaction=True)  # the runtime reads credentials on another thread

TOKEN = "hosted-secret-0123456789abcdef"


@pytest.fixture(scope="module")
def guarded_server(tmp_path_factory) -> Iterator[tuple[str, Child]]:
    port = free_port()
    log = tmp_path_factory.mktemp("mcp") / "server.log"
    child = Child([sys.executable, "tests/interop/mcp_guarded_server.py", str(port), TOKEN], {}, log)
    try:

        def answers() -> bool:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    return True
            except OSError:
                return False

        wait_until(answers, 60, lambda: f"the MCP server to answer\n{child.output()}")
        yield f"http://127.0.0.1:{port}/mcp", child
    finally:
        child.stop()


def credential_changes(name: str) -> list[dict[str, object]]:
    """The audit trail's entries for source ``name``'s credentials, oldest first."""
    key = f"mcp_sources.{name}.credentials"
    return [c.changes[key] for c in ConfigChange.objects.order_by("pk") if key in (c.changes or {})]


@pytest.fixture
def allowed(settings):
    settings.TEAMCLAW = {**settings.TEAMCLAW, "HTTP_EXECUTOR_ALLOWED_HOSTS": ["127.0.0.1"]}


def test_a_hosted_server_that_needs_a_token_works_once_teamclaw_holds_it(
    api, viewer_api, builtin, allowed, guarded_server
):
    url, child = guarded_server
    without = api.post("/api/v1/mcp-sources", {"name": "hosted", "url": url}, format="json").json()
    assert without["state"] == "error" and without["credentials"] == {}
    assert without["error"]  # the server refused the connection (401 without the token)

    given = api.put(f"/api/v1/mcp-sources/{without['id']}/credentials", {"bearer_token": TOKEN}, format="json")
    assert given.status_code == 200, given.content
    source = given.json()
    assert source["state"] == "connected", source["error"]
    assert [t["tool"] for t in source["tools"]] == ["mcp:hosted/shout"]
    assert source["credentials"] == {"Authorization": "…cdef"}
    assert viewer_api.get(f"/api/v1/mcp-sources/{source['id']}").json()["credentials"] == {"Authorization": "…"}

    # The runtime's tool call sends it too (through the lookup the interop app registers).
    (spec,) = catalogue(None)
    answer = asyncio.run(McpTools({}, ["127.0.0.1"], source_headers).run(spec, {"text": "ship it"}, 20))
    assert answer["text"] == "SHIP IT"
    assert "token=ok" in child.output()

    # Audited by name only; not in the export; not in the clear in the database.
    [change] = credential_changes("hosted")
    assert change == {"old": None, "new": ["Authorization"]}
    everything = [
        json.dumps(list(ConfigChange.objects.values()), default=str),
        api.get("/api/v1/config/export?format=json").content.decode(),
        api.get("/api/v1/mcp-sources").content.decode(),
        McpToolSource.objects.get().credentials,
    ]
    assert not any(TOKEN in text or TOKEN[-12:] in text for text in everything)

    # Rotating keeps the names (audited again); an empty body removes them, and 401s come back.
    rotated = api.put(f"/api/v1/mcp-sources/{source['id']}/credentials", {"bearer_token": TOKEN}, format="json")
    assert rotated.status_code == 200
    removed = api.put(f"/api/v1/mcp-sources/{source['id']}/credentials", {}, format="json").json()
    assert removed["credentials"] == {} and removed["state"] == "error"
    assert credential_changes("hosted") == [
        {"old": None, "new": ["Authorization"]},
        {"old": ["Authorization"], "new": ["Authorization"]},
        {"old": ["Authorization"], "new": None},
    ]


def test_credentials_can_come_with_the_registration_as_headers(api, builtin, allowed, guarded_server):
    url, child = guarded_server
    response = api.post(
        "/api/v1/mcp-sources",
        {"name": "hosted2", "url": url, "headers": {"Authorization": f"Bearer {TOKEN}", "X-Team": "blue"}},
        format="json",
    )
    assert response.status_code == 201, response.content
    assert response.json()["state"] == "connected"
    assert response.json()["credentials"] == {"Authorization": "…cdef", "X-Team": "…"}
    assert "x-team=blue" in child.output()


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"headers": {"Host": "evil.example"}}, "headers.Host"),
        ({"headers": {"X-A": "one\r\nX-B: two"}}, "headers.X-A"),
        ({"headers": {"X-A": "中文"}}, "headers.X-A"),
        ({"headers": {"bad name": "x"}}, "headers.bad name"),
        ({"headers": {"x-a": "1", "X-A": "2"}}, "headers.X-A"),
        ({"bearer_token": "t", "headers": {"authorization": "Bearer u"}}, "bearer_token"),
        ({"headers": {f"X-{n}": "v" for n in range(21)}}, "headers"),
    ],
)
def test_bad_credentials_are_refused_naming_the_field_and_nothing_is_saved(api, builtin, allowed, body, field):
    response = api.post("/api/v1/mcp-sources", {"name": "h", "url": "http://127.0.0.1:9/mcp", **body}, format="json")
    assert response.status_code == 400, response.content
    assert field in response.json()["errors"], response.json()
    assert not McpToolSource.objects.exists()


def test_a_stdio_source_takes_no_credentials_and_only_staff_changes_them(api, viewer_api, builtin, allowed):
    stdio = api.post(
        "/api/v1/mcp-sources", {"name": "s", "command": "mcp-server-time", "bearer_token": "x" * 20}, format="json"
    )
    assert stdio.status_code == 400 and "bearer_token" in stdio.json()["errors"]
    source = McpToolSource.objects.create(name="h", transport="http", url="http://127.0.0.1:9/mcp")
    refused = viewer_api.put(f"/api/v1/mcp-sources/{source.pk}/credentials", {"bearer_token": "x"}, format="json")
    assert refused.status_code == 403
    assert api.put("/api/v1/mcp-sources/999/credentials", {}, format="json").status_code == 404
    bad = api.put(f"/api/v1/mcp-sources/{source.pk}/credentials", {"headers": {"Host": "x"}}, format="json")
    assert bad.status_code == 400 and "headers.Host" in bad.json()["errors"]
    assert McpToolSource.objects.get().credentials == ""


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"bearer_token": TOKEN + "\n"}, "bearer_token"),  # ``$`` alone matches before a final line break
        ({"bearer_token": TOKEN + " "}, "bearer_token"),
        ({"headers": {"X-Key": " " + TOKEN}}, "headers.X-Key"),
        ({"headers": {"X-Key": TOKEN + "\n"}}, "headers.X-Key"),
        ({"headers": {"X-Key\n": TOKEN}}, "headers.X-Key\n"),
    ],
)
def test_a_value_the_http_client_would_refuse_is_refused_before_it_can_quote_the_secret(data, field):
    """h11 (under httpx) refuses a header value with a line break or an outer space and its
    error quotes the whole value: stored, the secret would become the source's shown error.
    (The API and the page trim outer white space first; ``check_credentials`` is the rule.)"""
    with pytest.raises(source_credentials.CredentialErrors) as refused:
        source_credentials.check_credentials(data, "http")
    assert list(refused.value.errors) == [field]
    assert TOKEN not in str(refused.value)


@pytest.mark.parametrize("value", ["a", "Bearer x", "a  b", "~!#", TOKEN])
def test_every_value_accepted_is_one_the_http_client_sends(value):
    headers = source_credentials.check_credentials({"headers": {"X-Key": value}}, "http")
    assert re.fullmatch(h11_abnf.field_value, headers["X-Key"])


def test_a_header_name_with_a_line_break_is_refused_through_the_api(api, builtin, allowed):
    body = {"name": "h", "url": "http://127.0.0.1:9/mcp", "headers": {"X-Key\n": "v"}}
    response = api.post("/api/v1/mcp-sources", body, format="json")
    assert response.status_code == 400, response.content
    assert "headers.X-Key\n" in response.json()["errors"]
    assert not McpToolSource.objects.exists()
