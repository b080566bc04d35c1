"""What Langfuse and Phoenix need from TeamClaw's traces (``monitoring.tracing``), received by
the real OTLP/HTTP receiver (``tests/otlp_receiver.py``) from a real runtime host talking to a
real chat-completions server (``tests/model_server.py``):

- chat spans carry ``gen_ai.response.model`` and ``gen_ai.response.id`` as the server answered
  them (streamed or not);
- with ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`` they carry the messages
  sent and the answer (``gen_ai.input.messages`` / ``gen_ai.output.messages``, the GenAI
  conventions' JSON); without it, neither;
- a task waiting for its operator (the interview's answers) has a root span exported while it
  waits, with ``teamclaw.task.status`` ``waiting_user``; the rest of the task is a second root
  segment in the same trace, linked to the first, that ends with the task's status.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from monitoring.models import Task
from monitoring.tracing import CAPTURE_CONTENT, start_tracing
from teamclaw.runtime import ExecutorRegistry, OfflineExecutor, Runtime
from teamclaw.runtime.executors.chat import ModelEndpoint, ModelSettings
from teamclaw.runtime.executors.model import OpenAIExecutor
from tests.executors.test_drafting_on_a_model import DraftingBrain
from tests.executors.test_openai_executor import answer, team
from tests.helpers import wait_for_task
from tests.model_server import Completion, ModelServer, host_on_model
from tests.monitoring.test_otel_traces import OTEL_VARIABLES
from tests.otlp_receiver import OtlpReceiver, ReceivedSpan
from tests.runs.test_interview_api import IDEA_EN, start, wait_for

ANSWERING_MODEL = "review-model-2026-01-15"
"""The model the server says answered (a dated version of the ``review-model`` asked for)."""


@pytest.fixture
def receiver(monkeypatch):
    for name in (*OTEL_VARIABLES, CAPTURE_CONTENT):
        monkeypatch.delenv(name, raising=False)
    with OtlpReceiver() as running:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", running.url)
        yield running


class IdentifiedBrain:
    """``DraftingBrain``'s answers, each with its own completion id, from ``ANSWERING_MODEL``."""

    def __init__(self) -> None:
        self.drafting = DraftingBrain(project_type="testing")
        self.answers: list[Completion] = []

    def __call__(self, body: dict[str, Any]) -> Completion:
        reply = self.drafting(body)
        reply.id, reply.model = f"chatcmpl-{len(self.answers) + 1}", ANSWERING_MODEL
        self.answers.append(reply)
        return reply


def roots_of(spans: list[ReceivedSpan], task_id: str) -> list[ReceivedSpan]:
    return sorted((s for s in spans if s.trace_id == task_id and not s.parent_id), key=lambda s: s.start_ns)


def test_a_waiting_task_is_exported_while_it_waits_and_its_chats_carry_answer_and_content(
    api, transactional_db, builtin, settings, receiver, monkeypatch
):
    monkeypatch.setenv(CAPTURE_CONTENT, "true")
    brain = IdentifiedBrain()
    with host_on_model(settings, brain, MODEL_STREAM=False) as model:
        tracing = model.host.tracing
        assert tracing is not None and tracing.capture_content
        task_id = start(api, description=IDEA_EN)
        wait_for(api, model.host, task_id, "interview")  # the task now waits for its operator
        tracing.provider.force_flush()
        spans = receiver.wait_for(lambda got: roots_of(got, task_id))
        waiting = Task.objects.get(pk=task_id)
        api.post(f"/api/v1/tasks/{task_id}/cancel", {}, format="json")
        wait_for_task(model.host, task_id)
        tracing.provider.force_flush()
        spans = receiver.wait_for(lambda got: len(roots_of(got, task_id)) == 2)
        sent = [request["messages"] for request in model.server.requests]

    assert waiting.status == "running"  # the first root arrived while the task was waiting
    first, rest = roots_of(spans, task_id)
    assert first.name == rest.name == "invoke_workflow requirement_review"
    assert first["teamclaw.task.status"] == "waiting_user"
    assert "interview" in first["teamclaw.task.waiting_for"]
    assert first.status[0] == "STATUS_CODE_UNSET" and "teamclaw.task.segment" not in first.attributes
    assert rest["teamclaw.task.segment"] == 2 and rest.links == ((task_id, first.span_id),)
    assert first.end_ns <= rest.start_ns
    assert rest["teamclaw.task.status"] == "terminated" and rest.status[0] == "STATUS_CODE_ERROR"
    assert rest["gen_ai.workflow.name"] == first["gen_ai.workflow.name"] == "requirement_review"

    chats = sorted((s for s in spans if s.get("gen_ai.operation.name") == "chat"), key=lambda s: s.start_ns)
    assert len(chats) == len(brain.answers) == len(sent) >= 2
    for chat, reply, messages in zip(chats, brain.answers, sent, strict=True):
        assert chat["gen_ai.request.model"] == "review-model"
        assert chat["gen_ai.response.model"] == ANSWERING_MODEL
        assert chat["gen_ai.response.id"] == reply.id
        captured = json.loads(chat["gen_ai.input.messages"])
        assert [m["role"] for m in captured] == [m["role"] for m in messages]
        assert [m["parts"] for m in captured] == [[{"type": "text", "content": m["content"]}] for m in messages]
        assert json.loads(chat["gen_ai.output.messages"]) == [
            {"role": "assistant", "parts": [{"type": "text", "content": reply.content}], "finish_reason": "stop"}
        ]
    assert IDEA_EN in chats[0]["gen_ai.input.messages"]


async def test_without_the_opt_in_chats_carry_the_answers_identity_but_no_content(receiver):
    sink = start_tracing("worker")
    assert sink is not None and not sink.capture_content
    replies = [
        Completion(tool_calls=[("echo", json.dumps({"text": "hi"}))], id="chatcmpl-a", model=ANSWERING_MODEL),
        answer(),  # the server's defaults: id chatcmpl-test, the model asked for
    ]
    with ModelServer(replies) as server:
        model_settings = ModelSettings(
            endpoints={"default": ModelEndpoint("default", server.url, "sk-test")},
            model="test-model",
            stream=True,  # the id and model come from the chunks
            capture_content=sink.capture_content,
        )
        executors = ExecutorRegistry({"offline": OfflineExecutor(), "openai": OpenAIExecutor(model_settings)})
        runtime = Runtime(snapshot=team(), executors=executors, sinks=[sink])
        try:
            result = await runtime.run_task(capability_id="plan", params={"goal": "ship it"}, entry_role="a")
        finally:
            await runtime.stop()
    assert result.success, result.error
    sink.close()
    spans = receiver.wait_for(lambda got: len([s for s in got if s.get("gen_ai.operation.name") == "chat"]) == 2)
    chats = sorted((s for s in spans if s.get("gen_ai.operation.name") == "chat"), key=lambda s: s.start_ns)
    assert [(c["gen_ai.response.id"], c["gen_ai.response.model"]) for c in chats] == [
        ("chatcmpl-a", ANSWERING_MODEL),
        ("chatcmpl-test", "test-model"),
    ]
    for chat in chats:
        assert not {"gen_ai.input.messages", "gen_ai.output.messages"} & set(chat.attributes)
