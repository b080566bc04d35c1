"""Knowledge for model-backed agents (seed 003 KnowledgeContext) through the runtime's port:
each model-backed call asks the retriever with its params' text, the role and the task's
project; the passages reach the system prompt and the context's state records them. A failing
retriever is a recovered error, not the call's failure."""

from __future__ import annotations

import json

from teamclaw.runtime import CardSpec, CollectingSink, EventKind, ExecutorRegistry, OfflineExecutor, Runtime
from teamclaw.runtime.executors.chat import ModelEndpoint, ModelSettings
from teamclaw.runtime.executors.model import OpenAIExecutor
from teamclaw.runtime.knowledge import KnowledgeHit, knowledge_text, query_text
from tests.factories import object_schema, small_snapshot
from tests.model_server import Completion, ModelServer


class FakeRetriever:
    def __init__(self, fail: bool = False) -> None:
        self.asked: list[dict] = []
        self.fail = fail

    async def retrieve(self, *, role, project_id, query, k):
        self.asked.append({"role": role, "project_id": project_id, "query": query, "k": k})
        if self.fail:
            raise RuntimeError("index offline")
        return [KnowledgeHit("Ops handbook", "Backups are kept for 35 days.", 3.2, "Databases")]


def plan_card() -> CardSpec:
    return CardSpec(
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


async def run_plan(retriever: FakeRetriever):
    snapshot = small_snapshot(cards=[plan_card()], allowed=[("a", "b")])
    with ModelServer([Completion(json.dumps({"summary": "done"}))]) as server:
        settings_ = ModelSettings(
            endpoints={"default": ModelEndpoint("default", server.url, "sk-test")}, model="m", stream=False
        )
        sink = CollectingSink()
        registry = ExecutorRegistry({"offline": OfflineExecutor(), "openai": OpenAIExecutor(settings_)})
        runtime = Runtime(snapshot=snapshot, executors=registry, sinks=[sink], knowledge_retriever=retriever)
        try:
            result = await runtime.run_task(capability_id="plan", params={"goal": "backup retention"}, entry_role="b")
        finally:
            await runtime.stop()
    context = next(e.context for e in reversed(sink.of(EventKind.CONTEXT)) if e.context.role == "b")
    return result, server.requests, context, sink


def test_query_text_and_knowledge_text():
    assert query_text({"goal": "a", "n": 3, "more": [{"x": " b "}, "c"], "blank": " "}) == "a\nb\nc"
    assert knowledge_text([]) == ""
    text = knowledge_text([KnowledgeHit("Doc", "Text.", 1.0, "Head")])
    assert "[1] Doc / Head:\nText." in text


async def test_a_model_backed_call_gets_the_retrieved_passages_in_its_system_prompt():
    retriever = FakeRetriever()
    result, requests, context, sink = await run_plan(retriever)
    assert result.success, result.error
    assert retriever.asked == [{"role": "b", "project_id": None, "query": "backup retention", "k": 3}]
    system = requests[0]["messages"][0]
    assert system["role"] == "system"
    assert "Ops handbook / Databases:\nBackups are kept for 35 days." in system["content"]
    state = context.state()
    assert state["knowledge"] == [
        {
            "capability_id": "plan",
            "query": "backup retention",
            "chunks": [
                {
                    "source": "Ops handbook",
                    "heading": "Databases",
                    "chunk": "Backups are kept for 35 days.",
                    "score": 3.2,
                }
            ],
        }
    ]
    assert all("knowledge" in s.snapshot.state for s in sink.of(EventKind.SNAPSHOT))


async def test_a_failing_retriever_is_a_recovered_error():
    result, requests, context, _ = await run_plan(FakeRetriever(fail=True))
    assert result.success, result.error
    assert "Knowledge" not in requests[0]["messages"][0]["content"]
    assert context.knowledge == [{"capability_id": "plan", "query": "backup retention", "chunks": []}]
    assert context.errors[0]["details"] == {"reason": "knowledge_unavailable", "recovered": True}
