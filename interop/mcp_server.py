"""The MCP server at ``/mcp`` (issue 16): Streamable HTTP with the official ``mcp`` SDK (2.3.0).

**Who calls.** Every HTTP request carries ``Authorization: Bearer <role token>``
(``interop.role_tokens``), issued by hand on the tokens page or through OAuth 2.1
(``interop.mcp_oauth``); a missing, unknown, expired or revoked token, or one whose role is
disabled, is answered ``401`` with ``WWW-Authenticate: Bearer …, resource_metadata="…"``
(where an OAuth client starts) before the SDK sees the request. The caller
then acts as the token's role: a session is bound to the token that opened it (the SDK answers
404 to a request for it with another token).

**Tools** are the capability cards that role may reach through the invoke permission matrix
(PRD §4.7; ``interop.mcp_tools``), read from the global configuration at its current version
(PRD §4.8). ``tools/call`` is an invoke *as that role* through the same path as
``POST /api/v1/invoke`` (``runs.commands.call_anywhere``: the embedded runtime, or a runtime
worker when this process runs none), so the matrices, constraints, budgets and recording apply;
each call is a short task of its own titled after the tool and the token. A refusal or failure
is a tool result with ``isError: true`` whose text starts with the PRD error code
(``permission_denied: ...``; ``invalid_params: ...`` for arguments that fail the card's
``input_schema``, which the MCP spec (2025-11-25, SEP-1303) makes a tool execution error so the
model can correct them); success returns the output as ``structuredContent`` and as JSON text
(``tool_result``). Protocol errors are JSON-RPC errors, as the spec's "Error Handling" says: a
name that is no tool at all (``interop.mcp_tools.is_tool``) is ``-32602`` ``Unknown tool: <name>``
before anything runs or is recorded, and a ``tools/call`` whose ``params`` break the request's
shape (no ``name``, ``arguments`` not an object) is ``-32602`` from the SDK.

**Stateful mode, started lazily.** The SDK's ``StreamableHTTPSessionManager`` needs its
``run()`` task group alive, normally entered in the ASGI lifespan; daphne runs no lifespan, so
the first request to ``/mcp`` starts it on the server's event loop in a task of its own
(``McpEndpoint.ensure_started``), where it stays for the process's life. Stateful, not
stateless, because a stateless server cannot push: ``notifications/tools/list_changed`` needs
the session's standalone GET stream, which only a session has.

**list_changed.** A saved configuration change (PRD §4.8) reaches the endpoint two ways: the
in-process ``capabilities.config`` listener (at once, for changes saved by this process) and a
poll of the config version every ``WATCH_INTERVAL_S`` while sessions are open (changes
saved by another process: a runtime worker, a second web process, ``manage.py``). Then each
open session whose role's tool list really changed since it last saw it (``tools_digest``)
gets one ``notifications/tools/list_changed`` on its GET stream. A session with no GET stream
open then (the SDK keeps no backlog without an event store) is told when it opens one: the
client opens it right after ``initialize``, so a change in between is not lost. The same poll
notices revoked tokens: their sessions are dropped and terminated and their GET streams closed
(the HTTP response completed; a reconnect is then refused with 401).

**Bookkeeping.** A session is tracked (``SessionActivity``) from the ``initialize`` response
that gives it its id, for the token that opened it; only that token's requests touch the record
(another token's request for the session gets the SDK's 404 and changes nothing), and a request
naming an id no session has leaves no record. One token holds at most
``MAX_SESSIONS_PER_TOKEN`` sessions: another ``initialize`` is refused with 429 until one ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import secrets
import time
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import mcp_types as types
from channels.db import database_sync_to_async
from django.conf import settings
from django.db import close_old_connections
from django.utils.translation import gettext as _
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import NotificationOptions, Server
from mcp.server.models import InitializationOptions
from mcp.server.session import ServerSession
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from starlette.requests import Request

from capabilities.config import add_listener, current_version, remove_listener
from capabilities.snapshot import governance_snapshot
from interop import mcp_content, role_tokens
from interop.a2a import base_url
from interop.mcp_elicitation import offer, run_offering_confirmations, supports_elicitation
from interop.mcp_oauth import resource_metadata_url
from interop.mcp_tools import is_tool, tools_digest, tools_for_role
from interop.models import RoleToken
from interop.mounts import read_json_body, request_body_limit
from runs.commands import call_anywhere
from teamclaw.runtime.config import ConfigSnapshot

log = logging.getLogger(__name__)

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

MCP_PATH = "/mcp"
"""Where the endpoint is mounted (``teamclaw.asgi``)."""

WATCH_INTERVAL_S = 2.0
"""How often (s) open sessions look for configuration changes made by other processes and for
revoked tokens."""

STREAM_SETTLE_S = 0.3
"""How long (s) after a GET stream opens the watcher looks whether its session missed a change
(the SDK registers the stream as its response starts)."""

SESSION_IDLE_TIMEOUT_S = 30 * 60.0
"""A session with no request in flight and no GET stream open for this long (s) is closed."""

MAX_SESSIONS_PER_TOKEN = 20
"""Live sessions one role token may hold; a request to open another is refused (HTTP 429, a
JSON-RPC error) until one ends (``DELETE``, idle timeout)."""

STREAM_END_GRACE_S = 0.5
"""How long (s) a dropped session's GET stream is given to end on its own before it is
cancelled and its HTTP response completed here."""

MAX_NAME_SHOWN = 200
"""How many characters of an unknown tool's name an error message repeats."""

