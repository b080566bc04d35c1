"""MCP errors as the spec (2025-11-25, tools, "Error Handling") sorts them, seen by the official
``mcp`` client against a real daphne process: protocol errors are JSON-RPC errors (an unknown
tool, a ``tools/call`` whose params break the request's shape: ``-32602``), tool execution
errors are results with ``isError`` (arguments that fail the card's ``input_schema``, a call
the invoke matrix refuses). A protocol error runs and records nothing."""

from __future__ import annotations

import asyncio
from typing import Any

import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError

from capabilities.models import CapabilityCard
from interop import role_tokens
from monitoring.models import Task
from tests.interop.test_mcp_server import mcp_session

pytestmark = pytest.mark.django_db(transaction=True)


async def outcome(call: Any) -> Any:
    """What ``call`` returns, or the exception it raised."""
    try:
        return await call
    except MCPError as exc:
        return exc


def test_protocol_errors_are_json_rpc_errors_and_execution_errors_are_tool_results(server):
    secret = role_tokens.issue("pm", "error test").secret
    # Before the server's first MCP request reads the configuration: a card inside a skill and a
    # disabled card, which are no tool for anyone.
    internal, disabled = "schema_query", "ui_design"
    CapabilityCard.objects.filter(capability_id=internal).update(capability_type="INTERNAL")
    CapabilityCard.objects.filter(capability_id=disabled).update(enabled=False)

    async def scenario() -> dict[str, Any]:
        async with mcp_session(server, secret) as session:
            listed = {tool.name for tool in (await session.list_tools()).tools}
            before = await asyncio.to_thread(Task.objects.count)
            got = {
                "listed": listed,
                "unknown": await outcome(session.call_tool("no_such_capability", {"requirement": "x"})),
                "internal": await outcome(session.call_tool(internal, {"table": "book"})),
                "disabled": await outcome(session.call_tool(disabled, {"feature": "x"})),
                "no_arguments_object": await outcome(
                    session.send_request(
                        types.Request[Any, Any](
                            method="tools/call", params={"name": "tech_stack_selection", "arguments": "x"}
                        ),
                        types.CallToolResult,
                    )
                ),
            }
            got["recorded_by_protocol_errors"] = await asyncio.to_thread(Task.objects.count) - before
            got["bad_arguments"] = await outcome(session.call_tool("tech_stack_selection", {"requirement": 5}))
            got["denied"] = await outcome(session.call_tool("schema_design", {"entities": ["book"]}))
        return got

    got = asyncio.run(scenario())
    assert not {"no_such_capability", internal, disabled} & got["listed"]
    for key, name in (("unknown", "no_such_capability"), ("internal", internal), ("disabled", disabled)):
        error = got[key]
        assert isinstance(error, MCPError), (key, error)
        assert error.code == types.INVALID_PARAMS, (key, error.error)
        assert error.message == f"Unknown tool: {name}" and error.data == {"tool": name}
    assert isinstance(got["no_arguments_object"], MCPError), got["no_arguments_object"]
    assert got["no_arguments_object"].code == types.INVALID_PARAMS
    assert got["recorded_by_protocol_errors"] == 0
    # Execution errors stay results the model can read and correct (SEP-1303).
    bad = got["bad_arguments"]
    assert isinstance(bad, types.CallToolResult) and bad.is_error is True
    assert bad.content[0].text.startswith("invalid_params:")
    denied = got["denied"]
    assert isinstance(denied, types.CallToolResult) and denied.is_error is True
    assert denied.content[0].text.startswith("permission_denied:")
