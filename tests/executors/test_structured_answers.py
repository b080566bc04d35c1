"""Structured answers (issue 15 point 3): every model call for a capability asks for its
``output_schema`` through ``response_format``, strict only when the schema allows it; an
endpoint can be switched off; a server refusing the parameter is answered through the prompt
and never asked again. Against the real chat-completions server of tests/model_server.py."""

from __future__ import annotations

import copy
import dataclasses
import json
import logging
from typing import Any

import pytest

from teamclaw.runtime import (
    CardSpec,
    CollectingSink,
    ConfigSnapshot,
    EventKind,
    ExecutorRegistry,
    OfflineExecutor,
    Runtime,
)
from teamclaw.runtime.executors.chat import ModelSettings
from teamclaw.runtime.executors.model import OpenAIExecutor
from teamclaw.runtime.executors.structured import schema_name, strict_compatible
from tests.executors.test_openai_executor import PLAN_OUTPUT, answer, context_of, runtime_for, team
from tests.factories import echo_card, object_schema, small_snapshot
from tests.model_server import Completion, Failure, ModelServer

STRICT_OUTPUT = {
    "type": "object",
    "properties": {
        "summary": {"type": "string", "description": "one line"},
        "steps": {"type": "array", "items": {"type": "string"}, "minItems": 1},
        "risk": {"type": ["string", "null"], "enum": ["low", "high", None]},
        "owners": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"role": {"type": "string"}, "share": {"type": "number", "minimum": 0}},
                "required": ["role", "share"],
                "additionalProperties": False,
            },
        },
    },
    "required": ["summary", "steps", "risk", "owners"],
    "additionalProperties": False,
}
REFUSAL = Failure(400, "Unrecognized request argument supplied: response_format")


def strict_team() -> ConfigSnapshot:
    """Role a runs ``plan.strict`` (a strict-compatible output schema) on the model."""
    card = CardSpec(
        "plan.strict",
        "Strict plan",
        "Make a plan for a goal",
        "analysis",
        object_schema(goal={"type": "string"}),
        STRICT_OUTPUT,
        "1.0.0",
        ("a",),
        executor="openai",
    )
    return small_snapshot(cards=[card, echo_card("echo", owners=("b",))], roles=["a", "b"], allowed=[("a", "b")])


def model_calls(sink: Any, role: str = "a") -> list[dict[str, Any]]:
    return [m for m in context_of(sink, role).messages if m.get("type") == "model_call"]


async def run(runtime: Runtime, capability_id: str = "plan", times: int = 1) -> list[Any]:
    try:
        return [
            await runtime.run_task(capability_id=capability_id, params={"goal": f"goal {i}"}, entry_role="a")
            for i in range(times)
        ]
    finally:
        await runtime.stop()


async def test_every_answer_request_carries_the_cards_schema_and_function_calling_still_works():
    script = [Completion(tool_calls=[("echo", json.dumps({"text": "hi"}))]), answer()]
    with ModelServer(script) as server:
        runtime, sink = runtime_for(server)
        (result,) = await run(runtime)
    assert result.success, result.error
    assert len(server.requests) == 2
    for request in server.requests:  # functions are offered alongside, and still called
        assert [t["function"]["name"] for t in request["tools"]] == ["echo"]
        assert request["response_format"] == {
            "type": "json_schema",
            "json_schema": {"name": "plan", "schema": PLAN_OUTPUT, "strict": False},
        }
    assert json.loads(next(m for m in server.requests[1]["messages"] if m["role"] == "tool")["content"])["success"]
    assert [c["answer_format"] for c in model_calls(sink)] == ["json_schema", "json_schema"]
    assert "JSON Schema" in server.requests[0]["messages"][1]["content"]  # the prompt-only path is kept
    # issue 30: a snapshot per model call, holding that call (a replay step shows it)
    taken = [e.snapshot for e in sink.of(EventKind.SNAPSHOT) if e.snapshot.trigger.startswith("model call ")]
    assert [s.label for s in taken] == ["1", "2"]
    held = [[m for m in s.state["input_context"]["messages"] if m["type"] == "model_call"] for s in taken]
    assert [len(calls) for calls in held] == [1, 2]


