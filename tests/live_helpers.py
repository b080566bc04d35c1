"""Helpers for the live viewer tests: sockets with a real session, tasks that need an operator."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from typing import Any

from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
from django.contrib.sessions.backends.db import SessionStore

from monitoring.models import Task, ToolConfirmation
from runs.tasks import start_task

ORIGIN = (b"origin", b"http://localhost")
HOST = (b"host", b"localhost")
"""The socket is served from http://localhost (what a browser on that page sends)."""


def session_cookie(user) -> bytes:
    """A logged-in session for ``user`` as a Cookie header value (what a browser sends)."""
    session = SessionStore()
    session[SESSION_KEY] = str(user.pk)
    session[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
    session[HASH_SESSION_KEY] = user.get_session_auth_hash()
    session.create()
    return f"sessionid={session.session_key}".encode()


async def open_socket(
    path: str,
    user=None,
    *,
    origin: tuple[bytes, bytes] | None = ORIGIN,
    timeout: float = 15,
    cookies: str = "",
    headers: tuple[tuple[bytes, bytes], ...] = (),
):
    """Connect to ``path`` through the project's ASGI application (login and origin checks
    included), sending ``cookies`` (``"name=value; ..."``) beside the session's and any
    further ``headers``. Returns ``(communicator, connected, close_code)``."""
    from teamclaw.asgi import application

    sent = [HOST, *headers]
    if origin is not None:
        sent.append(origin)
    cookie = [await sync_to_async(session_cookie)(user)] if user is not None else []
    if cookies:
        cookie.append(cookies.encode())
    if cookie:
        sent.append((b"cookie", b"; ".join(cookie)))
    communicator = WebsocketCommunicator(application, path, headers=sent)
    connected, code = await communicator.connect(timeout=timeout)
    return communicator, connected, code


async def next_frame(communicator, *, ack: bool = True, timeout: float = 20) -> dict[str, Any]:
    """The next frame, acknowledged unless ``ack`` is False (flow control, web.sockets.outbox)."""
    frame = json.loads(await communicator.receive_from(timeout=timeout))
    if ack and frame.get("seq"):
        await communicator.send_to(text_data=json.dumps({"type": "ack", "seq": frame["seq"]}))
    return frame


async def collect_until(
    communicator, done: Callable[[list[dict[str, Any]]], bool], *, timeout: float = 60, on_event=None
) -> list[dict[str, Any]]:
    """Receive and acknowledge frames, gathering their events, until ``done(events)``."""
    events: list[dict[str, Any]] = []
    deadline = time.monotonic() + timeout
    while not done(events):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise AssertionError(f"gave up after {timeout} s with {len(events)} events")
        frame = await next_frame(communicator, timeout=remaining)
        if frame["type"] == "events":
            for event in frame["events"]:
                if on_event is not None:
                    await on_event(event)
                events.append(event)
    return events


def task_finished(task_id: str) -> Callable[[list[dict[str, Any]]], bool]:
    """A ``done`` predicate: a task event says ``task_id`` is no longer running."""

    def done(events: list[dict[str, Any]]) -> bool:
        return any(
            e["kind"] == "task" and e["data"]["id"] == task_id and e["data"]["status"] != "running" for e in events
        )

    return done


async def deploying_orchestration(call) -> dict[str, Any]:
    """Main's task_orchestration for a task that needs the operator: it asks to use the
    ``deployment`` tool, which main may use only after confirmation (PRD §4.7 ⚠️)."""
    call.progress(10, "asking to deploy to staging")
    result = await call.use_tool("deployment", target="staging")
    call.progress(100, "deployed")
    return {"status": "completed", "summary": f"deployed: {result}", "artifacts": []}


async def deployment_tool(root, args: dict[str, Any]) -> dict[str, Any]:
    """A deployment tool for tests (the real one belongs to the devops executors)."""
    return {"deployed_to": args.get("target")}


def start_deploying_task(host, user) -> Task:
    """Start a task whose main agent waits for a tool confirmation; returns the Task row."""
    offline = host.runtime.executors.get("offline")
    offline.register("task_orchestration", deploying_orchestration)
    host.runtime.tools["deployment"] = deployment_tool
    return start_task(workflow="generic", task_description="Deploy the shop to staging", user=user)


def wait_for_confirmation(host, task_id: str, timeout: float = 30) -> ToolConfirmation:
    """The task's pending ToolConfirmation once recorded."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        host.recorder.flush()
        row = ToolConfirmation.objects.filter(task_id=task_id, status="pending").first()
        if row is not None:
            return row
        time.sleep(0.05)
    raise AssertionError(f"no pending confirmation for task {task_id} after {timeout} s")


async def close(communicator) -> None:
    await communicator.disconnect()
    await asyncio.sleep(0)
