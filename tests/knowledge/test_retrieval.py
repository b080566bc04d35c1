"""Retrieval into prompts with the database (seed 003 KnowledgeContext): a model-backed agent
of a role with documents gets the top 3 passages for its params (from its role's and its
task's project's sources) in its system prompt, and its context state records them."""

from __future__ import annotations

import json

import pytest
from asgiref.sync import sync_to_async
from django.template.loader import render_to_string

from capabilities.models import Project
from knowledge.retrieval import DatabaseRetriever
from knowledge.sources import Upload, add_source
from teamclaw.runtime import CardSpec, CollectingSink, EventKind, ExecutorRegistry, OfflineExecutor, Runtime
from teamclaw.runtime.context import ExecutionContext
from teamclaw.runtime.executors.chat import ModelEndpoint, ModelSettings
from teamclaw.runtime.executors.model import OpenAIExecutor
from tests.factories import object_schema, small_snapshot
from tests.knowledge.helpers import librarian, load_base
from tests.model_server import Completion, ModelServer


@pytest.mark.django_db(transaction=True)
async def test_a_model_backed_agent_gets_its_roles_and_projects_passages():
    def setup() -> None:
        load_base(librarian(), filler_sections=40)
        Project.objects.create(slug="kb", name="KB")
        add_source(
            Upload(
                "kb-notes.md",
                "text/markdown",
                b"# Retention\n\nIn project KB staging database backups are kept for 90 days.",
            ),
            role=None,
            project="kb",
            load_level="basic",
        )

    await sync_to_async(setup)()
    card = CardSpec(
        "answer",
        "Answer",
        "Answer a question",
        "analysis",
        object_schema(question={"type": "string"}),
        object_schema(answer={"type": "string"}),
        "1.0.0",
        ("librarian",),
        executor="openai",
    )
    snapshot = small_snapshot(cards=[card], roles=["librarian"], allowed=[])
    with ModelServer([Completion(json.dumps({"answer": "35 days"}))]) as server:
        settings_ = ModelSettings(
            endpoints={"default": ModelEndpoint("default", server.url, "sk-test")}, model="m", stream=False
        )
        sink = CollectingSink()
        registry = ExecutorRegistry({"offline": OfflineExecutor(), "openai": OpenAIExecutor(settings_)})
        runtime = Runtime(
            config_source=lambda project_id: snapshot,
            executors=registry,
            sinks=[sink],
            knowledge_retriever=DatabaseRetriever(),
        )
        try:
            result = await runtime.run_task(
                capability_id="answer",
                params={"question": "How long are staging database backups kept?"},
                entry_role="librarian",
                project_id="kb",
            )
        finally:
            await runtime.stop()
    assert result.success, result.error
    system = server.requests[0]["messages"][0]["content"]
    assert "staging backups are kept for 35 days" in system
    assert "In project KB staging database backups are kept for 90 days." in system
    context = next(e.context for e in reversed(sink.of(EventKind.CONTEXT)) if e.context.role == "librarian")
    [retrieval] = context.state()["knowledge"]
    assert retrieval["capability_id"] == "answer"
    assert retrieval["query"] == "How long are staging database backups kept?"
    assert len(retrieval["chunks"]) == 3
    assert {c["source"] for c in retrieval["chunks"]} >= {"operations.md", "kb-notes.md"}
    assert all(c["chunk"] in system for c in retrieval["chunks"])


def test_the_inspector_shows_what_was_retrieved():
    context = ExecutionContext("i1", "librarian", "t1", "Answer", "c1", None, 1, 0.0)
    context.knowledge.append(
        {
            "capability_id": "answer",
            "query": "How long are backups kept?",
            "chunks": [{"source": "operations.md", "heading": "Databases", "chunk": "Kept 35 days.", "score": 4.5}],
        }
    )
    html = render_to_string("monitoring/_context_state.html", {"state": context.state()})
    assert "Knowledge" in html and "1 retrieval" in html
    assert "operations.md" in html and "Databases" in html and "Kept 35 days." in html and "4.5" in html


@pytest.mark.django_db(transaction=True)
async def test_with_no_source_at_all_a_call_retrieves_nothing_without_a_database_look(monkeypatch):
    """Every capability call retrieves; with no source in the database the retriever notes it
    and answers [] on the loop for PRESENCE_TTL_S, and a source saved here is retrieved from
    the next call on (knowledge.retrieval)."""
    from knowledge import retrieval

    retrieval.SOURCE_PRESENCE.note(True)  # whatever an earlier test's look found: look again
    looks: list[str] = []
    real = retrieval.retrieve
    monkeypatch.setattr(retrieval, "retrieve", lambda *args: looks.append(args[0]) or real(*args))
    retriever = DatabaseRetriever()
    ask = {"role": "pm", "project_id": None, "query": "staging backups retention", "k": 3}
    assert await retriever.retrieve(**ask) == []
    assert await retriever.retrieve(**ask) == []
    assert looks == ["pm"]  # the second call did not leave the loop
    await sync_to_async(add_source)(
        Upload("pm-notes.md", "text/markdown", b"# Retention\n\nStaging backups are kept for 90 days."),
        role="pm",
        project=None,
        load_level="basic",
    )
    hits = await retriever.retrieve(**ask)
    assert [h.source for h in hits] == ["pm-notes.md"]
    monkeypatch.setattr(retrieval, "PRESENCE_TTL_S", 0.0)  # another process's source: seen after the TTL
    retrieval.SOURCE_PRESENCE.note(False)
    assert [h.source for h in await retriever.retrieve(**ask)] == ["pm-notes.md"]
