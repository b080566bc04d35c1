"""MCP tool sources: listing and calling the tools of an MCP server (issue 16; PRD §4.7 tools).

An operator registers an MCP server as a *tool source*; its tools become tools of the tool
permission matrix named ``mcp:<source>/<tool>`` (``ToolSpec``). This module is the client
side, on the official ``mcp`` SDK (``stdio_client`` / ``streamable_http_client`` and
``ClientSession``), plain asyncio, no Django:

- ``list_server_tools(server, ...)`` connects, initialises and lists the server's tools
  (what discovery records: name, description, ``inputSchema``); a tool whose
  ``inputSchema`` fails the check of every stored schema (``stored_schema_problems``: a
  ``$ref`` outside the schema, a ``$ref`` cycle...) is skipped with a note naming why;
- ``McpTools`` is the runtime's ``ExternalTools``: it runs one tool call for an agent.

A server is reached one of two ways, and nothing else is ever started or called:

- ``{"transport": "stdio", "command": <name>, "args": [...]}``: ``name`` must be a key of
  the stdio allowlist (``TEAMCLAW_MCP_STDIO_ALLOWLIST``; a bare name is the console script
  next to the server's Python, e.g. ``mcp-server-time``), which maps it to the executable.
  The process gets the SDK's minimal environment (``HOME``, ``PATH``, ``USER``...), never
  the server's keys. One process per listing or call: slower (the process starts each time,
  2-3 s for ``mcp-server-time`` on an idle 2-core machine) but nothing is left running
  between calls;
- ``{"transport": "http", "url": ...}`` (Streamable HTTP): the host must be in the http
  executor's allowlist (``TEAMCLAW_HTTP_EXECUTOR_ALLOWED_HOSTS``), its addresses are checked
  as the http executor checks them (no link-local, no internal address behind a name), and
  plain http goes to the checked address (``executors.http.HttpExecutor.target``).

Both allowlists are checked when a source is registered and again at every connection, so
narrowing a setting takes effect at once. Durations are seconds.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import PaginatedRequestParams

from teamclaw.runtime.config import ToolSpec
from teamclaw.runtime.errors import AgentFailure, ErrorCode
from teamclaw.runtime.executors.http import HttpExecutor, check_plugin_url, parse_allowed_hosts
from teamclaw.runtime.schemas import stored_schema_problems

TOOL_PREFIX = "mcp:"
MAX_TOOLS = 200
MAX_SCHEMA_BYTES = 32_768
"""Largest ``inputSchema`` of one tool that is recorded (bytes of JSON); a larger one is skipped."""
MAX_LISTING_BYTES = 1_000_000
"""Most bytes of schemas and descriptions one source's listing records (it is stored, pinned
with the configuration and offered to models); tools past it are skipped with a note."""
MAX_NOTES = 50
"""Most tools recorded per source; a server listing more is cut (and says so)."""
MAX_ARGS = 20
MAX_ARG_CHARS = 500
MAX_RESULT_CHARS = 16_000
"""Longest text a tool result keeps (characters)."""
STDERR_SHOWN = 600
"""How much of a stdio server's stderr an error message repeats (characters)."""


class McpSourceError(Exception):
    """A server that cannot be reached or listed: ``field`` is the source's field at fault
    (``command``, ``url``, ``args``) or ``""`` for the connection itself."""

    def __init__(self, message: str, field: str = "") -> None:
        super().__init__(message)
        self.field = field


def tool_name(source: str, remote_name: str) -> str:
    """The matrix name of a source's tool: ``mcp:<source>/<tool>``."""
    return f"{TOOL_PREFIX}{source}/{remote_name}"


def resolve_stdio_allowlist(entries: Iterable[str]) -> dict[str, str]:
    """``{name: executable}`` for the allowlist setting's entries.

    An entry is a bare console-script name (resolved next to ``sys.executable``, i.e. the
    virtualenv's ``bin``, else on ``PATH``) or an absolute path (its file name is its name).
    An entry that resolves to nothing maps to ``""`` (listed, not installed)."""
    commands: dict[str, str] = {}
    bin_dir = Path(sys.executable).parent
    for raw in entries:
        entry = raw.strip()
        if not entry:
            continue
        if os.path.isabs(entry):
            commands[Path(entry).name] = entry if os.access(entry, os.X_OK) else ""
            continue
        beside = bin_dir / entry
        if beside.is_file() and os.access(beside, os.X_OK):
            commands[entry] = str(beside)
        else:
            commands[entry] = shutil.which(entry) or ""
    return commands


