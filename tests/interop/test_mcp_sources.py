"""MCP tool sources (issue 16) with a real MCP server: the ``mcp-server-time`` package over stdio
(a real OS process spoken to by the official ``mcp`` SDK client), registered through the API.

Discovery lists its tools, which join the tool matrix at deny for every role; a model-backed
agent (the openai executor against the chat-completions server of ``tests.model_server``)
calls ``get_current_time`` under allow and gets the server's real answer back, is refused under
deny (recorded, the model told), and waits in ``waiting_user`` under confirm until an operator
approves through the API. Addresses outside the stdio or host allowlist are refused."""

from __future__ import annotations

import json
import threading
import time
from datetime import UTC, datetime
from typing import Any

import pytest

from capabilities.models import ConfigChange, Project, ToolPermission
from interop.models import McpToolSource
from monitoring.models import ExecutionContext, ToolConfirmation
from tests.helpers import database_state
from tests.model_server import Completion, host_on_model

SOURCES = "/api/v1/mcp-sources"
TOOL = "mcp:time/get_current_time"
FUNCTION = "mcp__time__get_current_time"
TIME_SOURCE = {"name": "time", "command": "mcp-server-time", "args": ["--local-timezone", "UTC"]}


def register(api, **body: Any) -> dict[str, Any]:
    response = api.post(SOURCES, {**TIME_SOURCE, **body}, format="json")
    assert response.status_code == 201, response.content
    return response.json()


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"name": "shell", "command": "bash", "args": ["-c", "id"]}, "command"),
        ({"name": "shell", "command": "/bin/sh"}, "command"),
        ({"name": "shell", "command": ""}, "command"),
        ({"name": "time", "command": "mcp-server-time", "args": ["x" * 600]}, "args.0"),
        ({"name": "time", "command": "mcp-server-time", "args": "--local-timezone UTC"}, "args"),
        ({"name": "Bad Name", "command": "mcp-server-time"}, "name"),
        ({"name": "meta", "url": "http://169.254.169.254/mcp"}, "url"),
        ({"name": "web", "url": "https://tools.example.com/mcp"}, "url"),
        ({"name": "web", "transport": "http", "url": "file:///etc/passwd"}, "url"),
        ({"name": "web", "transport": "http", "url": "http://user:pw@mcp.internal/mcp"}, "url"),
    ],
)
def test_an_address_outside_the_allowlists_is_refused_naming_the_field_and_nothing_is_saved(
    api, builtin, settings, body, field
):
    settings.TEAMCLAW = {**settings.TEAMCLAW, "HTTP_EXECUTOR_ALLOWED_HOSTS": ["mcp.internal"]}
    before = database_state()
    response = api.post(SOURCES, body, format="json")
    assert response.status_code == 400, response.content
    document = response.json()
    assert field in document["errors"], document
    assert field in document["detail"]
    assert database_state() == before


def test_a_misspelt_key_and_an_unknown_project_are_400s(api, builtin):
    assert api.post(SOURCES, {**TIME_SOURCE, "comand": "x"}, format="json").json()["errors"] == {
        "comand": [
            "unknown field; expected one of: name, project, transport, command, args, url, bearer_token, headers"
        ]
    }
    unknown = api.post(SOURCES, {**TIME_SOURCE, "project": "ghost"}, format="json")
    assert unknown.status_code == 400 and list(unknown.json()["errors"]) == ["project"]
    assert api.get(f"{SOURCES}/999").status_code == 404
    assert api.post(f"{SOURCES}/999/refresh", {}, format="json").status_code == 404
    assert api.delete(f"{SOURCES}/999").status_code == 404


def test_only_staff_register_refresh_or_remove_sources(builtin, viewer_user):
    from rest_framework.test import APIClient

    viewer = APIClient()
    viewer.force_authenticate(viewer_user)
    assert viewer.get(SOURCES).status_code == 200
    assert viewer.post(SOURCES, TIME_SOURCE, format="json").status_code == 403
    assert viewer.post(f"{SOURCES}/1/refresh", {}, format="json").status_code == 403
    assert viewer.delete(f"{SOURCES}/1").status_code == 403


