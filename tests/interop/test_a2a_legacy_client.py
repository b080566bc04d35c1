"""Both generations of the official A2A client against one real daphne process: ``a2a-sdk``
1.x (this process) and ``a2a-sdk`` 0.3 (``tests/interop/a2a03_client.py``, run in a child
process on ``.venv/a2a03``, which ``make install`` fills). Each reads the public agent card,
sends a message (the task then asks its interview questions: ``input-required``), reads the
task and cancels it; the product task ends ``terminated`` either way."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a.types.a2a_pb2 import CancelTaskRequest, GetTaskRequest, SendMessageRequest, TaskState
from rest_framework.authtoken.models import Token

from interop import role_tokens
from monitoring.models import Task
from tests.interop.test_a2a_processes import IDEA, base, connect, text_message
from tests.processes import PYTHON, ROOT, Server, process_env

pytestmark = pytest.mark.django_db(transaction=True)

LEGACY_SDK = ROOT / ".venv" / "a2a03"
"""Where ``make install`` puts ``a2a-sdk`` 0.3 (beside, not inside, the project's 1.x)."""
LEGACY_CLIENT = Path(__file__).with_name("a2a03_client.py")


@pytest.fixture
def server(builtin, staff_user, tmp_path) -> Iterator[Server]:
    token = Token.objects.create(user=staff_user).key
    child = Server(process_env(TEAMCLAW_DEMO_THINK_MS="0"), tmp_path / "server.log", token)
    try:
        yield child
    finally:
        child.stop()


def legacy_client(url: str, secret: str, cwd: Path) -> dict[str, Any]:
    """What ``a2a03_client.py`` reports (its module docstring), run on the 0.3 SDK."""
    assert (LEGACY_SDK / "a2a").is_dir(), f"a2a-sdk 0.3 is not installed in {LEGACY_SDK}: run make install"
    env = {**os.environ, "PYTHONPATH": str(LEGACY_SDK)}
    done = subprocess.run(
        [PYTHON, str(LEGACY_CLIENT), url, secret, IDEA], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout)


async def current_client(url: str, secret: str) -> dict[str, Any]:
    """The same scenario on the 1.x SDK: card, message, task, cancel."""
    async with httpx.AsyncClient(timeout=60) as http:
        card, client = await connect(http, url, secret, streaming=False)
        sent = [e async for e in client.send_message(SendMessageRequest(message=text_message(IDEA)))][-1].task
        fetched = await client.get_task(GetTaskRequest(id=sent.id))
        canceled = await client.cancel_task(CancelTaskRequest(id=sent.id))
        return {"card": card, "sent": sent, "fetched": fetched, "canceled": canceled}


def test_a2a_clients_of_both_generations_read_the_card_send_read_and_cancel(server, tmp_path):
    secret = role_tokens.issue("main", "two generations").secret
    url = base(server)

    old = legacy_client(url, secret, tmp_path)
    assert old["sdk_version"].startswith("0.3.")
    # The card as 0.3 reads it: the v0.3 url and transport, next to v1's interfaces.
    assert old["card"] == {"url": url + "/a2a", "transport": "JSONRPC", "version": "0.3"}
    assert old["streamed"][0] == "submitted" and old["streamed"][-1] == "input-required", old["streamed"]
    task_id = old["sent"]["id"]
    assert old["sent"]["state"] == "input-required"
    assert old["fetched"]["id"] == task_id and old["fetched"]["state"] == "input-required"
    assert IDEA in old["fetched"]["history_texts"]
    assert "requirement.md" not in old["fetched"]["artifacts"]  # the interview has only begun
    assert old["canceled"]["state"] == "canceled" and old["refetched"]["state"] == "canceled"
    assert old["cancel_again"]["code"] == -32002 and "has already ended" in old["cancel_again"]["message"]
    assert Task.objects.get(pk=task_id).status == "terminated"
    assert Task.objects.filter(status="terminated").count() == 1
    streamed_task = Task.objects.exclude(pk=task_id).get()
    assert streamed_task.status in ("queued", "running")  # left waiting for its answers

    new = asyncio.run(current_client(url, secret))
    # 1.x reads both interfaces of the same card (and takes the 1.0 one).
    assert [(i.protocol_version, i.url) for i in new["card"].supported_interfaces] == [
        ("1.0", url + "/a2a"),
        ("0.3", url + "/a2a"),
    ]
    assert new["sent"].status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    assert new["fetched"].id == new["sent"].id and new["fetched"].status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    assert new["canceled"].status.state == TaskState.TASK_STATE_CANCELED
    assert Task.objects.get(pk=new["sent"].id).status == "terminated"