def server_problems(
    server: Mapping[str, Any], stdio_commands: Mapping[str, str], allowed_hosts: Iterable[str]
) -> dict[str, list[str]]:
    """Static problems with a server address, by field (empty when it may be used):
    ``transport`` unknown, ``command`` not in the stdio allowlist or not installed, ``args``
    not a short list of strings, ``url`` not http(s) or its host not allowed (no DNS here)."""
    transport = server.get("transport")
    if transport == "stdio":
        problems: dict[str, list[str]] = {}
        command = server.get("command")
        listed = ", ".join(sorted(stdio_commands)) or "empty"
        if not isinstance(command, str) or not command:
            problems["command"] = [f"choose a command from TEAMCLAW_MCP_STDIO_ALLOWLIST ({listed})"]
        elif command not in stdio_commands:
            problems["command"] = [f"{command[:100]!r} is not in TEAMCLAW_MCP_STDIO_ALLOWLIST ({listed})"]
        elif not stdio_commands[command]:
            problems["command"] = [f"{command!r} is allowed but not installed on this server"]
        args = server.get("args", [])
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            problems["args"] = ["must be a list of strings"]
        elif len(args) > MAX_ARGS:
            problems["args"] = [f"at most {MAX_ARGS} arguments"]
        elif any(len(a) > MAX_ARG_CHARS or "\x00" in a for a in args):
            problems["args"] = [f"each argument is at most {MAX_ARG_CHARS} characters, without NUL"]
        return problems
    if transport == "http":
        reasons = check_plugin_url(server.get("url"), parse_allowed_hosts(allowed_hosts))
        return {"url": reasons} if reasons else {}
    return {"transport": ["must be stdio or http"]}


@dataclass(frozen=True, slots=True)
class ListedTool:
    """One tool as a server lists it: ``name``, ``description``, ``input_schema`` (``inputSchema``)."""

    name: str
    description: str
    input_schema: dict[str, Any]

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "input_schema": self.input_schema}

    @property
    def weight(self) -> int:
        """What recording it costs: bytes of its schema's JSON plus characters of its description."""
        return len(json.dumps(self.input_schema)) + len(self.description)


def _over_limits(listed: ListedTool, names: set[str], size: int) -> str:
    """Why ``listed`` is not recorded ('' when it is): listed twice, or past MAX_LISTING_BYTES."""
    if listed.name in names:
        return f"tool {listed.name!r} skipped: the server lists it twice"
    if size + listed.weight > MAX_LISTING_BYTES:
        return f"tool {listed.name!r} skipped: the listing passed {MAX_LISTING_BYTES:,} bytes"
    return ""


@dataclass(frozen=True, slots=True)
class Listing:
    """What discovery found: the server's name and version, its tools (at most ``MAX_TOOLS``)
    and notes about what was left out (``"tool 'a b' skipped: ..."``)."""

    server_name: str
    server_version: str
    tools: list[ListedTool]
    notes: list[str]