def test_discovery_lists_the_real_servers_tools_and_each_starts_at_deny_for_every_role(api, builtin):
    source = register(api)
    assert source["state"] == "connected", source["error"]
    assert source["server"]["name"] == "mcp-time"
    tools = {t["name"]: t for t in source["tools"]}
    assert {"get_current_time", "convert_time"} <= set(tools)
    assert tools["get_current_time"]["tool"] == TOOL
    assert tools["get_current_time"]["input_schema"]["required"] == ["timezone"]
    assert "timezone" in tools["get_current_time"]["description"].lower()
    assert source["last_checked_at"]

    matrix = api.get("/api/v1/permissions/tool-matrix").json()
    assert matrix["tools"][:6] == ["file_read", "file_write", "code_execution", "database", "deployment", "network"]
    assert TOOL in matrix["tools"] and "mcp:time/convert_time" in matrix["tools"]
    assert {row[TOOL] for row in matrix["matrix"].values()} == {"deny"}
    assert not ToolPermission.objects.filter(tool__startswith="mcp:").exists()
    audit = list(ConfigChange.objects.filter(config_type="tool_binding").order_by("new_version"))
    assert [c.note for c in audit] == ["MCP tool source time registered", "MCP tool source time discovered: 2 tool(s)"]
    assert audit[-1].changes["mcp_sources.time.tools"] == {"old": [], "new": ["convert_time", "get_current_time"]}

    # Matrix edits of the new tool go through the governed save (versioned, audited).
    saved = api.put(
        "/api/v1/permissions/tool-matrix",
        {"version": matrix["version"], "matrix": {"dba": {TOOL: "allow"}}, "note": "dba may read the clock"},
        format="json",
    )
    assert saved.status_code == 200, saved.content
    assert saved.json()["matrix"]["dba"][TOOL] == "allow"
    assert ConfigChange.objects.latest("new_version").changes == {
        f"tool_matrix.dba.{TOOL}": {"old": "deny", "new": "allow"}
    }

    # A refresh that finds the same tools changes nothing; removing the source drops its cells.
    version = ConfigChange.objects.latest("new_version").new_version
    refreshed = api.post(f"{SOURCES}/{source['id']}/refresh", {}, format="json")
    assert refreshed.status_code == 200 and refreshed.json()["state"] == "connected"
    assert ConfigChange.objects.latest("new_version").new_version == version
    removed = api.delete(f"{SOURCES}/{source['id']}")
    assert removed.json() == {"name": "time", "removed_tools": 2, "removed_cells": 1}
    assert not ToolPermission.objects.filter(tool__startswith="mcp:").exists()
    assert TOOL not in api.get("/api/v1/permissions/tool-matrix").json()["tools"]

    # Registered again, the tool is new again: deny everywhere, not the old allow.
    register(api)
    again = api.get("/api/v1/permissions/tool-matrix").json()
    assert again["matrix"]["dba"][TOOL] == "deny"


def test_a_project_source_is_seen_by_its_project_only(api, builtin):
    Project.objects.create(slug="shop", name="Shop")
    register(api, name="clock", project="shop")
    shop = api.get("/api/v1/permissions/tool-matrix", {"project": "shop"}).json()
    assert "mcp:clock/get_current_time" in shop["tools"]
    assert "mcp:clock/get_current_time" not in api.get("/api/v1/permissions/tool-matrix").json()["tools"]
    refused = api.put(
        "/api/v1/permissions/tool-matrix",
        {
            "version": api.get("/api/v1/permissions/tool-matrix").json()["version"],
            "matrix": {"dba": {"mcp:clock/get_current_time": "allow"}},
        },
        format="json",
    )
    assert refused.status_code == 400
    assert refused.json()["errors"] == {
        "matrix.dba.mcp:clock/get_current_time": ["unknown tool 'mcp:clock/get_current_time'"]
    }
    assert [s["name"] for s in api.get(SOURCES).json()["results"]] == []
    assert [s["name"] for s in api.get(SOURCES, {"project": "shop"}).json()["results"]] == ["clock"]


def test_a_server_that_fails_is_recorded_as_an_error_with_its_message(api, builtin, settings, tmp_path):
    broken = tmp_path / "broken-mcp"
    broken.write_text("#!/bin/sh\necho 'no such database: tools.db' >&2\nexit 3\n")
    broken.chmod(0o755)
    settings.TEAMCLAW = {**settings.TEAMCLAW, "MCP_STDIO_ALLOWLIST": ["mcp-server-time", str(broken)]}
    source = register(api, name="broken", command="broken-mcp", args=[])
    assert source["state"] == "error"
    assert "no such database: tools.db" in source["error"]
    assert source["tools"] == [] and source["last_checked_at"]


# --- a model-backed agent calling the tool ------------------------------------------------

_LISTED: list[Any] = []


def time_source() -> McpToolSource:
    """The time source as registration leaves it, from one real discovery per test session
    (each start of the server costs seconds): the tests below are about calling the tool."""
    from django.db import transaction

    from capabilities.config import record_change
    from interop.mcp_sources import discover
    from teamclaw.runtime.mcp_tools import Listing

    if not _LISTED:
        listing = discover(McpToolSource(**TIME_SOURCE, transport="stdio"))
        assert isinstance(listing, Listing), listing
        _LISTED.append(listing)
    listing = _LISTED[0]
    with transaction.atomic():
        source = McpToolSource.objects.create(
            **TIME_SOURCE, transport="stdio", state="connected", tools=[t.as_dict() for t in listing.tools]
        )
        record_change("tool_binding", changed_fields=["mcp_sources.time.tools"])
    return source