MAX_ARGUMENTS_BYTES = 1_000_000
"""Largest ``tools/call`` ``arguments`` (bytes of JSON): the bound ``POST /api/v1/invoke`` puts on
``params``."""

SCOPE_KEY = "teamclaw.mcp_caller"
"""The ASGI scope key that carries the authenticated ``Caller`` to the handlers."""

SERVER_NAME = "teamclaw"
INSTRUCTIONS = (
    "TeamClaw capability system: each tool is a capability card your role token may invoke "
    "(PRD §4.7 invoke permission matrix). A call runs through TeamClaw's runtime as that role: "
    "permissions, constraints and token budgets apply and every call is recorded as a task."
)


@dataclass(frozen=True)
class Caller:
    """Who is calling: the role token's id and name and the role it acts as."""

    token_id: int
    token_name: str
    role: str


def authenticate(secret: str) -> Caller | None:
    """The ``Caller`` for a bearer secret, or None (unknown, malformed, revoked, role disabled).
    Synchronous: reads the database."""
    close_old_connections()
    row = role_tokens.authenticate(secret)
    return Caller(row.pk, row.name, row.role.role) if row else None


def tool_result(body: dict[str, Any] | None, error: dict[str, Any] | None) -> types.CallToolResult:
    """An MCP tool result from ``call_anywhere``'s ``(body, error)``.

    - success (``body["success"]``): ``structuredContent`` is the output (``data``), the text
      its JSON; ``_meta`` has ``teamclaw/task_id``, ``teamclaw/invoke_id``,
      ``teamclaw/latency_ms`` and ``teamclaw/attempts``;
    - a runtime failure: ``isError`` with text ``"<code>: <message>"`` (PRD error code,
      ``teamclaw.runtime.errors.ErrorCode``) and the error's details as JSON; ``_meta`` adds
      ``teamclaw/error`` ``{code, message, details}``;
    - a call that reached no runtime (``error``: no worker answered, a task not running):
      ``isError`` with ``unavailable: <detail>``.
    """
    if error is not None or body is None:
        detail = (error or {}).get("detail") or "the call reached no runtime"
        failure = {"code": "unavailable", "message": detail, "details": (error or {}).get("errors") or {}}
        return _error_result(failure, {})
    meta = {
        "teamclaw/task_id": body.get("task_id"),
        "teamclaw/invoke_id": body.get("invoke_id"),
        "teamclaw/latency_ms": body.get("latency_ms"),
        "teamclaw/attempts": body.get("attempts"),
    }
    if not body.get("success"):
        failure = body.get("error") or {"code": "executor_error", "message": "the call failed", "details": {}}
        return _error_result(failure, meta)
    data = body.get("data")
    text = json.dumps(data, ensure_ascii=False, indent=2)
    return types.CallToolResult(
        content=[types.TextContent(text=text)],
        structured_content=data if isinstance(data, dict) else None,
        is_error=False,
        _meta=meta,
    )


