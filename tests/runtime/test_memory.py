"""What a model-backed agent remembers (seed 003 MemoryContext): trimming keeps the most
recent turns within the budget and never splits a function call from its results (a
property test), and a second call in one conversation gets the first call's turns."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from teamclaw.runtime import (
    CollectingSink,
    EventKind,
    ExecutorRegistry,
    OfflineExecutor,
    Runtime,
)
from teamclaw.runtime.config import ConfigSnapshot
from teamclaw.runtime.executors.chat import ModelEndpoint, ModelSettings
from teamclaw.runtime.executors.model import OpenAIExecutor
from teamclaw.runtime.memory import Memory, trim, turn_tokens
from tests.factories import echo_card, plan_card, small_snapshot
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


async def run_twice(**runtime_options: Any):
    """Agent ``a`` asks ``b`` (on a model) to plan twice in one task: the model server's
    requests, the run's result and its events."""
    plan = plan_card(executor="openai")
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
        runtime = Runtime(snapshot=snapshot, executors=registry, sinks=[sink], **runtime_options)
        try:
            result = await runtime.run_task(capability_id="twice", params={"text": "go"}, entry_role="a")
        finally:
            await runtime.stop()
    assert result.success, result.error
    return server.requests, sink


async def test_a_second_call_in_one_conversation_gets_the_first_calls_turns():
    (first, second), sink = await run_twice()
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


async def test_the_memory_budget_is_a_runtime_setting():
    """``TEAMCLAW_MEMORY_TOKENS`` reaches the runtime as ``memory_budget_tokens`` (runs.host):
    with 10 tokens nothing of the first call fits, so the second call starts afresh and the
    state says how much was left out."""
    (_first, second), sink = await run_twice(memory_budget_tokens=10)
    assert [m["role"] for m in second["messages"]] == ["system", "user"]
    context = next(e.context for e in reversed(sink.of(EventKind.CONTEXT)) if e.context.role == "b")
    state = context.state()["memory"]
    assert (state["budget_tokens"], state["trimmed"], len(state["history"])) == (10, 2, 4)
    assert Memory().budget_tokens == 4000  # the default


async def test_two_roles_with_different_memory_budgets_trim_differently():
    """A role's ``memory_tokens`` constraint (PRD §4.7) overrides the runtime's default for
    that role's contexts: ``b`` (8,000 tokens) replays its first call on the second, ``c``
    (100 tokens, the smallest a governed constraint allows) cannot fit the first call's long
    request and replays only its short answer, and ``d`` (no constraint) keeps the runtime's default. Each context's
    memory says the budget that applied and where it came from."""
    plan = plan_card(("b", "c", "d"), executor="openai")
    base = small_snapshot(
        cards=[plan, echo_card("twice", owners=("a",))],
        roles=["a", "b", "c", "d"],
        allowed=[("a", "b"), ("a", "c"), ("a", "d")],
    )
    budgets = {"b": 8000, "c": 100, "d": None}
    roles = [
        replace(spec, constraints=replace(spec.constraints, memory_tokens=budgets.get(name)))
        for name, spec in base.roles.items()
    ]
    snapshot = ConfigSnapshot.build(
        version=1,
        roles=roles,
        cards=[plan, echo_card("twice", owners=("a",))],
        invoke_allowed=sorted(base.invoke_allowed),
        tool_modes={},
    )
    offline = OfflineExecutor()
    long_goal = "first goal " + "with many details " * 30  # ~140 tokens: more than c's budget

    async def twice(call):
        for role in ("b", "c", "d"):
            await call.invoke("plan", {"goal": long_goal}, target_role=role)
            await call.invoke("plan", {"goal": "second goal"}, target_role=role)
        return {"text": "done"}

    offline.register("twice", twice)
    replies = [Completion(json.dumps({"summary": f"reply {n}"})) for n in range(6)]
    with ModelServer(replies) as server:
        settings_ = ModelSettings(
            endpoints={"default": ModelEndpoint("default", server.url, "sk-test")}, model="m", stream=False
        )
        sink = CollectingSink()
        registry = ExecutorRegistry({"offline": offline, "openai": OpenAIExecutor(settings_)})
        runtime = Runtime(snapshot=snapshot, executors=registry, sinks=[sink], memory_budget_tokens=3000)
        try:
            result = await runtime.run_task(capability_id="twice", params={"text": "go"}, entry_role="a")
        finally:
            await runtime.stop()
    assert result.success, result.error
    b_second, c_second, d_second = server.requests[1], server.requests[3], server.requests[5]
    assert "first goal" in b_second["messages"][1]["content"]  # b remembered its first call
    # c's 100 tokens hold the short answer of its first call, not the long request before it
    assert [m["role"] for m in c_second["messages"]] == ["system", "assistant", "user"]
    assert not any("first goal" in (m.get("content") or "") for m in c_second["messages"])
    assert "second goal" in c_second["messages"][-1]["content"]
    assert "first goal" in d_second["messages"][1]["content"]  # the default (3,000) holds it too
    memories = {
        e.context.role: e.context.state()["memory"] for e in sink.of(EventKind.CONTEXT) if e.context.role != "a"
    }
    assert {r: (m["budget_tokens"], m["budget_source"]) for r, m in memories.items()} == {
        "b": (8000, "role"),
        "c": (100, "role"),
        "d": (3000, "default"),
    }
    assert (memories["b"]["trimmed"], memories["c"]["trimmed"], memories["d"]["trimmed"]) == (0, 1, 0)