class ClockBrain:
    """The dba's model: calls the time tool once, then answers ``schema_query`` with the
    datetime the tool returned as the table name's column (so the test sees it came back)."""

    def __init__(self) -> None:
        self.offered: list[list[str]] = []
        self.tool_results: list[dict[str, Any]] = []

    def __call__(self, body: dict[str, Any]) -> Completion:
        self.offered.append([t["function"]["name"] for t in body.get("tools", [])])
        results = [json.loads(m["content"]) for m in body["messages"] if m["role"] == "tool"]
        if not results:
            return Completion(tool_calls=[(FUNCTION, json.dumps({"timezone": "Europe/Paris"}))])
        self.tool_results.append(results[-1])
        seen = json.dumps(results[-1])[:200]
        return Completion(json.dumps({"table": "users", "columns": [{"name": seen, "type": "text"}]}))


def allow_for_dba(api, mode: str) -> None:
    matrix = api.get("/api/v1/permissions/tool-matrix").json()
    saved = api.put(
        "/api/v1/permissions/tool-matrix",
        {"version": matrix["version"], "matrix": {"dba": {TOOL: mode}}},
        format="json",
    )
    assert saved.status_code == 200, saved.content


def invoke_schema_query(api) -> dict[str, Any]:
    response = api.post(
        "/api/v1/capabilities/invoke",
        {"capability_id": "schema_query", "from_role": "main", "target_role": "dba", "params": {"table": "users"}},
        format="json",
    )
    assert response.status_code == 200, response.content
    return response.json()


def dba_tool_messages(host) -> list[dict[str, Any]]:
    host.recorder.flush()
    context = ExecutionContext.objects.filter(role="dba").latest("created_at")
    return [m for m in context.input_context["messages"] if m.get("type") == "tool"]


def test_under_allow_the_agent_calls_the_real_tool_and_gets_the_answer_back(api, transactional_db, builtin, settings):
    time_source()
    allow_for_dba(api, "allow")
    with host_on_model(settings, ClockBrain()) as model:
        result = invoke_schema_query(api)
        (used,) = dba_tool_messages(model.host)
    assert result["success"] is True, result
    assert FUNCTION in model.brain.offered[0]
    (answer,) = model.brain.tool_results
    assert answer["success"] is True
    structured = answer["data"]["structured"]
    assert structured["timezone"] == "Europe/Paris"
    told = datetime.fromisoformat(structured["datetime"])
    assert abs((told - datetime.now(UTC)).total_seconds()) < 120  # the server's real clock
    assert used["tool"] == TOOL and used["outcome"] == "used" and used["args"] == {"timezone": "Europe/Paris"}
    assert used["result"]["structured"]["datetime"] == structured["datetime"]


def test_under_deny_the_tool_is_not_offered_and_a_call_is_refused_recorded_and_told(
    api, transactional_db, builtin, settings
):
    time_source()  # a new tool: deny for every role
    with host_on_model(settings, ClockBrain()) as model:
        result = invoke_schema_query(api)
        (used,) = dba_tool_messages(model.host)
    assert result["success"] is True, result
    assert FUNCTION not in model.brain.offered[0]
    (answer,) = model.brain.tool_results
    assert answer["success"] is False
    assert answer["error"]["code"] == "tool_denied"
    assert "dba may not use mcp:time/get_current_time" in answer["error"]["message"]
    assert used["outcome"] == "denied" and used["error"]["code"] == "tool_denied"
    assert "result" not in used
    context = ExecutionContext.objects.filter(role="dba").latest("created_at")
    (told,) = [e for e in context.output_state["errors"] if e["details"].get("reason") == "tool_refused"]
    assert told["code"] == "tool_denied" and told["message"].endswith("the model was told")


def test_under_confirm_the_agent_waits_for_the_operator_who_approves_over_the_api(
    api, transactional_db, builtin, settings
):
    time_source()
    allow_for_dba(api, "confirm")
    outcome: dict[str, Any] = {}
    with host_on_model(settings, ClockBrain()) as model:
        caller = threading.Thread(target=lambda: outcome.update(body=invoke_schema_query(api)))
        caller.start()
        deadline = time.monotonic() + 30
        pending = None
        while pending is None and time.monotonic() < deadline:
            model.host.recorder.flush()
            pending = ToolConfirmation.objects.filter(status="pending", tool=TOOL).first()
            time.sleep(0.05)
        assert pending is not None, "no confirmation was asked for"
        assert pending.role == "dba" and pending.args == {"timezone": "Europe/Paris"}
        context = ExecutionContext.objects.get(pk=pending.context_id)
        assert context.status == "waiting_user"
        assert model.brain.tool_results == []  # nothing ran before the decision
        decision = api.post(f"/api/v1/confirmations/{pending.id}", {"approve": True}, format="json")
        assert decision.status_code == 200 and decision.json()["status"] == "approved"
        caller.join(60)
        (used,) = dba_tool_messages(model.host)
    assert outcome["body"]["success"] is True, outcome
    (answer,) = model.brain.tool_results
    assert answer["success"] is True and answer["data"]["structured"]["timezone"] == "Europe/Paris"
    assert used["outcome"] == "used"
