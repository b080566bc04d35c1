"""A small MCP server over Streamable HTTP for the tests (the SDK's ``MCPServer``), run as its own
OS process: ``python tests/interop/mcp_http_server.py PORT``. Its one tool, ``shout``, answers
the text it is given in capitals."""

from __future__ import annotations

import sys

from mcp.server.mcpserver import MCPServer

server = MCPServer("teamclaw-test-shout", version="1.0.0")


@server.tool(description="Repeat a text in capital letters.")
def shout(text: str) -> str:
    """The text in capitals."""
    return text.upper()


if __name__ == "__main__":
    server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[1]), streamable_http_path="/mcp")
