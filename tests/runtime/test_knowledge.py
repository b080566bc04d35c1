"""Knowledge for model-backed agents (seed 003 KnowledgeContext) through the runtime's port:
each model-backed call asks the retriever with its params' text, the role and the task's
project; the passages reach the system prompt and the context's state records them. A failing
retriever is a recovered error, not the call's failure."""

from __future__ import annotations

import json

from teamclaw.runtime import CollectingSink, EventKind, ExecutorRegistry, OfflineExecutor, Runtime
from teamclaw.runtime.executors.chat import ModelEndpoint, ModelSettings
from teamclaw.runtime.executors.model import ModelSession, OpenAIExecutor
from teamclaw.runtime.knowledge import KnowledgeHit, knowledge_text, query_text
from tests.factories import echo_card, plan_card, small_snapshot
from tests.model_server import Completion, ModelServer


class FakeRetriever:
    def __init__(self, fail: bool = False) -> None:
        self.asked: list[dict] = []
        self.fail = fail

    async def retrieve(self, *, role, project_id, query, k, skill_id=None):
        self.asked.append({"role": role, "project_id": project_id, "query": query, "k": k})
        if skill_id is not None:
            self.asked[-1]["skill_id"] = skill_id
        if self.fail:
            raise RuntimeError("index offline")
        return [KnowledgeHit("Ops handbook", "Backups are kept for 35 days.", 3.2, "Databases")]


async def run_plan(retriever: FakeRetriever):
    snapshot = small_snapshot(cards=[plan_card(executor="openai")], allowed=[("a", "b")])
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
    assert isinstance(state["knowledge"][0].pop("message_id"), str)
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
    assert [{k: v for k, v in e.items() if k != "message_id"} for e in context.knowledge] == [
        {"capability_id": "plan", "query": "backup retention", "chunks": []}
    ]
    assert context.errors[0]["details"] == {"reason": "knowledge_unavailable", "recovered": True}


async def test_an_offline_call_retrieves_too_and_its_handler_reads_the_passages():
    """The demo's brains (offline) get the same retrieval, recorded per call (message id)."""
    seen: list = []

    async def handler(call):
        seen.append(call.knowledge)
        assert await call.retrieve_knowledge() is call.knowledge  # asked once per call
        return {"summary": "done"}

    retriever = FakeRetriever()
    card = plan_card(skill_id="planning")
    snapshot = small_snapshot(cards=[card], allowed=[("a", "b")])
    sink = CollectingSink()
    registry = ExecutorRegistry({"offline": OfflineExecutor({"plan": handler})})
    runtime = Runtime(snapshot=snapshot, executors=registry, sinks=[sink], knowledge_retriever=retriever)
    try:
        result = await runtime.run_task(capability_id="plan", params={"goal": "backup retention"}, entry_role="b")
    finally:
        await runtime.stop()
    assert result.success, result.error
    assert retriever.asked == [
        {"role": "b", "project_id": None, "query": "backup retention", "k": 3, "skill_id": "planning"}
    ]
    assert [h.source for h in seen[0]] == ["Ops handbook"]
    context = next(e.context for e in reversed(sink.of(EventKind.CONTEXT)) if e.context.role == "b")
    [entry] = context.knowledge
    request = next(e.message for e in sink.of(EventKind.MESSAGE) if e.message.recipient.role == "b")
    assert entry["message_id"] == request.id and entry["chunks"][0]["chunk"] == "Backups are kept for 35 days."


async def test_a_workflow_model_handler_gets_the_passages_in_its_system_prompt():
    """A seed 002 style model handler builds its messages from ``session.system_prompt()``."""

    async def handler(call, session: ModelSession):
        messages = [{"role": "system", "content": session.system_prompt()}, {"role": "user", "content": "Plan."}]
        return await session.answer(messages, call.card.output_schema)

    retriever = FakeRetriever()
    snapshot = small_snapshot(cards=[plan_card(executor="openai")], allowed=[("a", "b")])
    with ModelServer([Completion(json.dumps({"summary": "done"}))]) as server:
        settings_ = ModelSettings(
            endpoints={"default": ModelEndpoint("default", server.url, "sk-test")}, model="m", stream=False
        )
        executor = OpenAIExecutor(settings_, {"plan": handler})
        registry = ExecutorRegistry({"offline": OfflineExecutor(), "openai": executor})
        runtime = Runtime(snapshot=snapshot, executors=registry, knowledge_retriever=retriever)
        try:
            result = await runtime.run_task(capability_id="plan", params={"goal": "backup retention"}, entry_role="b")
        finally:
            await runtime.stop()
    assert result.success, result.error
    assert len(retriever.asked) == 1
    assert "Ops handbook / Databases:\nBackups are kept for 35 days." in server.requests[0]["messages"][0]["content"]


async def test_an_artifact_named_in_the_params_is_part_of_the_query():
    """The seed 002 reviewers are asked with ``requirement_artifact: requirement.md``: the
    retrieval's query holds the document, not just its name."""

    async def write_then_ask(call):
        call.write_artifact("requirement.md", "Nightly backups of the order database.", "text/markdown")
        result = await call.invoke("plan", {"requirement_artifact": "requirement.md"}, target_role="b")
        return {"text": result.data["summary"]}

    async def plan(call):
        return {"summary": "done"}

    retriever = FakeRetriever()
    card = plan_card(input_field="requirement_artifact")
    snapshot = small_snapshot(cards=[card, echo_card("start", owners=("a",))], allowed=[("a", "b")])
    offline = OfflineExecutor({"plan": plan, "start": write_then_ask})
    runtime = Runtime(
        snapshot=snapshot, executors=ExecutorRegistry({"offline": offline}), knowledge_retriever=retriever
    )
    try:
        result = await runtime.run_task(capability_id="start", params={"text": "go"}, entry_role="a")
    finally:
        await runtime.stop()
    assert result.success, result.error
    asked = {a["query"] for a in retriever.asked}
    assert "requirement.md\nNightly backups of the order database." in asked


class UnsureRetriever(FakeRetriever):
    """Offers ``nothing_to_search``, and it fails."""

    def nothing_to_search(self) -> bool:
        raise RuntimeError("presence look failed")


async def test_a_retriever_whose_nothing_to_search_fails_retrieves_as_usual():
    """``nothing_to_search`` is optional (FakeRetriever has none, as retrievers written before
    it); one that raises is logged and the call retrieves as usual, never failing for it."""
    retriever = UnsureRetriever()
    result, requests, context, _ = await run_plan(retriever)
    assert result.success, result.error
    assert retriever.asked and "Backups are kept for 35 days." in requests[0]["messages"][0]["content"]
    assert [e["chunks"][0]["source"] for e in context.knowledge] == ["Ops handbook"]
