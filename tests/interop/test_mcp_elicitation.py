"""Tool confirmations through MCP elicitation (issue 29 item 3; ``interop.mcp_elicitation``): the
official ``mcp`` client (``ClientSession`` with and without an ``elicitation_callback``) against
a real daphne process (tests/processes.py) on this test's database, the offline team answering.

The tool is main's ``task_orchestration`` running the requirement review of a document; with
main's ``file_write`` cell at ``confirm`` the review's last step (saving the final document to
the project folder) waits for an operator. A client that declared elicitation is asked: its
accept approves (``decided_by`` the token), its decline rejects with a reason; a client without
the capability is never asked and the dashboard (the REST API, as staff) decides; the dashboard
still wins when it answers first; nobody answering lets the confirmation expire."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
import mcp_types as types
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from rest_framework.authtoken.models import Token

from interop import role_tokens
from monitoring.models import ToolConfirmation
from tests.documents import CLINIC
from tests.processes import Server, process_env

pytestmark = pytest.mark.django_db(transaction=True)

TIMEOUT_S = 6
"""The server's confirmation timeout (s): short, so the expiry case ends quickly."""
REVIEW = {
    "task_description": "Review the clinic booking requirement",
    "workflow": "requirement_review",
    "input_markdown": CLINIC,
}


@pytest.fixture
def server(builtin, staff_user, tmp_path):
    env = process_env(TEAMCLAW_CONFIRMATION_TIMEOUT_S=str(TIMEOUT_S))
    running = Server(env, tmp_path / "server.log", Token.objects.create(user=staff_user).key)
    try:
        yield running
    finally:
        running.stop()


