"""The ``openai`` executor against a real chat-completions server on 127.0.0.1, inside a
real Runtime: function calls through the invoke matrix, token accounting and the budget,
retries, malformed function calls, the round limit, the repair attempt and streaming."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from teamclaw.runtime import (
    CardSpec,
    CollectingSink,
    ConfigSnapshot,
    Constraints,
    EventKind,
    ExecutorRegistry,
    InvokeRequest,
    LayeredPrompt,
    OfflineExecutor,
    PromptSpec,
    Runtime,
)
from teamclaw.runtime.executors.chat import STREAM_PROGRESS_CHARS, ModelEndpoint, ModelSettings
from teamclaw.runtime.executors.model import OpenAIExecutor
from teamclaw.runtime.messages import DeliveryStatus, MessageType
from tests.factories import echo_card, object_schema, small_snapshot
from tests.model_server import Completion, Failure, ModelServer, Trickle

API_KEY = "sk-test-0123456789abcdef"
PLAN_OUTPUT = {
    "type": "object",
    "properties": {
        "summary": {"type": "string"},
        "steps": {"type": "array", "items": {"type": "string"}, "minItems": 1},
    },
    "required": ["summary", "steps"],
}


def team(**constraints: Any) -> ConfigSnapshot:
    """Role a runs ``plan`` on the model; it may invoke b (``echo``) but not c (``secret``)."""
    plan = CardSpec(
        "plan",
        "Plan",
        "Make a plan for a goal",
        "analysis",
        object_schema(goal={"type": "string"}),
        PLAN_OUTPUT,
        "1.0.0",
        ("a",),
        executor="openai",
    )
    return small_snapshot(
        cards=[plan, echo_card("echo", owners=("b",)), echo_card("secret", owners=("c",))],
        roles=["a", "b", "c"],
        allowed=[("a", "b")],
        constraints=Constraints(**constraints),
    )


def answer(summary: str = "done", steps: list[str] | None = None, usage: tuple[int, int] = (40, 10)) -> Completion:
    return Completion(json.dumps({"summary": summary, "steps": steps or ["first"]}), usage=usage)


def runtime_for(
    server: ModelServer, snapshot: ConfigSnapshot | None = None, prompt_renderer: Any = None, **model: Any
) -> tuple[Runtime, Any]:
    settings = ModelSettings(
        endpoints={"default": ModelEndpoint("default", server.url, API_KEY)},
        model="test-model",
        **{"stream": False, **model},
    )
    sink = CollectingSink()
    registry = ExecutorRegistry({"offline": OfflineExecutor(), "openai": OpenAIExecutor(settings)})
    runtime = Runtime(snapshot=snapshot or team(), executors=registry, sinks=[sink], prompt_renderer=prompt_renderer)
    return runtime, sink


async def run_plan(runtime: Runtime, goal: str = "ship the release") -> Any:
    try:
        return await runtime.run_task(capability_id="plan", params={"goal": goal}, entry_role="a")
    finally:
        await runtime.stop()


def context_of(sink: CollectingSink, role: str) -> Any:
    return next(e.context for e in reversed(sink.of(EventKind.CONTEXT)) if e.context.role == role)


def tool_messages(request: dict[str, Any]) -> list[dict[str, Any]]:
    return [json.loads(m["content"]) for m in request["messages"] if m["role"] == "tool"]


async def test_the_model_gets_the_roles_prompt_and_only_the_functions_the_matrix_allows():
    with ModelServer([answer()]) as server:
        runtime, _ = runtime_for(server)
        result = await run_plan(runtime)
    assert result.success, result.error
    request = server.requests[0]
    assert request["model"] == "test-model"
    assert request["messages"][0]["role"] == "system"
    assert "A" in request["messages"][0]["content"]
    assert "ship the release" in request["messages"][1]["content"]
    offered = {t["function"]["name"]: t["function"] for t in request["tools"]}
    assert set(offered) == {"echo"}  # a may invoke b; c's secret and a's own plan are not offered
    assert offered["echo"]["parameters"] == dict(team().cards["echo"].input_schema)
    assert server.headers[0]["authorization"] == f"Bearer {API_KEY}"


async def test_a_tool_call_becomes_a_permitted_invoke_and_its_result_goes_back_to_the_model():
    with ModelServer([Completion(tool_calls=[("echo", json.dumps({"text": "hello b"}))]), answer()]) as server:
        runtime, sink = runtime_for(server)
        result = await run_plan(runtime)
    assert result.success, result.error
    assert result.data == json.loads(server.completions()[-1].content)
    (tool_result,) = tool_messages(server.requests[1])
    assert tool_result == {"success": True, "data": {"text": "hello b"}}
    invokes = [
        e.message
        for e in sink.of(EventKind.MESSAGE)
        if e.message.type == MessageType.INVOKE_REQUEST and e.message.payload["capability_id"] == "echo"
    ]
    assert [(m.sender.role, m.recipient.role) for m in invokes] == [("a", "b")]


async def test_a_tool_call_the_matrix_denies_is_refused_recorded_and_the_model_is_told():
    script = [Completion(tool_calls=[("secret", json.dumps({"text": "let me in"}))]), answer()]
    with ModelServer(script) as server:
        runtime, sink = runtime_for(server)
        result = await run_plan(runtime)
    assert result.success, result.error
    (tool_result,) = tool_messages(server.requests[1])
    assert tool_result["success"] is False
    assert tool_result["error"]["code"] == "permission_denied"
    denied = [e for e in sink.of(EventKind.MESSAGE) if e.status == DeliveryStatus.DENIED]
    assert [e.message.payload["capability_id"] for e in denied] == ["secret"]


async def test_usage_from_every_response_adds_up_in_the_context_and_the_task():
    script = [
        Completion(tool_calls=[("echo", json.dumps({"text": "one"}))], usage=(120, 15)),
        Completion(tool_calls=[("echo", json.dumps({"text": "two"}))], usage=(180, 25)),
        answer(usage=(230, 40)),
    ]
    with ModelServer(script) as server:
        runtime, sink = runtime_for(server)
        result = await run_plan(runtime)
    assert result.success, result.error
    context = context_of(sink, "a")
    usages = [c.usage for c in server.completions()]
    assert context.input_tokens == sum(u[0] for u in usages)
    assert context.output_tokens == sum(u[1] for u in usages)
    assert context.api_calls == len(usages)
    assert context.tokens_estimated is False
    ended = sink.of(EventKind.TASK)[-1].as_dict()
    echo_tokens = sum(c.input_tokens + c.output_tokens for c in [context_of(sink, "b")])
    assert ended["tokens_used"] == server.reported_tokens() + echo_tokens


async def test_a_server_without_usage_is_charged_an_estimate_marked_estimated():
    with ModelServer([Completion(json.dumps({"summary": "s", "steps": ["x"]}), usage=None)]) as server:
        runtime, sink = runtime_for(server)
        result = await run_plan(runtime)
    assert result.success, result.error
    context = context_of(sink, "a")
    assert context.tokens_estimated is True
    assert context.input_tokens > 0
    assert context.output_tokens > 0


async def test_usage_beyond_the_budget_stops_the_call_with_budget_exceeded():
    budget = 2000
    script = [Completion(tool_calls=[("echo", json.dumps({"text": "x"}))], usage=(budget, 50)), answer()]
    with ModelServer(script) as server:
        runtime, sink = runtime_for(server, team(token_budget=budget))
        result = await run_plan(runtime)
    assert not result.success
    assert result.error.code == "budget_exceeded"
    assert len(server.requests) == 1  # nothing was asked after the budget ran out
    assert any(e.alert_kind == "budget" for e in sink.of(EventKind.ALERT))


async def test_the_answer_is_capped_at_the_budget_left_and_a_cut_answer_is_budget_exceeded():
    budget = 1500
    script = [Completion('{"summary": "a very long', usage=(700, 300), finish_reason="length")]
    with ModelServer(script) as server:
        runtime, _ = runtime_for(server, team(token_budget=budget), max_output_tokens=100_000)
        result = await run_plan(runtime)
    assert not result.success
    assert result.error.code == "budget_exceeded"
    limit = server.requests[0]["max_tokens"]
    assert 0 < limit < budget
    assert result.error.details["answer_limit"] == limit


async def test_a_prompt_larger_than_the_budget_is_never_sent():
    with ModelServer([answer()]) as server:
        runtime, _ = runtime_for(server, team(token_budget=100))
        result = await run_plan(runtime, goal="x" * 2000)
    assert not result.success
    assert result.error.code == "budget_exceeded"
    assert server.requests == []


async def test_429_then_success_is_retried_once_and_succeeds():
    script = [Failure(429, "slow down", {"retry-after-ms": "20"}), answer()]
    with ModelServer(script) as server:
        runtime, sink = runtime_for(server)
        result = await run_plan(runtime)
    assert result.success, result.error
    assert len(server.requests) == 2
    assert result.attempts == 1  # the executor retried the HTTP request, not the runtime the invoke
    assert context_of(sink, "a").api_calls == 1


async def test_retries_stop_after_max_retries_with_unavailable():
    with ModelServer([Failure(503, "overloaded", {"retry-after-ms": "1"})] * 3) as server:
        runtime, _ = runtime_for(server, max_retries=2)
        result = await run_plan(runtime)
    assert not result.success
    assert result.error.code == "unavailable"
    assert len(server.requests) == 3
    assert result.error.details["status"] == 503
    assert result.error.details["attempts"] == 3
    assert result.attempts == 1  # not retried again by the runtime


async def test_a_retry_after_longer_than_the_deadline_fails_at_once():
    with ModelServer([Failure(429, "come back later", {"retry-after": "7200"}), answer()]) as server:
        runtime, _ = runtime_for(server)
        result = await run_plan(runtime)
    assert not result.success
    assert result.error.code == "unavailable"
    assert result.error.details["reason"] == "retry_after_exceeds_deadline"
    assert len(server.requests) == 1


async def test_a_refused_request_is_not_retried_and_never_shows_the_key():
    with ModelServer([answer()], api_key="sk-the-right-key") as server:
        runtime, sink = runtime_for(server)
        result = await run_plan(runtime)
    assert not result.success
    assert result.error.code == "executor_error"
    assert "401" in result.error.message
    assert "API key" in result.error.message
    assert len(server.headers) == 1
    recorded = json.dumps([dataclasses.asdict(e) for e in sink.events], default=str)
    assert API_KEY not in recorded
    assert API_KEY not in result.error.message


async def test_malformed_tool_call_json_is_reported_to_the_model_once():
    script = [
        Completion(tool_calls=[("echo", '{"text": "unclosed')]),
        Completion(tool_calls=[("echo", json.dumps({"text": "fixed"}))]),
        answer(),
    ]
    with ModelServer(script) as server:
        runtime, sink = runtime_for(server)
        result = await run_plan(runtime)
    assert result.success, result.error
    (told,) = tool_messages(server.requests[1])
    assert told["success"] is False
    assert "not valid JSON" in told["error"]["message"]
    (fixed,) = tool_messages(server.requests[2])[1:]
    assert fixed == {"success": True, "data": {"text": "fixed"}}
    (note,) = context_of(sink, "a").errors
    assert note["code"] == "executor_error"
    assert note["details"]["reason"] == "malformed_tool_call"


async def test_malformed_tool_call_json_twice_is_an_executor_error():
    script = [Completion(tool_calls=[("echo", "{oops")]), Completion(tool_calls=[("echo", "[1, 2")]), answer()]
    with ModelServer(script) as server:
        runtime, _ = runtime_for(server)
        result = await run_plan(runtime)
    assert not result.success
    assert result.error.code == "executor_error"
    assert result.error.details["reason"] == "malformed_tool_call"
    assert len(server.requests) == 2


async def test_a_model_that_never_stops_calling_tools_is_cut_off_after_max_rounds():
    def forever(body: dict[str, Any]) -> Completion:
        return Completion(tool_calls=[("echo", json.dumps({"text": f"again {len(body['messages'])}"}))])

    with ModelServer(forever) as server:
        runtime, _ = runtime_for(server, max_rounds=3)
        result = await run_plan(runtime)
    assert not result.success
    assert result.error.code == "executor_error"
    assert result.error.details == {"reason": "round_limit", "max_rounds": 3}
    assert len(server.requests) == 3


async def test_an_invalid_answer_gets_one_repair_attempt_with_the_errors():
    script = [Completion(json.dumps({"summary": "no steps"})), answer(summary="repaired")]
    with ModelServer(script) as server:
        runtime, sink = runtime_for(server)
        result = await run_plan(runtime)
    assert result.success, result.error
    assert result.data["summary"] == "repaired"
    repair = server.requests[1]["messages"][-1]
    assert repair["role"] == "user"
    assert "steps" in repair["content"]
    assert server.requests[1]["messages"][-2] == {"role": "assistant", "content": script[0].content}
    assert server.requests[1].get("tool_choice") == "none"
    (note,) = context_of(sink, "a").errors
    assert note["code"] == "output_invalid"
    assert note["details"]["reason"] == "answer_repair"


async def test_an_answer_still_invalid_after_the_repair_is_output_invalid():
    script = [Completion("I think the plan is fine."), Completion(json.dumps({"summary": 3, "steps": []}))]
    with ModelServer(script) as server:
        runtime, _ = runtime_for(server)
        result = await run_plan(runtime)
    assert not result.success
    assert result.error.code == "output_invalid"
    pointers = {e["pointer"] for e in result.error.details["errors"]}
    assert pointers == {"/summary", "/steps"}
    assert len(server.requests) == 2


async def test_an_unknown_function_name_is_answered_with_the_functions_offered():
    script = [Completion(tool_calls=[("launch_rockets", "{}")]), answer()]
    with ModelServer(script) as server:
        runtime, _ = runtime_for(server)
        result = await run_plan(runtime)
    assert result.success, result.error
    (told,) = tool_messages(server.requests[1])
    assert told["error"]["code"] == "capability_not_found"
    assert "echo" in told["error"]["message"]


class StepSink:
    """Keeps each context's current_step as it was when the event was emitted."""

    def __init__(self) -> None:
        self.steps: list[tuple[str, str]] = []

    def publish(self, event: Any) -> None:
        if event.kind == EventKind.CONTEXT:
            context = event.context
            self.steps.append((context.role, context.current_step))


