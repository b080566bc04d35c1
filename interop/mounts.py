"""Mounting the protocols' ASGI apps beside Django (issue 16): ``teamclaw.asgi`` sends HTTP
requests whose path is one of a mount's prefixes (exactly, or followed by ``/``) to that app
and everything else to Django. What Django's middleware gives its responses, a mounted app
gets from ``ProtocolHeaders`` and ``BodyLimit``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.conf import settings
from django.http.request import split_domain_port, validate_host
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send


class PathMounts:
    """An ASGI app: ``mounts`` ``{path prefix: app}`` for HTTP, ``default`` for the rest.

    The path is not rewritten: a mounted app routes on the full path."""

    def __init__(self, default: ASGIApp | Any, mounts: Mapping[str, ASGIApp | Any]) -> None:
        self.default = default
        self.mounts = dict(mounts)

    def app_for(self, path: str) -> Any:
        """The app that serves ``path``."""
        for prefix, app in self.mounts.items():
            if path == prefix or path.startswith(prefix.rstrip("/") + "/"):
                return app
        return self.default

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        app = self.app_for(scope["path"]) if scope["type"] == "http" else self.default
        if app is not self.default and not host_allowed(scope):
            # what Django answers for its own pages: a Host outside ALLOWED_HOSTS (DNS rebinding)
            body = {"detail": "this host is not served here (ALLOWED_HOSTS)", "errors": {"Host": ["not allowed"]}}
            await JSONResponse(body, status_code=400)(scope, receive, send)
            return
        await app(scope, receive, send)


def host_allowed(scope: Scope) -> bool:
    """True when the request's ``Host`` is one of ``settings.ALLOWED_HOSTS`` (as Django checks
    it for its own pages), or the request names none (an ASGI call without headers)."""
    host = Headers(scope=scope).get("host")
    if host is None:
        return True
    domain, _port = split_domain_port(host)
    return bool(domain) and validate_host(domain, settings.ALLOWED_HOSTS)


PROTOCOL_HEADERS = [
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),
    (b"content-security-policy", b"default-src 'none'; frame-ancestors 'none'"),
]
"""What every response of a mounted protocol app carries (Django's middleware does not see them)."""


class ProtocolHeaders:
    """ASGI middleware adding ``PROTOCOL_HEADERS`` to every HTTP response (JSON and event streams)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                names = {name for name, _ in message.get("headers", [])}
                extra = [(name, value) for name, value in PROTOCOL_HEADERS if name not in names]
                message = {**message, "headers": [*message.get("headers", []), *extra]}
            await send(message)

        await self.app(scope, receive, send_with_headers)


class BodyLimit:
    """ASGI middleware refusing request bodies over ``limit`` bytes: 413 at once when
    ``Content-Length`` says so, else Starlette's ``HTTPException(413)`` from ``receive`` once
    that many bytes arrived (the A2A dispatcher answers it as a JSON-RPC error)."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = Headers(scope=scope).get("content-length", "")
        if length.isdigit() and int(length) > self.limit:
            detail = f"the request body is {int(length):,} bytes; the limit is {self.limit:,}"
            await JSONResponse({"detail": detail, "errors": {}}, status_code=413)(scope, receive, send)
            return
        received = 0

        async def limited() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.limit:
                    raise HTTPException(413)
            return message

        await self.app(scope, limited, send)
