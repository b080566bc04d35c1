"""One rule for the text of JSON at every entry point (``teamclaw.strict_json.loads``): a string
or key holding an unpaired surrogate (the escape ``\\ud800``, which no encoder, database or
renderer can store) is refused naming where it is, and one leading UTF-8 BOM is ignored
(RFC 8259 §8.1). Sent through the real entry points: Django's test clients for REST and the
config import, the ASGI application for /a2a and /mcp."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from interop import role_tokens
from interop.mcp_server import McpEndpoint
from tests.interop.test_mcp_sessions import INITIALIZE
from tests.teamclaw.test_input_limits import post_rpc

SURROGATE_ID = '{"jsonrpc": "2.0", "id": "\\ud800", "method": "ping"}'
SURROGATE_KEY = '{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"\\udc00": 1}}'
PING = '{"jsonrpc": "2.0", "id": 7, "method": "ping"}'
BOM = "\ufeff"


def rpc_error(response) -> dict:
    assert response.headers["content-type"].startswith("application/json"), (response.status_code, response.text)
    return response.json().get("error") or {}


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(("path", "status"), [("/mcp", 400), ("/a2a", 200)])
def test_json_rpc_refuses_an_unpaired_surrogate_as_a_parse_error(builtin, path, status):
    secret = role_tokens.issue("main", "client").secret
    for body, where in ((SURROGATE_ID, "id"), (SURROGATE_KEY, "params")):
        response = post_rpc(path, body, secret)
        assert response.status_code == status, response.text[:300]
        error = rpc_error(response)
        assert error["code"] == -32700, error
        assert f"{where} holds an unpaired surrogate" in error["message"]


@pytest.mark.django_db(transaction=True)
def test_json_rpc_ignores_a_leading_bom(builtin):
    """/a2a answers a request sent with a BOM as without; on /mcp an initialize sent with a
    BOM opens a session (a fresh endpoint on one event loop, as
    tests/interop/test_mcp_sessions.py drives it: its SDK session manager runs once)."""
    a2a = role_tokens.issue("main", "client").secret
    plain = post_rpc("/a2a", PING, a2a)
    with_bom = post_rpc("/a2a", BOM + PING, a2a)
    assert with_bom.status_code == plain.status_code, with_bom.text[:300]
    assert rpc_error(with_bom).get("code") != -32700, with_bom.text[:300]
    assert with_bom.json() == plain.json()
    secret = role_tokens.issue("pm", "client").secret
    body = (BOM + json.dumps(INITIALIZE)).encode()

    sent: list[dict[str, Any]] = []

    async def scenario() -> None:
        pending = [body]

        async def receive() -> dict[str, Any]:
            if pending:
                return {"type": "http.request", "body": pending.pop(), "more_body": False}
            await asyncio.Event().wait()  # the client stays until the answer is in
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)

        await asyncio.wait_for(McpEndpoint()(mcp_scope(secret), receive, send), 5)

    asyncio.run(scenario())
    start = next(m for m in sent if m["type"] == "http.response.start")
    answer = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    assert start["status"] == 200, answer[:300]
    assert b"-32700" not in answer
    assert any(key.lower() == b"mcp-session-id" for key, _ in start["headers"])


def mcp_scope(secret: str) -> dict[str, Any]:
    """An ASGI scope of a POST to /mcp as a JSON-RPC client sends it."""
    headers = {
        "authorization": f"Bearer {secret}",
        "accept": "application/json, text/event-stream",
        "content-type": "application/json",
        "host": "testserver",
    }
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/mcp",
        "raw_path": b"/mcp",
        "root_path": "",
        "query_string": b"",
        "headers": [(k.encode(), v.encode()) for k, v in headers.items()],
        "server": ("testserver", 80),
        "client": ("127.0.0.1", 1234),
    }


def test_rest_and_config_import_read_a_bom_alike_and_name_a_surrogate(api, builtin):
    exported = api.get("/api/v1/config/export", {"format": "json"}).content.decode()
    document = json.dumps(json.loads(exported))
    imported = api.post(
        "/api/v1/config/import?dry_run=true", data=(BOM + document).encode(), content_type="application/json"
    )
    assert imported.status_code == 200, imported.content[:300]
    rest = api.generic("POST", "/api/v1/tasks", BOM + '{"workflow": "nope"}', content_type="application/json")
    assert rest.status_code == 400
    assert "JSON parse error" not in rest.json()["detail"]  # read, then refused for the workflow
    surrogate = document[:-1] + ', "note": "\\ud800"}'
    refused = api.post("/api/v1/config/import?dry_run=true", data=surrogate.encode(), content_type="application/json")
    assert refused.status_code == 400, refused.content[:300]
    assert "note holds an unpaired surrogate" in json.dumps(refused.json())
