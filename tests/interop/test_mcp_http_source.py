"""An MCP tool source over Streamable HTTP (issue 16): a real MCP server in its own OS process
(``tests/interop/mcp_http_server.py``), discovered through the API under the host allowlist and
called the way the runtime calls it (``McpTools``)."""

from __future__ import annotations

import asyncio
import socket
import sys
from collections.abc import Iterator

import pytest

from interop.mcp_sources import catalogue
from teamclaw.runtime.errors import AgentFailure
from teamclaw.runtime.mcp_tools import McpTools
from tests.processes import Child, free_port, wait_until


@pytest.fixture(scope="module")
def shout_server(tmp_path_factory) -> Iterator[str]:
    port = free_port()
    log = tmp_path_factory.mktemp("mcp") / "server.log"
    child = Child([sys.executable, "tests/interop/mcp_http_server.py", str(port)], {}, log)
    try:

        def answers() -> bool:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    return True
            except OSError:
                return False

        wait_until(answers, 60, lambda: f"the MCP server to answer\n{child.output()}")
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        child.stop()


def test_an_http_source_on_an_allowed_host_is_discovered_and_its_tool_answers(api, builtin, settings, shout_server):
    settings.TEAMCLAW = {**settings.TEAMCLAW, "HTTP_EXECUTOR_ALLOWED_HOSTS": ["127.0.0.1"]}
    response = api.post("/api/v1/mcp-sources", {"name": "shout", "url": shout_server}, format="json")
    assert response.status_code == 201, response.content
    source = response.json()
    assert source["transport"] == "http" and source["state"] == "connected", source["error"]
    assert source["server"]["name"] == "teamclaw-test-shout"
    assert [t["tool"] for t in source["tools"]] == ["mcp:shout/shout"]
    assert source["tools"][0]["input_schema"]["required"] == ["text"]

    (spec,) = catalogue(None)
    runner = McpTools({}, ["127.0.0.1"])
    answer = asyncio.run(runner.run(spec, {"text": "ship it"}, 20))
    assert answer["text"] == "SHIP IT"

    # With the host taken off the allowlist, the same tool is refused before any connection.
    with pytest.raises(AgentFailure) as refused:
        asyncio.run(McpTools({}, ["mcp.internal"]).run(spec, {"text": "ship it"}, 20))
    assert refused.value.error.code == "tool_denied"
    assert "not in TEAMCLAW_HTTP_EXECUTOR_ALLOWED_HOSTS" in refused.value.error.message
    settings.TEAMCLAW = {**settings.TEAMCLAW, "HTTP_EXECUTOR_ALLOWED_HOSTS": []}
    assert catalogue(None) == []  # and the matrix no longer lists it