async def test_a_strict_compatible_schema_is_sent_strict_and_unchanged():
    reply = {"summary": "s", "steps": ["one"], "risk": None, "owners": [{"role": "b", "share": 1}]}
    with ModelServer([Completion(json.dumps(reply))]) as server:
        runtime, sink = runtime_for(server, strict_team())
        (result,) = await run(runtime, "plan.strict")
    assert result.success, result.error
    sent = server.requests[0]["response_format"]["json_schema"]
    assert sent == {"name": "plan_strict", "schema": STRICT_OUTPUT, "strict": True}
    assert [c["answer_format"] for c in model_calls(sink)] == ["json_schema_strict"]


async def test_the_repair_request_asks_for_the_schema_too():
    script = [Completion(json.dumps({"summary": "no steps"})), answer(summary="repaired")]
    with ModelServer(script) as server:
        runtime, _ = runtime_for(server)
        (result,) = await run(runtime)
    assert result.success, result.error
    assert server.requests[1]["tool_choice"] == "none"
    assert server.requests[1]["response_format"]["json_schema"]["schema"] == PLAN_OUTPUT


async def test_a_streamed_answer_asks_for_the_schema_too():
    with ModelServer([answer()]) as server:
        runtime, sink = runtime_for(server, stream=True)
        (result,) = await run(runtime)
    assert result.success, result.error
    assert server.requests[0]["stream"] is True
    assert server.requests[0]["response_format"]["type"] == "json_schema"
    assert model_calls(sink)[0]["answer_format"] == "json_schema"


@pytest.mark.parametrize(
    ("conf", "endpoint"),
    [
        ({"MODEL_STRUCTURED_OUTPUT": False}, None),  # the default endpoint (OPENAI_BASE_URL)
        ({"MODEL_ENDPOINTS": {"local": {"structured_output": False}}}, "local"),
    ],
    ids=["default-endpoint", "named-endpoint"],
)
async def test_an_endpoint_switched_off_is_never_sent_response_format(conf, endpoint):
    with ModelServer([answer()]) as server:
        for spec in conf.get("MODEL_ENDPOINTS", {}).values():
            spec["base_url"] = server.url
        settings = ModelSettings.from_mapping(
            {"OPENAI_BASE_URL": server.url, "MODEL": "test-model", "MODEL_STREAM": False, **conf}
        )
        snapshot = team()
        if endpoint:
            plan = dataclasses.replace(snapshot.cards["plan"], executor_config={"endpoint": endpoint})
            snapshot = dataclasses.replace(snapshot, cards={**snapshot.cards, "plan": plan})
        sink = CollectingSink()
        registry = ExecutorRegistry({"offline": OfflineExecutor(), "openai": OpenAIExecutor(settings)})
        (result,) = await run(Runtime(snapshot=snapshot, executors=registry, sinks=[sink]))
    assert result.success, result.error
    assert len(server.requests) == 1
    assert "response_format" not in server.requests[0]
    assert model_calls(sink)[0]["answer_format"] == "prompt"
    assert model_calls(sink)[0]["endpoint"] == server.url


def final_contexts(sink: CollectingSink, role: str = "a") -> list[Any]:
    """The last state of each of ``role``'s contexts, in the order they started."""
    last: dict[str, Any] = {}
    for event in sink.of(EventKind.CONTEXT):
        if event.context.role == role:
            last[event.context.id] = event.context
    return list(last.values())


async def test_a_server_refusing_response_format_is_answered_through_the_prompt_and_not_asked_again(caplog):
    with ModelServer([answer(), answer()], refuse={"response_format": REFUSAL}) as server:
        runtime, sink = runtime_for(server)
        with caplog.at_level(logging.WARNING, logger="teamclaw.runtime.executors.chat"):
            first, second = await run(runtime, times=2)
    assert first.success, first.error
    assert second.success, second.error
    # refused; the same request without it; the next call never tries it again
    assert ["response_format" in r for r in server.requests] == [True, False, False]
    assert [r.status for r in server.replies if isinstance(r, Failure)] == [400]
    without = {k: v for k, v in server.requests[0].items() if k != "response_format"}
    assert server.requests[1] == without
    one, two = final_contexts(sink)
    (note,) = [e for e in one.errors if e["details"].get("reason") == "response_format_unsupported"]
    assert note["details"]["recovered"] is True
    assert note["details"]["status"] == 400
    assert "refused response_format" in note["message"]
    assert two.errors == []
    assert [m["answer_format"] for c in (one, two) for m in c.messages if m.get("type") == "model_call"] == [
        "prompt",
        "prompt",
    ]
    assert any("refused response_format" in r.getMessage() for r in caplog.records)


