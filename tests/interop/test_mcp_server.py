"""The MCP server at /mcp against its real peer: the official ``mcp`` client
(``streamable_http_client`` + ``ClientSession``) talking to a real daphne process on this test's
database (tests/processes.py), the demo team answering with its offline executors.

- A ``pm`` token sees exactly the cards of the roles its invoke-matrix row allows, calls an
  allowed one (the architect's offline answer comes back as structured content) and a denied one
  (a tool error naming ``permission_denied``); a matrix change saved through the REST API sends
  ``notifications/tools/list_changed`` to the open session and the next list has the new tools;
  a change saved by another process (this test's) is noticed too.
- No token, a wrong token and a revoked token are refused with 401 and ``WWW-Authenticate: Bearer``,
  including for a session opened before the revocation.
"""

from __future__ import annotations

import asyncio
import json
import urllib.error
import urllib.request
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
import mcp_types as types
import pytest
from django.db import connections
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from capabilities.matrices import INVOKE, matrix_document, save_matrix
from capabilities.models import CapabilityCard
from interop import role_tokens
from tests.processes import Server

pytestmark = pytest.mark.django_db(transaction=True)


def mcp_url(server: Server) -> str:
    return f"http://127.0.0.1:{server.port}/mcp"


@asynccontextmanager
async def mcp_session(server: Server, secret: str, notes: list[Any] | None = None) -> AsyncIterator[ClientSession]:
    """An initialized MCP client session with ``Authorization: Bearer <secret>``; every message
    the server pushes lands in ``notes``."""

    async def keep(message: Any) -> None:
        if notes is not None:
            notes.append(message)

    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {secret}"}, timeout=30) as http:
        async with streamable_http_client(mcp_url(server), http_client=http) as (read, write):
            async with ClientSession(read, write, message_handler=keep) as session:
                await session.initialize()
                yield session


def reachable_by_matrix(server: Server, role: str) -> set[str]:
    """The capability ids of the enabled cards of every role ``role``'s invoke-matrix row
    allows, read through the REST API and the card rows (not through the MCP code)."""
    status, document = server.api("GET", "permissions/invoke-matrix")
    assert status == 200, document
    targets = [target for target, allowed in document["matrix"][role].items() if allowed]
    cards = CapabilityCard.objects.filter(owner_roles__role__in=targets, enabled=True, owner_roles__enabled=True)
    return set(cards.values_list("capability_id", flat=True))


def set_invoke_cell(server: Server, caller: str, target: str, allowed: bool) -> None:
    status, document = server.api("GET", "permissions/invoke-matrix")
    assert status == 200, document
    status, saved = server.api(
        "PUT", "permissions/invoke-matrix", {"version": document["version"], "matrix": {caller: {target: allowed}}}
    )
    assert status == 200 and saved["changed"], saved


async def wait_for(notes: list[Any], kind: type, timeout_s: float) -> Any:
    deadline = asyncio.get_running_loop().time() + timeout_s
    while asyncio.get_running_loop().time() < deadline:
        for note in notes:
            if isinstance(note, kind):
                return note
        await asyncio.sleep(0.05)
    raise AssertionError(f"no {kind.__name__} within {timeout_s} s; got {notes!r}")


def raw_post(server: Server, headers: dict[str, str]) -> tuple[int, dict[str, str], Any]:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    request = urllib.request.Request(
        mcp_url(server),
        data=json.dumps(body).encode(),
        method="POST",
        headers={"Content-Type": "application/json", "Accept": "application/json, text/event-stream", **headers},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), json.loads(error.read())


