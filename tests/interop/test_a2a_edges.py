"""A2A edges found by an adversarial pass, in process: a followed task's stream ends once the
token that opened it is revoked (or its role disabled), and a call whose ``params`` is not an
object gets a clean JSON-RPC invalid-params error."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx
import pytest
from asgiref.sync import sync_to_async

from capabilities.models import AgentRole
from interop import a2a, role_tokens
from monitoring.models import Task
from teamclaw.runtime.messages import new_id

pytestmark = pytest.mark.django_db(transaction=True)


class Recorder:
    """Stands in for the SDK's event queue: keeps what the executor publishes."""

    def __init__(self) -> None:
        self.events: list[Any] = []

    async def enqueue_event(self, event: Any) -> None:
        self.events.append(event)


def running_task() -> Task:
    return Task.objects.create(id=new_id(), workflow="requirement_review", description="an idea", status="running")


@pytest.mark.parametrize("how", ["revoked", "role disabled"])
def test_a_followed_task_stops_streaming_once_its_token_no_longer_authenticates(builtin, monkeypatch, how):
    monkeypatch.setattr(a2a, "TOKEN_CHECK_S", 0.3)
    issued = role_tokens.issue("main", "client")
    task = running_task()

    def withdraw() -> None:
        if how == "revoked":
            role_tokens.revoke(issued.row.pk)
        else:
            AgentRole.objects.filter(role="main").update(enabled=False)

    async def scenario() -> tuple[int, int, float]:
        queue = Recorder()
        following = asyncio.ensure_future(a2a.follow(task.id, "ctx", queue, issued.row.pk))  # type: ignore[arg-type]
        await asyncio.sleep(0.8)
        assert not following.done() and queue.events  # still running, its status was published
        await sync_to_async(withdraw)()
        before = len(queue.events)
        started = time.monotonic()
        await asyncio.wait_for(following, 3.0)
        return before, len(queue.events), time.monotonic() - started

    before, after, took = asyncio.run(scenario())
    assert took < 1.5 and after == before
    assert Task.objects.get(pk=task.pk).status == "running"  # the task itself runs on


def test_an_active_token_keeps_following(builtin, monkeypatch):
    monkeypatch.setattr(a2a, "TOKEN_CHECK_S", 0.1)
    issued = role_tokens.issue("main", "client")
    task = running_task()

    async def scenario() -> bool:
        following = asyncio.ensure_future(a2a.follow(task.id, "ctx", Recorder(), issued.row.pk))  # type: ignore[arg-type]
        await asyncio.sleep(0.8)
        alive = not following.done()
        following.cancel()
        return alive

    assert asyncio.run(scenario())


@pytest.mark.parametrize("params", [None, [1, 2], "x"])
def test_params_that_are_not_an_object_are_invalid_params(builtin, params):
    issued = role_tokens.issue("main", "client")

    async def call() -> httpx.Response:
        transport = httpx.ASGITransport(app=a2a.build_app())
        async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
            return await client.post(
                "/a2a",
                json={"jsonrpc": "2.0", "id": 7, "method": "SendMessage", "params": params},
                headers={"Authorization": f"Bearer {issued.secret}", "A2A-Version": "1.0"},
            )

    response = asyncio.run(call())
    body = response.json()
    assert body["id"] == 7 and body["error"]["code"] == -32602, body
    assert "'params' must be an object" in body["error"]["message"]
    assert "NoneType" not in response.text


def test_a_subscribers_stream_passes_on_nothing_once_its_token_is_revoked(builtin, monkeypatch):
    """``SubscribeToTask`` (and the streaming send) pass events through ``while_token_active``:
    the executor may follow the task for another token's stream."""
    monkeypatch.setattr(a2a, "TOKEN_CHECK_S", 0.0)
    issued = role_tokens.issue("main", "subscriber")
    caller = a2a.Caller.of(issued.row)

    async def events() -> Any:
        for n in range(3):
            if n == 1:
                await sync_to_async(role_tokens.revoke)(issued.row.pk)
            yield n

    async def collect() -> list[Any]:
        return [event async for event in a2a.while_token_active(events(), caller)]

    assert asyncio.run(collect()) == [0]