async def test_a_refusal_with_functions_offered_leaves_calls_without_functions_asking_for_the_schema():
    snapshot = team()
    bare = dataclasses.replace(snapshot.cards["plan"], capability_id="bare", executor_config={"functions": False})
    snapshot = dataclasses.replace(snapshot, cards={**snapshot.cards, "bare": bare})

    def brain(body: dict[str, Any]) -> Completion | Failure:
        if "tools" in body and "response_format" in body:  # a server that cannot do both at once
            return Failure(400, "Response format constraints are not supported together with tools")
        return answer()

    with ModelServer(brain) as server:
        runtime, _ = runtime_for(server, snapshot)
        try:
            results = [
                await runtime.run_task(capability_id=cid, params={"goal": "g"}, entry_role="a")
                for cid in ("plan", "plan", "bare")
            ]
        finally:
            await runtime.stop()
    assert all(r.success for r in results), [r.error for r in results]
    sent = [("tools" in r, "response_format" in r) for r in server.requests]
    assert sent == [(True, True), (True, False), (True, False), (False, True)]


async def test_a_400_about_something_else_is_not_blamed_on_response_format():
    unrelated = Failure(400, "messages: unsupported content type 'audio'")
    with ModelServer([unrelated, unrelated, answer()]) as server:
        runtime, sink = runtime_for(server)
        (result,) = await run(runtime)
        assert not result.success
        assert result.error.code == "executor_error"
        assert "unsupported content type" in result.error.message
    assert ["response_format" in r for r in server.requests] == [True, False]  # tried once without, then gave up
    reasons = [e["details"].get("reason") for e in context_of(sink, "a").errors]
    assert "response_format_unsupported" not in reasons


async def test_a_400_that_names_no_parameter_is_not_retried():
    with ModelServer([Failure(400, "context length exceeded"), answer()]) as server:
        runtime, _ = runtime_for(server)
        (result,) = await run(runtime)
    assert not result.success
    assert result.error.code == "executor_error"
    assert len(server.requests) == 1


@pytest.mark.parametrize(
    ("change", "strict"),
    [
        (lambda s: None, True),
        (lambda s: s.pop("additionalProperties"), False),
        (lambda s: s["required"].remove("risk"), False),
        (lambda s: s["properties"]["owners"]["items"].update(additionalProperties=True), False),
        (lambda s: s["properties"]["owners"]["items"]["required"].pop(), False),
        (lambda s: s["properties"]["summary"].update(minLength=1), False),
        (lambda s: s["properties"]["summary"].update(pattern="^a"), False),
        (lambda s: s["properties"]["summary"].update(format="date-time"), False),
        (lambda s: s["properties"].update(anything={}), False),
        (lambda s: s.update({"$schema": "https://json-schema.org/draft/2020-12/schema"}), False),
        (lambda s: s["properties"]["steps"].update(items=[{"type": "string"}]), False),
    ],
    ids=[
        "fits",
        "open-root",
        "optional-field",
        "open-nested-object",
        "nested-optional-field",
        "minLength",
        "pattern",
        "format",
        "untyped-property",
        "$schema",
        "tuple-items",
    ],
)
def test_strict_is_decided_from_the_schema_as_written(change, strict):
    schema = copy.deepcopy(STRICT_OUTPUT)
    change(schema)
    assert strict_compatible(schema) is strict


def test_the_builtin_cards_schemas_are_sent_non_strict_rather_than_rewritten():
    assert strict_compatible(PLAN_OUTPUT) is False
    assert strict_compatible({"type": "array", "items": {"type": "string"}}) is False  # strict needs an object root


@pytest.mark.parametrize(
    ("capability_id", "name"),
    [("plan", "plan"), ("requirement_review.review_document", "requirement_review_review_document"), ("...", "answer")],
)
def test_the_schema_name_comes_from_the_capability_id(capability_id, name):
    assert schema_name(capability_id) == name
    assert len(schema_name("x" * 100)) == 64
