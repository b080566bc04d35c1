"""Mounting the protocols' ASGI apps beside Django (issue 16): ``teamclaw.asgi`` sends HTTP
requests whose path is one of a mount's prefixes (exactly, or followed by ``/``) to that app
and everything else to Django. What Django's middleware gives its responses, a mounted app
gets from ``ProtocolHeaders``; what DRF's parser does for the API, a JSON-RPC endpoint gets
from ``read_json_body`` / ``JsonRpcBody`` (the same bounded parser, its refusals as
JSON-RPC parse errors)."""

from __future__ import annotations

import codecs
from collections.abc import Mapping
from typing import Any

from django.conf import settings
from django.http.request import split_domain_port, validate_host
from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from teamclaw.strict_json import JsonRefused, loads, too_large_message
from teamclaw.whole_numbers import whole_number_or_none


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


JSON_BODY_SCOPE_KEY = "teamclaw.json_body"
"""Where ``JsonRpcBody`` leaves the parsed body on the scope for the app inside."""

PARSE_ERROR = -32700
"""JSON-RPC 2.0 §5.1 "Parse error: invalid JSON was received by the server. An error occurred
on the server while parsing the JSON text." A body past the parser's limits (size, depth:
RFC 8259 §9 lets a parser set both) is one the server could not parse, so it gets this code
and not -32600 (Invalid Request), which says the text parsed but is not a Request object:
nothing about the object is known when it was never built."""


def request_body_limit() -> int:
    """The largest request body a mounted protocol app reads (bytes): Django's
    ``DATA_UPLOAD_MAX_MEMORY_SIZE``, the REST API's limit too, read per request."""
    return int(settings.DATA_UPLOAD_MAX_MEMORY_SIZE)


def parse_error(message: str) -> dict[str, Any]:
    """The JSON-RPC 2.0 response to a body that could not be parsed (``id`` is null then)."""
    return {"jsonrpc": "2.0", "id": None, "error": {"code": PARSE_ERROR, "message": f"Parse error: {message}"}}


async def read_json_body(
    scope: Scope, receive: Receive, send: Send, *, limit: int, error_status: int
) -> tuple[Any, Receive] | None:
    """Read a JSON-RPC POST body whole and parse it with the one bounded parser
    (``teamclaw.strict_json.loads``, at most ``limit`` bytes and ``MAX_DEPTH`` levels).

    Returns ``(document, receive)``: the parsed body and a ``receive`` that hands the same
    bytes on to the protocol's SDK. Returns None when it answered the request itself: with
    a JSON-RPC parse error (-32700, ``parse_error``) under HTTP 413 for a body over ``limit``
    (at once when ``Content-Length`` says so, else once that many bytes arrived), under
    ``error_status`` for anything else the parser refuses; or nothing when the client went
    away."""
    length = whole_number_or_none(Headers(scope=scope).get("content-length", ""))
    if length is not None and length > limit:
        await JSONResponse(parse_error(too_large_message(length, limit)), status_code=413)(scope, receive, send)
        return None
    chunks: list[bytes] = []
    received = 0
    more = True
    while more and received <= limit:
        message = await receive()
        if message["type"] != "http.request":
            return None  # the client went away
        chunk = message.get("body", b"")
        chunks.append(chunk)
        received += len(chunk)
        more = message.get("more_body", False)
    # One leading BOM is ignored (``loads``, RFC 8259 §8.1); the SDK gets the body without it.
    raw = b"".join(chunks).removeprefix(codecs.BOM_UTF8)
    try:
        document = loads(raw, max_bytes=limit)
    except JsonRefused as exc:
        status = 413 if exc.reason == "too_large" else error_status
        await JSONResponse(parse_error(str(exc)), status_code=status)(scope, receive, send)
        return None
    replayed = False

    async def replay() -> Message:
        nonlocal replayed
        if not replayed:
            replayed = True
            return {"type": "http.request", "body": raw, "more_body": False}
        return dict(await receive())

    return document, replay


class JsonRpcBody:
    """ASGI middleware for a JSON-RPC endpoint (A2A): every POST body goes through
    ``read_json_body`` (at most ``request_body_limit()`` bytes; a parse error under
    ``error_status``), and the app inside gets the same bytes and the parsed document in
    ``scope[JSON_BODY_SCOPE_KEY]``. Other methods pass as they are."""

    def __init__(self, app: ASGIApp, *, error_status: int) -> None:
        self.app = app
        self.error_status = error_status

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        limit = request_body_limit()
        read = await read_json_body(scope, receive, send, limit=limit, error_status=self.error_status)
        if read is None:
            return
        document, replay = read
        await self.app({**scope, JSON_BODY_SCOPE_KEY: document}, replay, send)
