"""What a model-backed agent remembers (seed 003 MemoryContext): trimming keeps the most
recent turns within the budget and never splits a function call from its results (a
property test), and a second call in one conversation gets the first call's turns."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from teamclaw.runtime import (
    CardSpec,
    CollectingSink,
    EventKind,
    ExecutorRegistry,
    OfflineExecutor,
    Runtime,
)
from teamclaw.runtime.executors.chat import ModelEndpoint, ModelSettings
from teamclaw.runtime.executors.model import OpenAIExecutor
from teamclaw.runtime.memory import Memory, trim, turn_tokens
from tests.factories import echo_card, object_schema, small_snapshot
from tests.model_server import Completion, ModelServer


@st.composite
def histories(draw) -> list[dict[str, Any]]:
    """Chat turns: user and assistant texts, and assistant function calls each followed by
    its results (sometimes an orphan result, as a damaged history could hold)."""
    turns: list[dict[str, Any]] = []
    for n in range(draw(st.integers(0, 25))):
        kind = draw(st.sampled_from(["user", "assistant", "calls", "orphan"]))
        text = "x" * draw(st.integers(0, 400))
        if kind == "calls":
            ids = [f"call-{n}-{k}" for k in range(draw(st.integers(1, 3)))]
            turns.append({"role": "assistant", "content": "", "tool_calls": [{"id": i} for i in ids]})
            turns += [{"role": "tool", "tool_call_id": i, "content": text} for i in ids]
        elif kind == "orphan":
            turns.append({"role": "tool", "tool_call_id": f"lost-{n}", "content": text})
        else:
            turns.append({"role": kind, "content": text})
    return turns


@settings(max_examples=300, deadline=None)
@given(histories(), st.integers(0, 2000))
def test_trimming_keeps_recent_turns_and_function_calls_with_their_results(history, budget):
    kept = trim(history, budget)
    assert sum(turn_tokens(t) for t in kept) <= budget
    calls = {c["id"] for t in kept for c in t.get("tool_calls", [])}
    results = {t["tool_call_id"] for t in kept if t["role"] == "tool"}
    assert calls == results  # never a result without its call, nor a call without its results
    # What is kept is the most recent part: every kept turn appears in order, and nothing
    # newer than the oldest kept turn was dropped unless it was an orphan result.
    positions = [next(i for i, t in enumerate(history) if t is k) for k in kept]
    assert positions == sorted(positions)
    if kept:
        newer = history[positions[0] :]
        dropped = [t for t in newer if not any(t is k for k in kept)]
        assert all(t["role"] == "tool" and t["tool_call_id"].startswith("lost-") for t in dropped)


def test_memory_state_is_json_and_counts_what_was_left_out():
    memory = Memory(budget_tokens=10)
    memory.remember([{"role": "user", "content": "a" * 200}, {"role": "assistant", "content": "ok"}])
    assert memory.recall() == [{"role": "assistant", "content": "ok"}]
    state = json.loads(json.dumps(memory.state()))
    assert state["trimmed"] == 1 and len(state["history"]) == 2


async def test_a_second_call_in_one_conversation_gets_the_first_calls_turns():
    plan = CardSpec(
        "plan",
        "Plan",
        "Make a plan",
        "analysis",
        object_schema(goal={"type": "string"}),
        object_schema(summary={"type": "string"}),
        "1.0.0",
        ("b",),
        executor="openai",
    )
    snapshot = small_snapshot(cards=[plan, echo_card("twice", owners=("a",))], allowed=[("a", "b")])
    offline = OfflineExecutor()

    async def twice(call):
        first = await call.invoke("plan", {"goal": "first goal"}, target_role="b")
        second = await call.invoke("plan", {"goal": "second goal"}, target_role="b")
        return {"text": f"{first.data['summary']} / {second.data['summary']}"}

    offline.register("twice", twice)
    replies = [Completion(json.dumps({"summary": "one"})), Completion(json.dumps({"summary": "two"}))]
    with ModelServer(replies) as server:
        settings_ = ModelSettings(
            endpoints={"default": ModelEndpoint("default", server.url, "sk-test")}, model="m", stream=False
        )
        sink = CollectingSink()
        registry = ExecutorRegistry({"offline": offline, "openai": OpenAIExecutor(settings_)})
        runtime = Runtime(snapshot=snapshot, executors=registry, sinks=[sink])
        try:
            result = await runtime.run_task(capability_id="twice", params={"text": "go"}, entry_role="a")
        finally:
            await runtime.stop()
    assert result.success, result.error
    first, second = server.requests
    assert [m["role"] for m in first["messages"]] == ["system", "user"]
    remembered = second["messages"][1:-1]
    assert "first goal" in remembered[0]["content"]
    assert json.loads(remembered[1]["content"]) == {"summary": "one"}
    assert "second goal" in second["messages"][-1]["content"]
    # The context's state (what snapshots store and the inspector shows) carries the memory.
    context = next(e.context for e in reversed(sink.of(EventKind.CONTEXT)) if e.context.role == "b")
    state = context.state()["memory"]
    assert [t["role"] for t in state["history"]] == ["user", "assistant", "user", "assistant"]
    assert all("memory" in s.snapshot.state for s in sink.of(EventKind.SNAPSHOT))