async def test_a_streamed_answer_updates_progress_as_it_arrives_and_is_accounted():
    long_summary = "Step by step, " * (STREAM_PROGRESS_CHARS // 5)
    script = [
        Completion(tool_calls=[("echo", json.dumps({"text": "streamed arguments arrive in pieces"}))], usage=(90, 12)),
        answer(summary=long_summary, steps=["a", "b"], usage=(300, 400)),
    ]
    with ModelServer(script) as server:
        runtime, sink = runtime_for(server, stream=True)
        steps = StepSink()
        runtime.add_sink(steps)
        result = await run_plan(runtime)
    assert result.success, result.error
    assert all(r.get("stream") is True for r in server.requests)
    assert result.data["summary"] == long_summary
    (tool_result,) = tool_messages(server.requests[1])
    assert tool_result["data"] == {"text": "streamed arguments arrive in pieces"}
    streamed = [step for role, step in steps.steps if role == "a" and "characters received" in step]
    assert len(streamed) >= len(long_summary) // STREAM_PROGRESS_CHARS
    counts = [int(step.split(": ")[-1].split(" ")[0].replace(",", "")) for step in streamed]
    assert counts == sorted(counts)
    assert counts[0] < counts[-1]
    context = context_of(sink, "a")
    assert context.input_tokens + context.output_tokens == server.reported_tokens()


@pytest.mark.parametrize("stream", [False, True])
async def test_the_model_server_being_down_is_unavailable(stream):
    with ModelServer([]) as server:
        url = server.url
    settings = ModelSettings(endpoints={"default": ModelEndpoint("default", url, "")}, max_retries=1, stream=stream)
    registry = ExecutorRegistry({"offline": OfflineExecutor(), "openai": OpenAIExecutor(settings)})
    runtime = Runtime(snapshot=team(), executors=registry)
    result = await run_plan(runtime)
    assert not result.success
    assert result.error.code == "unavailable"
    assert result.error.details["attempts"] == 2


async def test_a_stream_that_never_ends_is_stopped_at_the_invoke_deadline():
    snapshot = small_snapshot(
        cards=list(team().cards.values()),
        roles=["a", "b", "c"],
        allowed=[("b", "a")],
        constraints=Constraints(timeout_s=1, max_retries=0),
    )
    with ModelServer([Trickle(seconds=30)]) as server:
        runtime, sink = runtime_for(server, snapshot, stream=True)
        try:
            result = await runtime.invoke(InvokeRequest("plan", {"goal": "forever"}, target_role="a"), from_role="b")
        finally:
            await runtime.stop()
    assert not result.success
    assert result.error.code == "timeout"
    assert len(server.requests) == 1
    assert context_of(sink, "a").api_calls == 0  # nothing was charged for an answer never finished


async def test_with_functions_off_the_model_is_offered_none():
    with ModelServer([answer()]) as server:
        runtime, _ = runtime_for(server, functions=False)
        result = await run_plan(runtime)
    assert result.success, result.error
    assert "tools" not in server.requests[0]
    assert "functions offered" not in server.requests[0]["messages"][1]["content"]


async def test_a_prompt_that_cannot_be_rendered_is_an_executor_error_and_nothing_is_sent():
    # The prompts app's renderer raises PromptRenderError; the model executor cannot import
    # it (the runtime sits below the apps) and catches it as the ValueError the port promises.
    from prompts.render import system_prompt

    broken = LayeredPrompt(PromptSpec("system_prompt", "1.0.0", "{{ 'a' * 1000000000 }}"))
    snapshot = dataclasses.replace(team(), prompts={"a": {"system_prompt": broken}})
    with ModelServer([answer()]) as server:
        runtime, _ = runtime_for(server, snapshot, prompt_renderer=system_prompt)
        result = await run_plan(runtime)
    assert not result.success
    assert result.error.code == "executor_error"
    assert "the prompt of a cannot be rendered" in result.error.message
    assert server.requests == []
