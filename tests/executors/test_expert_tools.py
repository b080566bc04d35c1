"""Issue 29 item 6, experts can use their tools: on the ``openai`` executor the review's expert
calls offer the model the functions the expert's role may use (its tools under the tool matrix,
allow or confirm, and the capabilities it may invoke), as a capability invoke does, and a
function the model calls runs through the runtime under the matrix: a ``confirm`` tool waits
for the operator. A real chat-completions server plays the model; the tool is the real
``mcp-server-time`` MCP server over stdio; runtime, database and API are real."""

from __future__ import annotations

import json
import re
import time
from typing import Any

from monitoring.models import ExecutionContext, ToolConfirmation
from tests.documents import CLINIC
from tests.executors.test_expert_answers_on_a_model import ExpertsBrain
from tests.helpers import wait_for_task
from tests.interop.test_mcp_sources import time_source
from tests.model_server import Completion

GET_TIME, CONVERT = "mcp:time/get_current_time", "mcp:time/convert_time"
GET_TIME_FUNCTION, CONVERT_FUNCTION = "mcp__time__get_current_time", "mcp__time__convert_time"


class ToolUsingExperts(ExpertsBrain):
    """``ExpertsBrain``, except that the architect's review first calls the time tool once;
    records the function names offered to each ``(perspective, mode)`` and the tool results."""

    def __init__(self) -> None:
        super().__init__()
        self.offered: dict[tuple[str, str], list[str]] = {}
        self.tool_results: list[dict[str, Any]] = []

    def __call__(self, body: dict[str, Any]) -> Completion:
        prompt = body["messages"][1]["content"]
        me = re.search(r"perspective '(\w+)'", prompt).group(1)
        mode = re.search(r"mode: (\w+)", prompt).group(1)
        self.offered.setdefault((me, mode), [t["function"]["name"] for t in body.get("tools", [])])
        results = [json.loads(m["content"]) for m in body["messages"] if m["role"] == "tool"]
        if me == "dev" and mode == "review" and not results:
            return Completion(tool_calls=[(GET_TIME_FUNCTION, json.dumps({"timezone": "Asia/Shanghai"}))])
        if results and len(self.tool_results) < len(results):
            self.tool_results.append(results[-1])
        return super().__call__(body)


def set_cells(api, matrix: dict[str, dict[str, str]]) -> None:
    current = api.get("/api/v1/permissions/tool-matrix").json()
    saved = api.put("/api/v1/permissions/tool-matrix", {"version": current["version"], "matrix": matrix}, format="json")
    assert saved.status_code == 200, saved.content


def test_an_expert_is_offered_the_tools_its_role_may_use_and_a_confirm_tool_waits_for_the_operator(
    api, transactional_db, builtin, settings
):
    from tests.model_server import host_on_model

    time_source()  # its two tools join the matrix at deny for every role
    set_cells(api, {"architect": {GET_TIME: "confirm"}, "ai_expert": {GET_TIME: "allow", CONVERT: "allow"}})
    with host_on_model(settings, ToolUsingExperts()) as model:
        response = api.post(
            "/api/v1/tasks", {"workflow": "requirement_review", "input_markdown": CLINIC}, format="json"
        )
        task_id = response.json()["task_id"]
        deadline = time.monotonic() + 60
        pending = None
        while pending is None and time.monotonic() < deadline:
            model.host.recorder.flush()
            pending = ToolConfirmation.objects.filter(status="pending", tool=GET_TIME).first()
            time.sleep(0.05)
        assert pending is not None, "the architect's tool call asked for no confirmation"
        assert pending.role == "architect" and pending.args == {"timezone": "Asia/Shanghai"}
        assert model.brain.tool_results == []  # nothing ran before the decision
        decision = api.post(f"/api/v1/confirmations/{pending.id}", {"approve": True}, format="json")
        assert decision.status_code == 200, decision.content
        task = wait_for_task(model.host, task_id)
    assert task.status == "completed", task.error

    offered = model.brain.offered
    # the architect: confirm -> offered; convert_time is deny -> not offered
    assert GET_TIME_FUNCTION in offered[("dev", "review")]
    assert CONVERT_FUNCTION not in offered[("dev", "review")]
    # the architect may invoke the dba (invoke matrix): its capabilities are functions too
    assert "schema_query" in offered[("dev", "review")]
    # the AI expert: both allowed; the product manager: both denied
    assert {GET_TIME_FUNCTION, CONVERT_FUNCTION} <= set(offered[("ai", "review")])
    assert not {GET_TIME_FUNCTION, CONVERT_FUNCTION} & set(offered.get(("pm", "review"), []))
    # the review's own capability is never offered to an expert, on any other expert
    assert not [name for names in offered.values() for name in names if name.startswith("expert_review")]

    (answer,) = model.brain.tool_results
    assert answer["success"] is True, answer
    assert answer["data"]["structured"]["timezone"] == "Asia/Shanghai"  # the real server's answer
    model.host.recorder.flush()
    used = [
        m
        for c in ExecutionContext.objects.filter(task_id=task_id, role="architect")
        for m in c.input_context["messages"]
        if m.get("type") == "tool"
    ]
    assert [(m["tool"], m["outcome"]) for m in used] == [(GET_TIME, "used")]
    assert ToolConfirmation.objects.get(pk=pending.pk).status == "approved"


def test_a_denied_call_from_an_experts_model_is_refused_and_the_review_goes_on(
    api, transactional_db, builtin, settings
):
    from tests.model_server import host_on_model

    time_source()  # deny for every role: nothing offered, a guessed call refused
    with host_on_model(settings, ToolUsingExperts()) as model:
        response = api.post(
            "/api/v1/tasks", {"workflow": "requirement_review", "input_markdown": CLINIC}, format="json"
        )
        task = wait_for_task(model.host, response.json()["task_id"])
    assert task.status == "completed", task.error
    assert GET_TIME_FUNCTION not in model.brain.offered[("dev", "review")]
    (answer,) = model.brain.tool_results
    assert answer["success"] is False and answer["error"]["code"] == "tool_denied"
    assert not ToolConfirmation.objects.exists()