def lists_calls_and_hears_of_matrix_changes(server: Server) -> None:
    secret = role_tokens.issue("pm", "mcp test client").secret
    expected = reachable_by_matrix(server, "pm")
    assert "tech_stack_selection" in expected and "schema_design" not in expected
    card = CapabilityCard.objects.get(capability_id="tech_stack_selection")
    dba_cards = set(
        CapabilityCard.objects.filter(owner_roles__role="dba", enabled=True).values_list("capability_id", flat=True)
    )

    async def scenario() -> str:
        notes: list[Any] = []
        async with mcp_session(server, secret, notes) as session:
            assert session.server_capabilities.tools.list_changed is True
            listed = await session.list_tools()
            assert {tool.name for tool in listed.tools} == expected
            tool = next(t for t in listed.tools if t.name == "tech_stack_selection")
            assert (tool.title, tool.input_schema, tool.output_schema) == (
                card.name,
                card.input_schema,
                card.output_schema,
            )
            assert tool.annotations.read_only_hint is True  # an analysis card that needs no tool

            allowed = await session.call_tool("tech_stack_selection", {"requirement": "An online bookshop"})
            assert allowed.is_error is False, allowed.content
            assert allowed.structured_content["stack"] and "bookshop" in allowed.content[0].text
            task_id = allowed.meta["teamclaw/task_id"]

            denied = await session.call_tool("schema_design", {"entities": ["book"]})
            assert denied.is_error is True
            assert denied.content[0].text.startswith("permission_denied: pm may not invoke dba")

            invalid = await session.call_tool("tech_stack_selection", {"requirement": ""})
            assert invalid.is_error is True and invalid.content[0].text.startswith("invalid_params:")

            # No wait for the client's GET stream: a change saved before it opens is sent once it does.
            await asyncio.to_thread(set_invoke_cell, server, "pm", "dba", True)
            await wait_for(notes, types.ToolListChangedNotification, 10)
            relisted = await session.list_tools()
            assert {tool.name for tool in relisted.tools} == expected | dba_cards
            assert "schema_design" in dba_cards
            now_allowed = await session.call_tool("schema_design", {"entities": ["book"]})
            assert now_allowed.is_error is False, now_allowed.content

            notes.clear()
            await asyncio.to_thread(save_in_this_process, "pm", "dba", False)
            await wait_for(notes, types.ToolListChangedNotification, 10)
            assert {tool.name for tool in (await session.list_tools()).tools} == expected
        return str(task_id)

    task_id = asyncio.run(scenario())
    # The call was recorded like any invoke: a short task titled after the tool and the token.
    status, task = server.api("GET", f"tasks/{task_id}")
    assert status == 200, task
    assert "tech_stack_selection" in json.dumps(task) and "mcp test client" in json.dumps(task)


def save_in_this_process(caller: str, target: str, allowed: bool) -> None:
    """A matrix change saved by another process than the server (this test's): the server
    hears of it through its config-version poll, not its in-process listener."""
    try:
        version = matrix_document(INVOKE, None)["version"]
        save_matrix(INVOKE, project=None, version=version, matrix={caller: {target: allowed}})
    finally:
        connections.close_all()


def hears_of_a_change_saved_right_after_initialize(server: Server) -> None:
    """Whether or not the client's GET stream is open yet when the change is saved, the
    notification reaches it."""
    secret = role_tokens.issue("designer", "early listener").secret
    dba_cards = set(
        CapabilityCard.objects.filter(owner_roles__role="dba", enabled=True).values_list("capability_id", flat=True)
    )

    async def scenario() -> None:
        notes: list[Any] = []
        async with mcp_session(server, secret, notes) as session:
            await asyncio.to_thread(set_invoke_cell, server, "designer", "dba", True)
            await wait_for(notes, types.ToolListChangedNotification, 10)
            assert dba_cards <= {tool.name for tool in (await session.list_tools()).tools}

    asyncio.run(scenario())


def refuses_missing_wrong_and_revoked_tokens_with_401(server: Server) -> None:
    for headers in ({}, {"Authorization": "Bearer tcr_not-a-real-token"}, {"Authorization": "Token abc"}):
        status, response_headers, body = raw_post(server, headers)
        assert status == 401, (headers, body)
        assert response_headers["WWW-Authenticate"].startswith("Bearer"), response_headers
        assert "Authorization" in body["errors"]

    issued = role_tokens.issue("architect", "soon revoked")

    async def scenario() -> None:
        async with mcp_session(server, issued.secret) as session:
            assert "schema_design" in {tool.name for tool in (await session.list_tools()).tools}
            await asyncio.to_thread(server.api, "DELETE", f"auth/role-tokens/{issued.row.pk}")
            refusals_before = server.output().count('"POST /mcp" 401')
            with pytest.raises(MCPError):  # the SDK client's word for an HTTP error answer
                await session.list_tools()
            assert server.output().count('"POST /mcp" 401') == refusals_before + 1

    asyncio.run(scenario())
    status, response_headers, _ = raw_post(server, {"Authorization": f"Bearer {issued.secret}"})
    assert status == 401 and response_headers["WWW-Authenticate"].startswith("Bearer")


def test_mcp_server_with_the_official_client(server):
    # One server process for both parts: starting one takes most of this test's time.
    lists_calls_and_hears_of_matrix_changes(server)
    hears_of_a_change_saved_right_after_initialize(server)
    refuses_missing_wrong_and_revoked_tokens_with_401(server)
