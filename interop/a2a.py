"""The team as an A2A agent (issue 16): the agent card and the JSON-RPC binding, built on the
official ``a2a-sdk`` (1.3, A2A protocol 1.0) server pieces and mounted beside Django.

- ``GET /.well-known/agent-card.json`` (public): the card (``interop.a2a_card``), with the
  endpoint URL of the host the request came to (one of ``ALLOWED_HOSTS``).
- ``POST /a2a`` (``Authorization: Bearer <role token>``; 401 without a valid one): JSON-RPC
  2.0 with A2A 1.0's methods, the ones the SDK's client sends: ``SendMessage``,
  ``SendStreamingMessage`` (Server-Sent Events), ``GetTask``, ``CancelTask``,
  ``SubscribeToTask``, ``ListTasks``; A2A 0.3's ``message/send``, ``message/stream``,
  ``tasks/get``, ``tasks/cancel``... are taken too (the SDK's compatibility adapter).

The SDK does the protocol: the dispatcher (``JsonRpcDispatcher`` through
``create_jsonrpc_routes``), the request handler (``DefaultRequestHandler`` with its
active-task registry and event queues) and the task manager. TeamClaw supplies:

- ``TeamExecutor`` (the SDK's ``AgentExecutor``): a message starts a product task
  (``interop.a2a_tasks.start``), then the executor follows the task's record (every
  ``POLL_S``) and publishes status and artifact updates until the task ends or waits for an
  operator (``input-required``). The task runs in whichever runtime worker claims it
  (docs/architecture.md §3); following the record works from any web process.
- ``ProductTaskStore`` (the SDK's ``TaskStore``): A2A tasks are product tasks; the state and
  artifacts always come from the product (``interop.a2a_tasks.a2a_task``), the SDK's history
  is kept on ``interop.A2ATask``. A caller sees only the tasks its role started.
- ``TeamRequestHandler``: a message to an ``input-required`` task first answers the pending
  operator input (refusals are JSON-RPC errors and change nothing); a cancel terminates the
  product task (PRD §4.6 ``terminated``) wherever it runs.

Daphne does not run the ASGI lifespan protocol, so the Starlette app and its handler are made
on the first request (``A2AApplication``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator
from typing import Any

from a2a.auth.user import User
from a2a.server.agent_execution import AgentExecutor, RequestContext, SimpleRequestContextBuilder
from a2a.server.context import ServerCallContext
from a2a.server.events import Event, EventQueue
from a2a.server.id_generator import IDGenerator, IDGeneratorContext
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_jsonrpc_routes
from a2a.server.routes.common import DefaultServerCallContextBuilder
from a2a.server.tasks import TaskStore
from a2a.types.a2a_pb2 import (
    CancelTaskRequest,
    ListTasksRequest,
    ListTasksResponse,
    Message,
    SendMessageRequest,
    SubscribeToTaskRequest,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)
from a2a.utils.errors import TaskNotFoundError, UnsupportedOperationError
from channels.db import database_sync_to_async
from django.conf import settings
from django.db import close_old_connections
from django.http.request import split_domain_port, validate_host
from django.utils.translation import gettext as _
from starlette.applications import Starlette
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from interop import a2a_tasks
from interop.a2a_card import CARD_PATH, RPC_PATH, card_document, handler_card
from interop.a2a_tasks import Caller, TaskView
from interop.models import A2ATask, RoleToken
from interop.mounts import JSON_BODY_SCOPE_KEY, JsonRpcBody, ProtocolHeaders
from interop.role_tokens import authenticate, bearer_secret
from monitoring.models import Task as ProductTask
from teamclaw.runtime.messages import new_id

A2A_PATHS = (CARD_PATH, RPC_PATH)
"""The path prefixes ``teamclaw.asgi`` routes here."""
POLL_S = 0.2
"""How often (s) the executor reads a followed task's record."""
TOKEN_CHECK_S = 1.0
"""How often (s) a followed task checks that the role token that opened the stream is still
active (not revoked, its role enabled); once it is not, the stream ends."""
INTERRUPTED_RELEASE_S = 300.0
"""A task parked in ``input-required`` is released from the SDK's registry after this many
seconds idle (a later message takes it up again from the store)."""
FINAL_STATES = frozenset(
    {
        TaskState.TASK_STATE_COMPLETED,
        TaskState.TASK_STATE_FAILED,
        TaskState.TASK_STATE_CANCELED,
        TaskState.TASK_STATE_REJECTED,
    }
)
PAUSE_STATES = frozenset({TaskState.TASK_STATE_INPUT_REQUIRED, TaskState.TASK_STATE_AUTH_REQUIRED})
CALLER_SCOPE_KEY = "teamclaw.a2a_caller"


