"""The test MCP server of ``mcp_http_server.py`` behind a bearer token, as hosted MCP servers
are: ``python tests/interop/mcp_guarded_server.py PORT TOKEN``. A request without
``Authorization: Bearer TOKEN`` is answered 401; each request's headers are printed (names
only, and whether the token matched) so a test can see what TeamClaw sent."""

from __future__ import annotations

import sys
from typing import Any

import uvicorn

sys.path.insert(0, "tests/interop")
from mcp_http_server import server


def guarded(app: Any, token: str) -> Any:
    async def guard(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
            matched = headers.get("authorization") == f"Bearer {token}"
            print(
                f"request {scope['method']} token={'ok' if matched else 'missing'} x-team={headers.get('x-team', '')}",
                flush=True,
            )
            if not matched:
                await send(
                    {"type": "http.response.start", "status": 401, "headers": [(b"content-type", b"text/plain")]}
                )
                await send({"type": "http.response.body", "body": b"token required"})
                return
        await app(scope, receive, send)

    return guard


if __name__ == "__main__":
    app = server.streamable_http_app(streamable_http_path="/mcp")
    uvicorn.run(guarded(app, sys.argv[2]), host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
