"""A small MCP server over stdio for the tests (the SDK's low-level ``Server``), run as its own
OS process: ``python tests/interop/mcp_ref_server.py``. It lists three tools whose
``inputSchema`` it writes itself: ``lookup`` (a plain object schema), ``remote`` (a ``$ref``
to a URL) and ``looping`` (two ``$defs`` that only refer to each other)."""

from __future__ import annotations

import anyio
import mcp_types as types
from mcp.server.lowlevel.server import Server
from mcp.server.stdio import stdio_server

SCHEMAS = {
    "lookup": {"type": "object", "properties": {"q": {"type": "string"}}},
    "remote": {"type": "object", "properties": {"q": {"$ref": "https://schemas.example.com/q.json"}}},
    "looping": {
        "type": "object",
        "properties": {"q": {"$ref": "#/$defs/a"}},
        "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}},
    },
}


async def list_tools(ctx: object, params: object) -> types.ListToolsResult:
    return types.ListToolsResult(
        tools=[
            types.Tool(name=name, description=f"{name} tool", input_schema=schema) for name, schema in SCHEMAS.items()
        ]
    )


server = Server("teamclaw-test-refs", on_list_tools=list_tools)


async def main() -> None:
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