def _error_result(failure: dict[str, Any], meta: dict[str, Any]) -> types.CallToolResult:
    code, message = failure.get("code") or "executor_error", failure.get("message") or ""
    content = [types.TextContent(text=f"{code}: {message}")]
    if failure.get("details"):
        content.append(types.TextContent(text=json.dumps(failure["details"], ensure_ascii=False, indent=2)))
    return types.CallToolResult(
        content=list(content),
        is_error=True,
        _meta={**meta, "teamclaw/error": {"code": code, "message": message, "details": failure.get("details") or {}}},
    )


def refuse_arguments(arguments: dict[str, Any]) -> types.CallToolResult | None:
    """An ``invalid_params`` tool error when ``arguments`` exceed ``MAX_ARGUMENTS_BYTES``, else None."""
    size = len(json.dumps(arguments, ensure_ascii=False).encode("utf-8"))
    if size <= MAX_ARGUMENTS_BYTES:
        return None
    message = f"arguments are {size:,} bytes of JSON; the limit is {MAX_ARGUMENTS_BYTES:,}"
    return _error_result({"code": "invalid_params", "message": message, "details": {}}, {})


def unknown_tool(name: str) -> MCPError:
    """The JSON-RPC error ``-32602`` (invalid params) for a ``tools/call`` of ``name``, which is
    no tool (MCP spec 2025-11-25, tools, "Error Handling": unknown tools are protocol errors);
    ``data`` is ``{"tool": <name>}`` (the name cut to ``MAX_NAME_SHOWN`` characters)."""
    shown = name[:MAX_NAME_SHOWN]
    return MCPError(types.INVALID_PARAMS, _("Unknown tool: %(name)s") % {"name": shown}, data={"tool": shown})


class ToolCatalogue:
    """The global configuration snapshot, reloaded when the config version moved on (PRD §4.8).
    ``snapshot()`` is synchronous (reads the database); call it through ``database_sync_to_async``."""

    def __init__(self) -> None:
        self._snapshot: ConfigSnapshot | None = None

    def snapshot(self) -> ConfigSnapshot:
        """The snapshot at the current config version."""
        close_old_connections()
        version = current_version()
        if self._snapshot is None or self._snapshot.version != version:
            self._snapshot = governance_snapshot(None)
        return self._snapshot


@dataclass
class OpenSession:
    """An initialized MCP session: its caller, the SDK's handle for notifications on its GET
    stream, and the digest of the tool list it last saw or was told changed."""

    session_id: str
    caller: Caller
    handle: ServerSession
    announced: str


@dataclass
class SessionActivity:
    """What the endpoint sees of one session's HTTP requests, from the ``initialize`` response
    that gave it its id (kept apart from ``OpenSession``: the client's GET stream may arrive
    before ``notifications/initialized`` was handled, or the client may never send it)."""

    owner: int
    """The id of the role token that opened the session: only its requests touch this record."""
    in_flight: int = 0
    streams: int = 0
    """GET streams open (the SDK allows one): notifications reach the client only through one."""
    last_active: float = field(default_factory=time.monotonic)
    ended: asyncio.Event = field(default_factory=asyncio.Event)
    """Set when the session is dropped (token revoked): its GET stream is then ended."""


class TeamClawMcpServer(Server[dict[str, Any]]):
    """The SDK's low-level server advertising ``tools.listChanged`` (it defaults to false)."""

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        return super().create_initialization_options(
            notification_options or NotificationOptions(tools_changed=True), experimental_capabilities, extensions
        )


def _caller(ctx: ServerRequestContext[dict[str, Any], Any]) -> Caller:
    request = ctx.request
    caller = request.scope.get(SCOPE_KEY) if isinstance(request, Request) else None
    if not isinstance(caller, Caller):
        raise MCPError(types.INVALID_REQUEST, "this request carries no authenticated role token")
    return caller


def _session_id(ctx: ServerRequestContext[dict[str, Any], Any]) -> str | None:
    request = ctx.request
    return request.headers.get(MCP_SESSION_ID_HEADER) if isinstance(request, Request) else None


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers") or []:
        if key == name:
            return bytes(value).decode("latin-1")
    return None