class RoleTokenUser(User):
    """The SDK's view of the caller: a role token, named ``role:<role>``."""

    def __init__(self, caller: Caller) -> None:
        self.caller = caller

    @property
    def is_authenticated(self) -> bool:
        return True

    @property
    def user_name(self) -> str:
        return f"role:{self.caller.role}"


def caller_of(context: ServerCallContext | None) -> Caller:
    """The role token a call came with (the auth middleware let nothing else through).

    Raises TaskNotFoundError for a context without one (nothing is anyone's then)."""
    user = context.user if context is not None else None
    if not isinstance(user, RoleTokenUser):
        raise TaskNotFoundError
    return user.caller


class CallerContextBuilder(DefaultServerCallContextBuilder):
    """Puts the authenticated role token (set on the scope by ``RoleTokenAuth``) in the call context."""

    def build_user(self, request: Request) -> User:
        caller = request.scope.get(CALLER_SCOPE_KEY)
        return RoleTokenUser(caller) if isinstance(caller, Caller) else super().build_user(request)


class ProductIds(IDGenerator):
    """New A2A task ids are product task ids (``teamclaw.runtime.messages.new_id``)."""

    def generate(self, context: IDGeneratorContext) -> str:
        return new_id()


class ProductTaskStore(TaskStore):
    """The SDK's task store over the product's tasks (module docstring)."""

    async def save(self, task: Task, context: ServerCallContext) -> None:
        await database_sync_to_async(a2a_tasks.save_document)(task, caller_of(context))

    async def get(self, task_id: str, context: ServerCallContext) -> Task | None:
        caller = caller_of(context)
        return await database_sync_to_async(_owned_task)(task_id, caller)

    async def list(self, params: ListTasksRequest, context: ServerCallContext) -> ListTasksResponse:
        caller = caller_of(context)
        size = params.page_size if params.HasField("page_size") and params.page_size else 50
        tasks = await database_sync_to_async(_listed)(caller, params.context_id, min(size, 100))
        if params.status:
            tasks = [t for t in tasks if t.status.state == params.status]
        return ListTasksResponse(tasks=tasks, page_size=len(tasks), total_size=len(tasks))

    async def delete(self, task_id: str, context: ServerCallContext) -> None:
        raise UnsupportedOperationError(message=_("tasks are part of the team's record and are not deleted"))


def _owned_task(task_id: str, caller: Caller) -> Task | None:
    row = a2a_tasks.owned(task_id, caller)
    return a2a_tasks.a2a_task(row) if row is not None else None


def _listed(caller: Caller, context_id: str, limit: int) -> list[Task]:
    rows = A2ATask.objects.select_related("task").filter(role=caller.role)
    if context_id:
        rows = rows.filter(context_id=context_id)
    return [a2a_tasks.a2a_task(row) for row in rows[:limit]]