class Client:
    """An elicitation callback: answers with ``answer`` (None: never answers) and keeps what it was asked."""

    def __init__(self, answer: types.ElicitResult | None) -> None:
        self.answer = answer
        self.asked: list[types.ElicitRequestParams] = []

    async def __call__(self, context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        self.asked.append(params)
        if self.answer is None:
            await asyncio.Event().wait()
        assert self.answer is not None
        return self.answer


@asynccontextmanager
async def mcp_session(server: Server, secret: str, client: Client | None) -> AsyncIterator[ClientSession]:
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {secret}"}, timeout=60) as http:
        async with streamable_http_client(f"http://127.0.0.1:{server.port}/mcp", http_client=http) as (read, write):
            async with ClientSession(read, write, elicitation_callback=client) as session:
                await session.initialize()
                yield session


def confirmations(task_id: str) -> list[ToolConfirmation]:
    return list(ToolConfirmation.objects.filter(task_id=task_id, kind="tool"))


def pending_review() -> ToolConfirmation | None:
    return ToolConfirmation.objects.filter(status="pending", tool="file_write", role="main").first()


async def approve_on_the_dashboard(server: Server, after: Client | None = None) -> dict[str, Any]:
    """Wait for the pending file_write confirmation (and for ``after`` to have been asked about
    it) and approve it through the REST API as staff."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        row = await asyncio.to_thread(pending_review) if after is None or after.asked else None
        if row is not None:
            status, body = await asyncio.to_thread(server.api, "POST", f"confirmations/{row.id}", {"approve": True})
            assert status == 200, body
            return body
        await asyncio.sleep(0.1)
    raise AssertionError("no pending file_write confirmation")


def review(session: ClientSession) -> Any:
    return session.call_tool("task_orchestration", REVIEW)


def decided(result: types.CallToolResult) -> ToolConfirmation:
    """The call's one confirmation once its end is on the record (an expiry is written by the
    server's recorder, a moment after the call returns)."""
    assert result.is_error is False, result.content
    deadline = time.monotonic() + 10
    while True:
        (row,) = confirmations(result.meta["teamclaw/task_id"])
        if row.status != "pending" or time.monotonic() > deadline:
            return row
        time.sleep(0.05)


def set_main_file_write(server: Server, mode: str) -> None:
    status, matrix = server.api("GET", "permissions/tool-matrix")
    assert status == 200, matrix
    status, saved = server.api(
        "PUT", "permissions/tool-matrix", {"version": matrix["version"], "matrix": {"main": {"file_write": mode}}}
    )
    assert status == 200, saved


def test_tool_confirmations_through_mcp_elicitation(server, staff_user):
    set_main_file_write(server, "confirm")
    secret = role_tokens.issue("main", "elicit client").secret

    # 1. accept + approve: the client's answer is the operator's decision, by the token
    approving = Client(types.ElicitResult(action="accept", content={"approve": True}))

    async def accept() -> types.CallToolResult:
        async with mcp_session(server, secret, approving) as session:
            return await review(session)

    result = asyncio.run(accept())
    row = decided(result)
    assert (row.status, row.decided_by) == ("approved", "token:elicit client")
    assert "Saved to the project folder" in result.structured_content["summary"]
    (asked,) = approving.asked
    assert "file_write" in asked.message and row.id in asked.message and "main" in asked.message
    assert asked.requested_schema["required"] == ["approve"]

    # 2. decline: rejected with a reason; the review says the document was not saved
    async def decline() -> types.CallToolResult:
        async with mcp_session(server, secret, Client(types.ElicitResult(action="decline"))) as session:
            return await review(session)

    result = asyncio.run(decline())
    row = decided(result)
    assert (row.status, row.decided_by) == ("rejected", "token:elicit client")
    assert row.answer == {"reason": "declined through the MCP client"}
    assert "Not saved to the project folder" in result.structured_content["summary"]
    status, listed = server.api("GET", f"confirmations?task_id={row.task_id}")
    assert status == 200 and listed["results"][0]["reason"] == "declined through the MCP client"

    # 3. accept with approve false and the user's own reason
    refusing = Client(types.ElicitResult(action="accept", content={"approve": False, "reason": "not this week"}))

    async def refuse() -> types.CallToolResult:
        async with mcp_session(server, secret, refusing) as session:
            return await review(session)

    row = decided(asyncio.run(refuse()))
    assert (row.status, row.answer) == ("rejected", {"reason": "not this week"})

    # 4. a client without the capability is never asked: the dashboard decides
    async def without_capability() -> tuple[types.CallToolResult, dict[str, Any]]:
        async with mcp_session(server, secret, None) as session:
            assert session  # no elicitation capability was declared
            return await asyncio.gather(review(session), approve_on_the_dashboard(server))

    result, on_dashboard = asyncio.run(without_capability())
    row = decided(result)
    assert (row.status, row.decided_by) == ("approved", staff_user.get_username())
    assert on_dashboard["decided_by"] == staff_user.get_username()

    # 5. a client that is asked but slow: the dashboard answers first and wins
    slow = Client(None)

    async def dashboard_first() -> types.CallToolResult:
        async with mcp_session(server, secret, slow) as session:
            result, _ = await asyncio.gather(review(session), approve_on_the_dashboard(server, slow))
            return result

    result = asyncio.run(dashboard_first())
    row = decided(result)
    assert (row.status, row.decided_by) == ("approved", staff_user.get_username())
    assert len(slow.asked) == 1  # it was offered to the client too

    # 6. nobody answers: the confirmation expires after the server's timeout, as a rejection
    silent = Client(None)

    async def nobody() -> tuple[types.CallToolResult, float]:
        async with mcp_session(server, secret, silent) as session:
            started = time.monotonic()
            return await review(session), time.monotonic() - started

    result, took = asyncio.run(nobody())
    row = decided(result)
    assert row.status == "expired" and row.decided_by == ""
    assert len(silent.asked) == 1 and took >= TIMEOUT_S
    assert "Not saved to the project folder" in result.structured_content["summary"]


@pytest.mark.parametrize(
    ("answer", "decision"),
    [
        (types.ElicitResult(action="accept", content={"approve": True}), (True, None)),
        (types.ElicitResult(action="accept", content={"approve": False, "reason": "  "}), (False, None)),
        (types.ElicitResult(action="decline"), (False, "declined through the MCP client")),
        (types.ElicitResult(action="cancel"), (False, "cancelled in the MCP client")),
        (types.ElicitResult(action="accept", content={"approve": "yes"}), None),  # not a boolean: undecided
        (types.ElicitResult(action="accept"), None),
    ],
)
def test_what_a_clients_answer_decides(answer, decision):
    from interop.mcp_elicitation import decision_of

    assert decision_of(answer) == decision
