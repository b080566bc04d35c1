"""The MCP endpoint's session bookkeeping, in process (raw ASGI calls on one event loop): only
the token that opened a session ends it, a revoked token's GET stream really ends (even for a
session that never sent ``notifications/initialized``), one token holds at most
``MAX_SESSIONS_PER_TOKEN`` sessions, and requests for sessions that do not exist leave nothing
behind."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from interop import mcp_server, role_tokens
from interop.mcp_server import McpEndpoint

pytestmark = pytest.mark.django_db(transaction=True)

VERSION = HANDSHAKE_PROTOCOL_VERSIONS[-1]

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": VERSION, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}


class Exchange:
    """One HTTP request to the endpoint: what it sent back, and a way to hang up."""

    def __init__(self, app: McpEndpoint, method: str, secret: str, body: Any = None, **headers: str) -> None:
        self.messages: list[dict[str, Any]] = []
        self.hangup = asyncio.Event()
        raw = json.dumps(body).encode() if body is not None else b""
        pending = [raw]
        all_headers = {
            "authorization": f"Bearer {secret}",
            "accept": "application/json, text/event-stream",
            "content-type": "application/json",
            "host": "testserver",
            **headers,
        }
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": method,
            "scheme": "http",
            "path": "/mcp",
            "raw_path": b"/mcp",
            "root_path": "",
            "query_string": b"",
            "headers": [(k.replace("_", "-").encode(), v.encode()) for k, v in all_headers.items()],
            "server": ("testserver", 80),
            "client": ("127.0.0.1", 1234),
        }

        async def receive() -> dict[str, Any]:
            if pending:
                return {"type": "http.request", "body": pending.pop(), "more_body": False}
            await self.hangup.wait()
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            self.messages.append(message)

        self.task = asyncio.ensure_future(app(scope, receive, send))

    @property
    def status(self) -> int | None:
        starts = [m for m in self.messages if m["type"] == "http.response.start"]
        return int(starts[0]["status"]) if starts else None

    def header(self, name: str) -> str | None:
        for m in self.messages:
            if m["type"] == "http.response.start":
                for key, value in m["headers"]:
                    if key.decode().lower() == name:
                        return str(value.decode())
        return None

    @property
    def finished(self) -> bool:
        bodies = [m for m in self.messages if m["type"] == "http.response.body"]
        return bool(bodies) and not bodies[-1].get("more_body", False)

    async def done(self, timeout: float = 5.0) -> Exchange:
        await asyncio.wait_for(self.task, timeout)
        self.hangup.set()
        return self


async def initialize(app: McpEndpoint, secret: str) -> str:
    opened = await Exchange(app, "POST", secret, INITIALIZE).done()
    assert opened.status == 200, opened.messages
    session_id = opened.header("mcp-session-id")
    assert session_id
    return session_id


def headers_of(session_id: str) -> dict[str, str]:
    return {"mcp_session_id": session_id, "mcp_protocol_version": VERSION}


@pytest.fixture
def tokens(builtin):
    return role_tokens.issue("pm", "victim"), role_tokens.issue("pm", "attacker")


def test_another_token_cannot_end_a_session_only_its_owner_can(tokens):
    victim, attacker = tokens

    async def scenario() -> None:
        app = McpEndpoint()
        session_id = await initialize(app, victim.secret)
        assert app.activity[session_id].owner == victim.row.pk
        for method in ("DELETE", "GET", "POST"):
            body = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"} if method == "POST" else None
            refused = await Exchange(app, method, attacker.secret, body, **headers_of(session_id)).done()
            assert refused.status == 404, (method, refused.messages)
        assert session_id in app.activity and not app.activity[session_id].ended.is_set()
        ended = await Exchange(app, "DELETE", victim.secret, **headers_of(session_id)).done()
        assert ended.status == 200
        assert session_id not in app.activity

    asyncio.run(scenario())


def test_a_revoked_tokens_get_stream_ends_even_without_notifications_initialized(tokens, monkeypatch):
    victim, _ = tokens
    monkeypatch.setattr(mcp_server, "WATCH_INTERVAL_S", 0.2)

    async def scenario() -> None:
        app = McpEndpoint()
        session_id = await initialize(app, victim.secret)  # and never notifications/initialized
        assert session_id not in app.sessions
        stream = Exchange(app, "GET", victim.secret, **headers_of(session_id))
        await asyncio.sleep(0.5)
        assert stream.status == 200 and not stream.task.done()
        await sync_to_async(role_tokens.revoke)(victim.row.pk)
        await stream.done(timeout=3.0)
        assert stream.finished, stream.messages[-1:]
        assert session_id not in app.activity
        again = await Exchange(app, "GET", victim.secret, **headers_of(session_id)).done()
        assert again.status == 401

    asyncio.run(scenario())


def test_one_token_holds_at_most_the_session_cap(tokens, monkeypatch):
    victim, attacker = tokens
    monkeypatch.setattr(mcp_server, "MAX_SESSIONS_PER_TOKEN", 2)

    async def scenario() -> None:
        app = McpEndpoint()
        first = await initialize(app, victim.secret)
        await initialize(app, victim.secret)
        refused = await Exchange(app, "POST", victim.secret, INITIALIZE).done()
        assert refused.status == 429
        body = json.loads(b"".join(m.get("body", b"") for m in refused.messages))
        assert body["error"]["code"] == -32600 and "2 open MCP sessions" in body["error"]["message"]
        await initialize(app, attacker.secret)  # another token's sessions count apart
        await Exchange(app, "DELETE", victim.secret, **headers_of(first)).done()
        await initialize(app, victim.secret)

    asyncio.run(scenario())


def test_requests_for_sessions_that_do_not_exist_leave_no_record(tokens):
    victim, _ = tokens

    async def scenario() -> None:
        app = McpEndpoint()
        for n in range(5):
            bogus = {"mcp_session_id": f"random-{n}", "mcp_protocol_version": "bogus"}
            ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
            answered = await Exchange(app, "POST", victim.secret, ping, **bogus).done()
            assert answered.status in (400, 404)
        assert app.activity == {}

    asyncio.run(scenario())