class TeamExecutor(AgentExecutor):
    """Runs an A2A request as a product task and follows it (module docstring)."""

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        """A new task: start it and publish it (``submitted``); a follow-up was answered by the
        handler already. Then follow the task until it ends or waits for an input (``follow``).

        Raises InvalidRequestError / InvalidParamsError (``a2a_tasks.start``) before anything
        is published, so the SDK answers the request with that error."""
        task_id, context_id = str(context.task_id), str(context.context_id)
        caller = caller_of(context.call_context)
        message = context.message
        if message is None:
            raise TaskNotFoundError
        exists = await database_sync_to_async(ProductTask.objects.filter(pk=task_id).exists)()
        if not exists:
            await database_sync_to_async(a2a_tasks.start)(task_id, message, caller)
            await event_queue.enqueue_event(
                Task(
                    id=task_id,
                    context_id=context_id,
                    status=TaskStatus(state=TaskState.TASK_STATE_SUBMITTED),
                    history=[message],
                )
            )
        await follow(task_id, context_id, event_queue, caller.token_id)

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        """Terminate the product task (if it still runs) and publish ``canceled``."""
        task_id = str(context.task_id)
        caller = caller_of(context.call_context)
        view = await database_sync_to_async(a2a_tasks.view_of)(task_id)
        if view.state not in FINAL_STATES:
            await database_sync_to_async(a2a_tasks.cancel)(task_id, caller)
            view = await database_sync_to_async(a2a_tasks.view_of)(task_id)
        await event_queue.enqueue_event(status_event(view, str(context.context_id)))


def status_event(view: TaskView, context_id: str) -> TaskStatusUpdateEvent:
    """The status update of ``view`` (timestamped now)."""
    status = TaskStatus(state=view.state, message=view.status_message(context_id))  # type: ignore[arg-type]
    status.timestamp.GetCurrentTime()
    return TaskStatusUpdateEvent(task_id=view.task_id, context_id=context_id, status=status)


def token_active(token_id: int) -> bool:
    """True while the role token ``token_id`` authenticates (not revoked, its role enabled)."""
    close_old_connections()
    return RoleToken.objects.filter(pk=token_id, revoked_at__isnull=True, role__enabled=True).exists()


async def follow(task_id: str, context_id: str, event_queue: EventQueue, token_id: int | None = None) -> None:
    """Publish the task's artifacts as they are written (again when rewritten) and its status
    when it changes, until it ends (a final status) or waits for an input the caller can give
    (``input-required``). While it waits only for a tool confirmation (an operator's decision
    on the task page) it is ``input-required`` too, and followed on.

    With ``token_id`` (the token that opened the stream), stops as soon as a check (every
    ``TOKEN_CHECK_S``) finds that token revoked or its role disabled: the stream then ends
    without publishing more of the task (the task itself runs on)."""
    sent: dict[str, str] = {}
    last: tuple[Any, ...] | None = None
    checked = time.monotonic()
    while True:
        if token_id is not None and time.monotonic() - checked >= TOKEN_CHECK_S:
            if not await database_sync_to_async(token_active)(token_id):
                return
            checked = time.monotonic()
        view = await database_sync_to_async(a2a_tasks.view_of)(task_id)
        changed = [name for name, mark in view.marks.items() if sent.get(name) != mark]
        if changed:
            for artifact in await database_sync_to_async(a2a_tasks.artifacts_named)(task_id, changed):
                await event_queue.enqueue_event(
                    TaskArtifactUpdateEvent(
                        task_id=task_id, context_id=context_id, artifact=artifact, append=False, last_chunk=True
                    )
                )
            sent.update({name: view.marks[name] for name in changed})
        if view.signature != last:
            last = view.signature
            await event_queue.enqueue_event(status_event(view, context_id))
        if view.state in FINAL_STATES or (view.state in PAUSE_STATES and view.answerable):
            return
        await asyncio.sleep(POLL_S)