def _leaf(exc: BaseException) -> BaseException:
    """The first real exception inside (nested) exception groups, which anyio task groups raise."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def _describe(exc: BaseException, stderr: str = "") -> str:
    leaf = _leaf(exc)
    text = str(leaf) or type(leaf).__name__
    if isinstance(leaf, TimeoutError):
        text = "the server did not answer in time"
    message = f"{type(leaf).__name__}: {text}"[:500]
    tail = stderr.strip()[-STDERR_SHOWN:]
    return f"{message} (server stderr: {tail})" if tail else message


SourceHeaders = Callable[[str], Awaitable[Mapping[str, str]]]
"""``source name -> the request headers its HTTP server needs`` (its stored credentials)."""


async def no_headers(source: str) -> Mapping[str, str]:
    """The ``SourceHeaders`` of a runtime with no stored credentials."""
    return {}


class McpConnector:
    """Opens an initialised ``ClientSession`` to a server address under both allowlists; an
    HTTP server gets the headers ``source_headers`` gives for its source (credentials)."""

    def __init__(
        self,
        stdio_commands: Mapping[str, str],
        allowed_hosts: Iterable[str],
        source_headers: SourceHeaders = no_headers,
    ) -> None:
        self.stdio_commands = dict(stdio_commands)
        self.allowed_hosts = list(allowed_hosts)
        self.source_headers = source_headers
        self._http = HttpExecutor(self.allowed_hosts)

    def problems(self, server: Mapping[str, Any]) -> dict[str, list[str]]:
        """``server_problems`` under this connector's allowlists."""
        return server_problems(server, self.stdio_commands, self.allowed_hosts)

    @asynccontextmanager
    async def session(self, server: Mapping[str, Any], stderr: Any, source: str = "") -> AsyncIterator[ClientSession]:
        """An initialised session to ``source``'s ``server``; raises McpSourceError for a refused
        address (``field`` set), AgentFailure from the http host check, and whatever the SDK
        raises while connecting."""
        problems = self.problems(server)
        if problems:
            field, reasons = next(iter(problems.items()))
            raise McpSourceError(f"{field}: {reasons[0]}", field)
        if server["transport"] == "stdio":
            params = StdioServerParameters(command=self.stdio_commands[server["command"]], args=list(server["args"]))
            async with stdio_client(params, errlog=stderr) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                yield session
            return
        target = await self._http.target(server["url"])
        headers = {**(await self.source_headers(source) if source else {}), "Host": target.host_header}
        timeout = httpx2.Timeout(30.0, read=300.0)
        async with (
            httpx2.AsyncClient(headers=headers, timeout=timeout, trust_env=False) as client,
            streamable_http_client(target.url, http_client=client) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            yield session


async def list_server_tools(
    connector: McpConnector, server: Mapping[str, Any], timeout_s: float, source: str = ""
) -> Listing:
    """Connect to ``server`` and list its tools (all pages, at most ``MAX_TOOLS``).

    Raises McpSourceError with a one-line reason (a refused address names its field; the
    stderr of a stdio server that failed is quoted) when it cannot."""
    with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as stderr:
        try:
            with anyio.fail_after(timeout_s):
                async with connector.session(server, stderr, source) as session:
                    info = session.initialize_result.server_info if session.initialize_result else None
                    tools: list[ListedTool] = []
                    notes: list[str] = []
                    cursor: str | None = None
                    names: set[str] = set()
                    size = 0
                    while True:
                        page = await session.list_tools(params=_page(cursor))
                        for tool in page.tools:
                            listed, note = _listed(tool)
                            if listed is not None:
                                note = _over_limits(listed, names, size)
                            if note:
                                if len(notes) < MAX_NOTES:
                                    notes.append(note)
                            elif listed is not None and len(tools) < MAX_TOOLS:
                                tools.append(listed)
                                names.add(listed.name)
                                size += listed.weight
                        cursor = page.next_cursor
                        if not cursor or len(tools) >= MAX_TOOLS:
                            break
                    if len(tools) >= MAX_TOOLS and cursor:
                        notes.append(f"only the first {MAX_TOOLS} tools were recorded")
        except McpSourceError:
            raise
        except AgentFailure as failure:
            raise McpSourceError(failure.error.message, "url") from None
        except Exception as exc:
            stderr.seek(0)
            raise McpSourceError(_describe(exc, stderr.read())) from None
    return Listing(
        server_name=getattr(info, "name", "") or "",
        server_version=getattr(info, "version", "") or "",
        tools=tools,
        notes=notes,
    )


def _page(cursor: str | None) -> PaginatedRequestParams | None:
    return None if cursor is None else PaginatedRequestParams(cursor=cursor)


REMOTE_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.")


def _listed(tool: Any) -> tuple[ListedTool | None, str]:
    name = getattr(tool, "name", "")
    if not isinstance(name, str) or not name or len(name) > 64 or not set(name) <= REMOTE_NAME_CHARS:
        return None, f"tool {str(name)[:80]!r} skipped: a tool name is 1-64 letters, digits, '_', '-' or '.'"
    schema = getattr(tool, "input_schema", None) or {"type": "object"}
    if not isinstance(schema, dict):
        return None, f"tool {name!r} skipped: its inputSchema is not an object"
    description = (getattr(tool, "description", None) or "")[:2000]
    encoded = json.dumps(schema, default=str)
    if len(encoded) > MAX_SCHEMA_BYTES:
        return None, f"tool {name!r} skipped: its inputSchema is {len(encoded):,} bytes (at most {MAX_SCHEMA_BYTES:,})"
    schema = json.loads(encoded)
    if problems := stored_schema_problems(schema):
        return None, f"tool {name!r} skipped: its inputSchema is refused: {problems[0]}"
    return ListedTool(name, description, schema), ""


def tool_result(result: Any) -> tuple[bool, dict[str, Any]]:
    """``(is_error, data)`` of a ``CallToolResult``: ``data`` has ``text`` (the text content
    joined, cut to ``MAX_RESULT_CHARS``), ``structured`` (``structuredContent``) when the
    server gave one, and ``non_text`` counting image/audio/resource items left out."""
    texts: list[str] = []
    other = 0
    for item in getattr(result, "content", None) or []:
        if getattr(item, "type", "") == "text":
            texts.append(str(getattr(item, "text", "")))
        else:
            other += 1
    text = "\n".join(texts)
    if len(text) > MAX_RESULT_CHARS:
        text = text[: MAX_RESULT_CHARS - 40] + f"... [cut: {len(text):,} characters]"
    data: dict[str, Any] = {"text": text}
    structured = getattr(result, "structured_content", None)
    if isinstance(structured, dict):
        data["structured"] = structured
    if other:
        data["non_text"] = other
    return bool(getattr(result, "is_error", False)), data


class McpTools:
    """The runtime's ``ExternalTools`` for ``mcp:`` tools (module docstring).

    ``run`` connects to the tool's server (from the task's pinned ``ToolSpec``), calls the
    tool with the agent's arguments and returns ``tool_result``'s data. Raises AgentFailure:
    ``tool_denied`` for an address the allowlists refuse now, ``executor_error`` for a tool
    that answered with an error (its text is the message) or a server that failed,
    ``timeout`` when it did not answer within ``timeout_s``. Never retried: a tool call may
    have done its work before it failed."""

    def __init__(
        self,
        stdio_commands: Mapping[str, str],
        allowed_hosts: Iterable[str],
        source_headers: SourceHeaders = no_headers,
    ) -> None:
        self.connector = McpConnector(stdio_commands, allowed_hosts, source_headers)

    async def run(self, spec: ToolSpec, args: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        details = {"tool": spec.name, "source": spec.source}
        with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as stderr:
            try:
                with anyio.fail_after(max(0.5, timeout_s)):
                    async with self.connector.session(spec.server, stderr, spec.source) as session:
                        result = await session.call_tool(spec.remote_name, args)
            except McpSourceError as exc:
                raise AgentFailure(
                    ErrorCode.TOOL_DENIED, f"{spec.name}: {exc}", {**details, "field": exc.field}, retryable=False
                ) from None
            except AgentFailure as failure:
                raise AgentFailure(
                    failure.error.code, f"{spec.name}: {failure.error.message}", details, retryable=False
                ) from None
            except TimeoutError:
                raise AgentFailure(
                    ErrorCode.TIMEOUT, f"{spec.name}: no answer within {timeout_s:.0f} s", details, retryable=False
                ) from None
            except Exception as exc:
                stderr.seek(0)
                raise AgentFailure(
                    ErrorCode.EXECUTOR_ERROR,
                    f"{spec.name}: the MCP server failed: {_describe(exc, stderr.read())}",
                    details,
                    retryable=False,
                ) from None
        is_error, data = tool_result(result)
        if is_error:
            raise AgentFailure(
                ErrorCode.EXECUTOR_ERROR,
                f"{spec.name} answered with an error: {data['text'][:1000]}",
                {**details, "reason": "tool_error"},
                retryable=False,
            )
        return data
