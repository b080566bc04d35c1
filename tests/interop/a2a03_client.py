"""An A2A 0.3 client (``a2a-sdk`` 0.3, installed by ``make install`` in ``.venv/a2a03``),
run as a script by ``tests/interop/test_a2a_legacy_client.py`` with that folder first on
``PYTHONPATH`` (the project's own ``a2a-sdk`` is 1.x; the two cannot share a process).

``python a2a03_client.py <base URL> <role token> <idea>`` prints one JSON object:
``sdk_version``, ``card`` (url, preferred transport, protocol version), ``streamed`` (the
states of one streamed ``message/stream`` until the task asks for input), ``sent`` (the task
``message/send`` returned), ``fetched`` (``tasks/get``), ``canceled`` (``tasks/cancel``),
``refetched`` (``tasks/get`` after the cancel), ``cancel_again`` (the JSON-RPC error
``{"code", "message"}`` of a second cancel). Nothing of the project is imported here."""

from __future__ import annotations

import asyncio
import json
import sys
from importlib.metadata import version
from typing import Any
from uuid import uuid4

import httpx
from a2a.client import A2ACardResolver, AuthInterceptor, ClientConfig, ClientFactory, CredentialService
from a2a.client.errors import A2AClientJSONRPCError
from a2a.types import Message, Part, Role, Task, TaskIdParams, TaskQueryParams, TaskState, TextPart

STOPS = {TaskState.input_required, TaskState.completed, TaskState.failed, TaskState.canceled}


class Secret(CredentialService):
    def __init__(self, secret: str) -> None:
        self.secret = secret

    async def get_credentials(self, security_scheme_name: str, context: Any) -> str | None:
        return self.secret


def message(text: str) -> Message:
    return Message(message_id=uuid4().hex, role=Role.user, parts=[Part(root=TextPart(text=text))])


def task_summary(task: Task) -> dict[str, Any]:
    return {
        "id": task.id,
        "context_id": task.context_id,
        "state": task.status.state.value,
        "artifacts": sorted(a.name or "" for a in task.artifacts or []),
        "history_texts": [p.root.text for m in task.history or [] for p in m.parts if p.root.kind == "text"],
    }


async def scenario(url: str, secret: str, idea: str) -> dict[str, Any]:
    out: dict[str, Any] = {"sdk_version": version("a2a-sdk")}
    async with httpx.AsyncClient(timeout=60) as http:
        card = await A2ACardResolver(http, url).get_agent_card()
        out["card"] = {"url": card.url, "transport": card.preferred_transport, "version": card.protocol_version}
        interceptors = [AuthInterceptor(Secret(secret))]
        streaming = ClientFactory(ClientConfig(httpx_client=http, streaming=True)).create(
            card, interceptors=interceptors
        )
        states = []
        async for event in streaming.send_message(message(idea)):
            task, update = event if isinstance(event, tuple) else (None, None)
            state = (update.status.state if update is not None and update.kind == "status-update" else None) or (
                task.status.state if task is not None else None
            )
            states.append(state.value if state else None)
            if state in STOPS:
                break
        out["streamed"] = states
        polling = ClientFactory(ClientConfig(httpx_client=http, streaming=False)).create(
            card, interceptors=interceptors
        )
        sent = [event async for event in polling.send_message(message(idea))]
        task = sent[-1][0] if isinstance(sent[-1], tuple) else None
        assert task is not None, sent
        out["sent"] = task_summary(task)
        out["fetched"] = task_summary(await polling.get_task(TaskQueryParams(id=task.id)))
        out["canceled"] = task_summary(await polling.cancel_task(TaskIdParams(id=task.id)))
        out["refetched"] = task_summary(await polling.get_task(TaskQueryParams(id=task.id)))
        try:
            await polling.cancel_task(TaskIdParams(id=task.id))
            out["cancel_again"] = None
        except A2AClientJSONRPCError as exc:  # the refusal is what the test checks
            out["cancel_again"] = {"code": exc.error.code, "message": exc.error.message}
    return out


if __name__ == "__main__":
    print(json.dumps(asyncio.run(scenario(sys.argv[1], sys.argv[2], sys.argv[3]))))