async def while_token_active(events: AsyncGenerator[Event, None], caller: Caller) -> AsyncGenerator[Event, None]:
    """``events`` until the caller's token no longer authenticates (checked before an event is
    passed on, at most every ``TOKEN_CHECK_S``): a revoked subscriber is sent no more of the
    task, whoever's stream the executor follows it for."""
    checked = time.monotonic()
    try:
        async for event in events:
            if time.monotonic() - checked >= TOKEN_CHECK_S:
                if not await database_sync_to_async(token_active)(caller.token_id):
                    return
                checked = time.monotonic()
            yield event
    finally:
        await events.aclose()


class TeamRequestHandler(DefaultRequestHandler):
    """The SDK's request handler with the product's answers and cancels (module docstring)."""

    async def _answer_first(self, params: SendMessageRequest, context: ServerCallContext) -> None:
        if params.message.task_id:
            await database_sync_to_async(a2a_tasks.answer)(params.message.task_id, params.message, caller_of(context))

    async def on_message_send(self, params: SendMessageRequest, context: ServerCallContext) -> Message | Task:
        """``SendMessage``: start a task, or answer the one named (then go on following it)."""
        await self._answer_first(params, context)
        return await super().on_message_send(params, context)

    async def on_message_send_stream(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> AsyncGenerator[Event, None]:
        """``SendStreamingMessage``: as ``on_message_send``, streaming every update."""
        await self._answer_first(params, context)
        async for event in while_token_active(super().on_message_send_stream(params, context), caller_of(context)):
            yield event

    async def on_subscribe_to_task(
        self, params: SubscribeToTaskRequest, context: ServerCallContext
    ) -> AsyncGenerator[Event, None]:
        """``SubscribeToTask``: the SDK's, ending once the subscriber's token no longer
        authenticates (the task may be followed for another token's stream)."""
        async for event in while_token_active(super().on_subscribe_to_task(params, context), caller_of(context)):
            yield event

    async def on_cancel_task(self, params: CancelTaskRequest, context: ServerCallContext) -> Task | None:
        """``CancelTask``: the product task ends ``terminated`` (A2A ``canceled``) wherever it
        runs; an ended task is not cancelable (-32002), another role's does not exist (-32001)."""
        caller = caller_of(context)
        if await self._active_task_registry.get(params.id) is not None:
            # Followed here: the SDK cancels the executor, whose ``cancel`` terminates the task.
            return await super().on_cancel_task(params, context)
        await database_sync_to_async(a2a_tasks.cancel)(params.id, caller)
        task = await database_sync_to_async(_owned_task)(params.id, caller)
        if task is None:
            raise TaskNotFoundError
        await database_sync_to_async(a2a_tasks.save_document)(task, caller)
        return task


def unauthorized() -> JSONResponse:
    """401 in JSON-RPC's error shape, with the scheme the client must use."""
    detail = _("a valid role token is required: Authorization: Bearer <token> (POST /api/v1/auth/role-tokens)")
    return JSONResponse(
        {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": detail, "data": {"detail": detail}}},
        status_code=401,
        headers={"WWW-Authenticate": 'Bearer realm="a2a"'},
    )


async def _invalid_params(scope: Scope, send: Send, request_id: Any, message: str) -> None:
    body = {"jsonrpc": "2.0", "id": request_id, "error": {"code": -32602, "message": message}}
    await JSONResponse(body)(scope, _no_receive, send)


async def _no_receive() -> dict[str, Any]:
    return {"type": "http.disconnect"}


class ParamsShape:
    """ASGI middleware: a JSON-RPC call to the endpoint whose ``params`` is present but not an
    object (``null``, a list, a string...) is answered with a clean invalid-params error
    (``-32602``) instead of the SDK's parser's Python error text. The body was read and parsed
    outside (``JsonRpcBody``, which hands it on unchanged)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        document = scope.get(JSON_BODY_SCOPE_KEY)
        if isinstance(document, dict) and "params" in document and not isinstance(document["params"], dict):
            request_id = document.get("id")
            request_id = request_id if isinstance(request_id, str | int) and not isinstance(request_id, bool) else None
            kind = "null" if document["params"] is None else type(document["params"]).__name__
            await _invalid_params(scope, send, request_id, f"Invalid params: 'params' must be an object, not {kind}")
            return
        await self.app(scope, receive, send)


class RoleTokenAuth:
    """ASGI middleware: everything but the card needs ``Authorization: Bearer <role token>``
    (``interop.role_tokens.authenticate``); the caller goes on the scope."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] != CARD_PATH:
            secret = bearer_secret(Headers(scope=scope).get("authorization"))
            token = await database_sync_to_async(authenticate)(secret) if secret else None
            if token is None:
                await unauthorized()(scope, receive, send)
                return
            scope[CALLER_SCOPE_KEY] = Caller.of(token)
        await self.app(scope, receive, send)


def base_url(request: Request) -> str | None:
    """``scheme://host[:port]`` the request came to (https behind a proxy that says so in
    ``SECURE_PROXY_SSL_HEADER``), or None when the host is not one of ``ALLOWED_HOSTS`` (as
    Django refuses it)."""
    host = request.headers.get("host", "")
    domain, _port = split_domain_port(host)
    allowed = settings.ALLOWED_HOSTS or (["localhost", ".localhost", "127.0.0.1", "[::1]"] if settings.DEBUG else [])
    if not domain or not validate_host(domain, allowed):
        return None
    scheme = request.url.scheme
    proxy_header = getattr(settings, "SECURE_PROXY_SSL_HEADER", None)
    if proxy_header:
        name, value = proxy_header
        if request.headers.get(name.removeprefix("HTTP_").replace("_", "-"), "").split(",")[0].strip() == value:
            scheme = "https"
    return f"{scheme}://{host}"


async def card_view(request: Request) -> Response:
    """The agent card (public), for the host the request came to."""
    url = base_url(request)
    if url is None:
        return JSONResponse({"detail": _("unknown host"), "errors": {"host": [_("not an allowed host")]}}, 400)
    document = await database_sync_to_async(card_document)(url)
    return JSONResponse(document, headers={"Cache-Control": "no-cache"})


def build_handler() -> TeamRequestHandler:
    """The request handler with TeamClaw's executor, task store and product task ids (call
    it on the event loop that will serve it: the SDK's registry holds asyncio primitives)."""
    return TeamRequestHandler(
        agent_executor=TeamExecutor(),
        task_store=ProductTaskStore(),
        agent_card=handler_card(),
        request_context_builder=SimpleRequestContextBuilder(task_id_generator=ProductIds()),
        interrupted_task_timeout=INTERRUPTED_RELEASE_S,
    )


def build_app() -> ASGIApp:
    """The A2A Starlette app: the card route and the SDK's JSON-RPC route behind
    ``RoleTokenAuth``, bodies up to ``DATA_UPLOAD_MAX_MEMORY_SIZE`` (as Django's), the
    protocol headers on every response."""
    handler = build_handler()
    routes = [
        Route(CARD_PATH, card_view, methods=["GET"]),
        *create_jsonrpc_routes(handler, RPC_PATH, context_builder=CallerContextBuilder(), enable_v0_3_compat=True),
    ]
    app = Starlette(routes=routes)
    # A body the bounded parser refuses is a -32700 under HTTP 200, as the SDK answers one that
    # is not JSON at all; a body over the limit a -32700 under 413.
    return ProtocolHeaders(RoleTokenAuth(JsonRpcBody(ParamsShape(app), error_status=200)))


class A2AApplication:
    """The ASGI app ``teamclaw.asgi`` mounts at ``A2A_PATHS``; the Starlette app is made on
    the first request, on the server's event loop (daphne runs no lifespan)."""

    def __init__(self) -> None:
        self._app: ASGIApp | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self._app is None:
            self._app = build_app()
        await self._app(scope, receive, send)


a2a_application = A2AApplication()