def origin_allowed(scope: Scope) -> bool:
    """True without an ``Origin`` header (MCP clients send none) or when it is this request's
    own host or a ``CSRF_TRUSTED_ORIGINS`` entry: the MCP spec's DNS-rebinding check for
    browsers (a page elsewhere cannot call ``/mcp`` through its visitor's browser)."""
    origin = _header(scope, b"origin")
    if origin is None:
        return True
    if origin in getattr(settings, "CSRF_TRUSTED_ORIGINS", []):
        return True
    host = _header(scope, b"host") or ""
    return urlsplit(origin).netloc.lower() == host.lower() and bool(host)


async def _plain_response(send: Send, status: int, body: dict[str, Any], headers: list[tuple[bytes, bytes]]) -> None:
    payload = json.dumps(body).encode("utf-8")
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(payload)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": payload})


class McpEndpoint:
    """The ASGI application mounted at ``/mcp``: authenticates, then hands the request to the
    SDK's session manager (started on first use), and keeps the open sessions for
    ``notifications/tools/list_changed``."""

    def __init__(self) -> None:
        self.catalogue = ToolCatalogue()
        self.server = TeamClawMcpServer(
            SERVER_NAME,
            version="1.0",
            title="TeamClaw capability system",
            instructions=INSTRUCTIONS,
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
            on_list_prompts=self._list_prompts,
            on_get_prompt=self._get_prompt,
            on_list_resources=self._list_resources,
            on_list_resource_templates=self._list_resource_templates,
            on_read_resource=self._read_resource,
        )
        self.server.add_notification_handler("notifications/initialized", types.NotificationParams, self._initialized)
        self.manager = StreamableHTTPSessionManager(
            self.server,
            stateless=False,
            session_idle_timeout=SESSION_IDLE_TIMEOUT_S,
            # A backstop only: read_json_body refuses a larger body first, as a JSON-RPC error.
            max_request_body_size=request_body_limit(),
            # Origin is checked here (origin_allowed) against the site's own hosts; the SDK's
            # check would need every host name the operator serves under listed again.
            security_settings=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        )
        self.sessions: dict[str, OpenSession] = {}
        self.activity: dict[str, SessionActivity] = {}
        self._start_lock: asyncio.Lock | None = None
        self._runner: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wake: asyncio.Event | None = None

    # ------------------------------------------------------------------ lifecycle
    async def ensure_started(self) -> None:
        """Start the session manager's task group on this event loop, once (daphne runs no
        ASGI lifespan). Returns when it accepts requests."""
        if self._runner is not None and not self._runner.done():
            return
        if self._start_lock is None:
            self._start_lock = asyncio.Lock()
        async with self._start_lock:
            if self._runner is not None and not self._runner.done():
                return
            started = asyncio.Event()
            self._loop = asyncio.get_running_loop()
            self._wake = asyncio.Event()
            self._runner = self._loop.create_task(self._run(started), name="teamclaw-mcp-sessions")
            waiter = asyncio.ensure_future(started.wait())
            await asyncio.wait([waiter, self._runner], return_when=asyncio.FIRST_COMPLETED)
            if not started.is_set():
                waiter.cancel()
                self._runner.result()  # raises what stopped it
                raise RuntimeError("the MCP session manager stopped while starting")

    async def _run(self, started: asyncio.Event) -> None:
        async with self.manager.run():
            add_listener(self._on_config_change)
            started.set()
            try:
                await self._watch()
            finally:
                remove_listener(self._on_config_change)

    def _on_config_change(self, event: dict[str, Any]) -> None:
        """``capabilities.config`` listener: called after a change commits, on the thread that
        saved it; wakes the watcher on the server's loop."""
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self._wake_watcher)

    def _wake_watcher(self) -> None:
        if self._wake is not None:
            self._wake.set()

    async def _watch(self) -> None:
        assert self._wake is not None
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), WATCH_INTERVAL_S)
            self._wake.clear()
            if not self.sessions and not self.activity:
                continue
            try:
                await self.check_sessions()
            except Exception:  # the watcher must outlive one failed database read
                log.exception("checking the MCP sessions failed")

    # ------------------------------------------------------------------ sessions
    async def check_sessions(self) -> None:
        """Drop revoked and idle sessions; tell each session with its GET stream open whose
        role's tool list differs from the one it last saw (``notifications/tools/list_changed``).
        A session without a GET stream is told once it opens one."""
        token_ids = {s.caller.token_id for s in self.sessions.values()} | {a.owner for a in self.activity.values()}
        active = await database_sync_to_async(self._active_tokens)(token_ids)
        now = time.monotonic()
        for session_id, seen in list(self.activity.items()):
            if seen.owner not in active:
                await self._end(session_id)
            elif seen.in_flight == 0 and now - seen.last_active > SESSION_IDLE_TIMEOUT_S:
                self._drop(session_id)
        for session in list(self.sessions.values()):
            if session.caller.token_id not in active:
                await self._end(session.session_id)
        listening = [s for s in self.sessions.values() if self._streams(s.session_id) > 0]
        if not listening:
            return
        snapshot = await database_sync_to_async(self.catalogue.snapshot)()
        digests: dict[str, str] = {}
        for session in listening:
            role = session.caller.role
            if role not in digests:
                digests[role] = tools_digest(tools_for_role(snapshot, role))
            if digests[role] != session.announced:
                session.announced = digests[role]
                await session.handle.send_notification(types.ToolListChangedNotification())

    @staticmethod
    def _active_tokens(token_ids: set[int]) -> set[int]:
        close_old_connections()
        rows = RoleToken.objects.filter(pk__in=token_ids, revoked_at__isnull=True, role__enabled=True)
        return set(rows.values_list("pk", flat=True))

    def _streams(self, session_id: str) -> int:
        seen = self.activity.get(session_id)
        return seen.streams if seen else 0

    def live_sessions(self, token_id: int) -> int:
        """How many sessions the token ``token_id`` opened that are still tracked."""
        return sum(1 for seen in self.activity.values() if seen.owner == token_id)

    async def _end(self, session_id: str) -> None:
        """Drop a session whose token was revoked and terminate it in the SDK too (its GET
        stream ends, its memory is released; a later request for it gets 404)."""
        self._drop(session_id)
        transport = self.manager._server_instances.get(session_id)  # noqa: SLF001 - no public way
        if transport is not None:
            try:
                await transport.terminate()
            except Exception:
                log.exception("terminating MCP session %s failed", session_id[:64])

    def _drop(self, session_id: str) -> None:
        self.sessions.pop(session_id, None)
        seen = self.activity.pop(session_id, None)
        if seen is not None:
            seen.ended.set()

    # ------------------------------------------------------------------ handlers
    async def _initialized(self, ctx: ServerRequestContext[dict[str, Any], Any], params: Any) -> None:
        session_id = _session_id(ctx)
        if session_id is None:
            return
        caller = _caller(ctx)
        snapshot = await database_sync_to_async(self.catalogue.snapshot)()
        digest = tools_digest(tools_for_role(snapshot, caller.role))
        self.sessions[session_id] = OpenSession(session_id, caller, ctx.session, digest)

    async def _list_tools(
        self, ctx: ServerRequestContext[dict[str, Any], Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        caller = _caller(ctx)
        snapshot = await database_sync_to_async(self.catalogue.snapshot)()
        tools = tools_for_role(snapshot, caller.role)
        session = self.sessions.get(_session_id(ctx) or "")
        if session is not None:
            session.announced = tools_digest(tools)
        return types.ListToolsResult(tools=tools)

    async def _call_tool(
        self, ctx: ServerRequestContext[dict[str, Any], Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        caller = _caller(ctx)
        snapshot = await database_sync_to_async(self.catalogue.snapshot)()
        if not is_tool(snapshot, params.name):
            raise unknown_tool(params.name)
        arguments = dict(params.arguments or {})
        refused = refuse_arguments(arguments)
        if refused is not None:
            return refused
        description = f"MCP {params.name} (token {caller.token_name!r})"
        if supports_elicitation(ctx.session):
            # Unique, so the call finds its own task's confirmations (interop.mcp_elicitation).
            description += f" call {secrets.token_hex(4)}"
        payload = {
            "capability": params.name,
            "params": arguments,
            "from_role": caller.role,
            "priority": "normal",
            "description": description,
        }
        if not supports_elicitation(ctx.session):
            body, error = await call_anywhere("invoke", payload)
            return tool_result(body, error)
        decided_by = f"token:{caller.token_name}"

        async def ask(row: Any) -> None:
            await offer(ctx.session, row, ctx.request_id, decided_by)

        body, error = await run_offering_confirmations(call_anywhere("invoke", payload), description, ask)
        return tool_result(body, error)

    # ------------------------------------------------------------------ prompts and resources
    async def _list_prompts(
        self, ctx: ServerRequestContext[dict[str, Any], Any], params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        return mcp_content.list_prompts(_caller(ctx).role)

    async def _get_prompt(
        self, ctx: ServerRequestContext[dict[str, Any], Any], params: types.GetPromptRequestParams
    ) -> types.GetPromptResult:
        return await database_sync_to_async(mcp_content.get_prompt)(_caller(ctx).role, params.name, params.arguments)

    async def _list_resources(
        self, ctx: ServerRequestContext[dict[str, Any], Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        cursor = params.cursor if params is not None else None
        return await database_sync_to_async(mcp_content.list_resources)(_caller(ctx).token_id, cursor)

    async def _list_resource_templates(
        self, ctx: ServerRequestContext[dict[str, Any], Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        return mcp_content.resource_templates()

    async def _read_resource(
        self, ctx: ServerRequestContext[dict[str, Any], Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        return await database_sync_to_async(mcp_content.read_resource)(_caller(ctx).token_id, str(params.uri))

    # ------------------------------------------------------------------ ASGI
    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        if not origin_allowed(scope):
            await _plain_response(send, 403, {"detail": "this Origin may not call /mcp", "errors": {}}, [])
            return
        caller = await _authenticated(scope, send)
        if caller is None:
            return
        if scope.get("method") == "POST":
            # The one bounded parser first: a body it refuses is a -32700 under HTTP 400, as the
            # SDK answers one that is not JSON at all (413 past the limit).
            read = await read_json_body(scope, receive, send, limit=request_body_limit(), error_status=400)
            if read is None:
                return
            receive = read[1]
        await self.ensure_started()
        scope = dict(scope)
        scope[SCOPE_KEY] = caller
        # The SDK binds a session to the credential that opened it (one token, one owner).
        scope["user"] = AuthenticatedUser(
            AccessToken(token=f"role-token:{caller.token_id}", client_id=f"role-token:{caller.token_id}", scopes=[])
        )
        session_id = _header(scope, MCP_SESSION_ID_HEADER.lower().encode())
        method = scope.get("method")
        # Only the token that opened a session touches its record: another token's request for
        # it is refused by the SDK (404) and changes nothing here; an id no session has
        # (random, expired) leaves no record either.
        seen = self.activity.get(session_id) if session_id else None
        if seen is not None and seen.owner != caller.token_id:
            seen = None
        if session_id is None and method == "POST" and self.live_sessions(caller.token_id) >= MAX_SESSIONS_PER_TOKEN:
            await _too_many_sessions(send)
            return
        await self._serve(scope, receive, send, caller, seen)

    async def _serve(
        self, scope: Scope, receive: Receive, send: Send, caller: Caller, seen: SessionActivity | None
    ) -> None:
        """Hand the request to the SDK, keeping the session's record (``seen``: the caller's own
        session, or None) and recording the session an ``initialize`` response opens."""
        session_id = _header(scope, MCP_SESSION_ID_HEADER.lower().encode())
        method = scope.get("method")
        if seen is not None:
            seen.in_flight += 1
            if method == "GET":
                receive = _ending_when(seen.ended, receive)
                seen.streams += 1
                # Once the SDK has the stream registered, catch up on a change it missed.
                asyncio.get_running_loop().call_later(STREAM_SETTLE_S, self._wake_watcher)
        status: list[int] = []
        finished: list[bool] = []

        async def watched_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                status.append(int(message["status"]))
                opened = _message_header(message, MCP_SESSION_ID_HEADER.lower().encode())
                if session_id is None and opened and opened not in self.activity:
                    # A new session (the initialize response): tracked from now, for its token.
                    self.activity[opened] = SessionActivity(owner=caller.token_id)
            elif message["type"] == "http.response.body" and not message.get("more_body", False):
                finished.append(True)
            await send(message)

        try:
            if seen is not None and method == "GET":
                await _until_ended(self.manager.handle_request(scope, receive, watched_send), seen.ended)
                if status and not finished:
                    # The stream was cut short: complete the HTTP response so the client sees it end.
                    await send({"type": "http.response.body", "body": b"", "more_body": False})
            else:
                await self.manager.handle_request(scope, receive, watched_send)
        finally:
            if seen is not None:
                seen.in_flight -= 1
                seen.last_active = time.monotonic()
                if method == "GET":
                    seen.streams -= 1
                if method == "DELETE" or status[:1] == [404]:
                    self._drop(str(session_id))


async def _authenticated(scope: Scope, send: Send) -> Caller | None:
    """The request's ``Caller``, or None after answering 401 with ``WWW-Authenticate: Bearer``."""
    secret = role_tokens.bearer_secret(_header(scope, b"authorization"))
    caller = await database_sync_to_async(authenticate)(secret) if secret else None
    if caller is None:
        reason = "invalid_token" if secret else "missing_token"
        detail = "a valid role token is required: Authorization: Bearer <token> (or connect through OAuth)"
        challenge = challenge_header(scope, reason if secret else None).encode()
        await _plain_response(
            send,
            401,
            {"detail": detail, "errors": {"Authorization": [reason.replace("_", " ")]}},
            [(b"www-authenticate", challenge)],
        )
        return None
    return caller


def challenge_header(scope: Scope, error: str | None) -> str:
    """``WWW-Authenticate`` of a 401 from ``/mcp``: Bearer, the ``error`` when a token was sent,
    and where the protected-resource metadata is (MCP authorization, RFC 9728 §5.1), so an OAuth
    client finds the authorization server (``interop.mcp_oauth``)."""
    parts = ['realm="teamclaw"']
    if error:
        parts.append(f'error="{error}"')
    base = base_url(Request(scope))
    if base is not None:
        parts.append(f'resource_metadata="{resource_metadata_url(base)}"')
    return "Bearer " + ", ".join(parts)


async def _too_many_sessions(send: Send) -> None:
    message = (
        f"this role token already has {MAX_SESSIONS_PER_TOKEN} open MCP sessions; "
        "end one (DELETE /mcp with its mcp-session-id) or let one time out before opening another"
    )
    error = {"code": types.INVALID_REQUEST, "message": message}
    await _plain_response(send, 429, {"jsonrpc": "2.0", "id": None, "error": error}, [])


def _message_header(message: Message, name: bytes) -> str | None:
    for key, value in message.get("headers") or []:
        if bytes(key).lower() == name:
            return bytes(value).decode("latin-1")
    return None


async def _until_ended(handling: Awaitable[None], ended: asyncio.Event) -> None:
    """Run ``handling`` (a GET stream); once ``ended`` is set give it ``STREAM_END_GRACE_S`` to
    finish (``_ending_when`` told it the client left), then cancel it."""
    task = asyncio.ensure_future(handling)
    closing = asyncio.ensure_future(ended.wait())
    try:
        await asyncio.wait([task, closing], return_when=asyncio.FIRST_COMPLETED)
        if not task.done():
            await asyncio.wait([task], timeout=STREAM_END_GRACE_S)
        if not task.done():
            task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    finally:
        closing.cancel()
        if not task.done():
            task.cancel()


def _ending_when(ended: asyncio.Event, receive: Receive) -> Receive:
    """``receive`` that also reports ``http.disconnect`` once ``ended`` is set, so a streaming
    response (the session's GET stream) ends when its session is dropped."""

    async def racing_receive() -> Message:
        closing = asyncio.ensure_future(ended.wait())
        incoming = asyncio.ensure_future(receive())
        done, _ = await asyncio.wait([closing, incoming], return_when=asyncio.FIRST_COMPLETED)
        if incoming in done:
            closing.cancel()
            return incoming.result()
        incoming.cancel()
        return {"type": "http.disconnect"}

    return racing_receive


mcp_application = McpEndpoint()
"""The one MCP endpoint of this process (``teamclaw.asgi`` mounts it at ``MCP_PATH``)."""
