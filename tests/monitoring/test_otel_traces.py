"""OpenTelemetry traces (``monitoring.tracing``) received by a real OTLP/HTTP receiver
(``tests/otlp_receiver.py``, protobuf bodies parsed with the official ``opentelemetry-proto``):

- a requirement review run through the API and the process's runtime host arrives as one
  trace whose id is the task id: the task's root, every invoke under the invoke its caller
  was serving, main's ``file_write`` under main's invoke, GenAI attributes on every span;
- a model-backed call (the fake OpenAI-compatible server) has ``chat`` spans with the model
  and the reported token usage (an estimate is never put in ``gen_ai.usage``), and the
  invoke the model's function call made is a child of the calling agent's invoke;
- a refused invoke carries ``error.type`` = the PRD §4.4 error code, and so do a refused
  hook, a denied tool (``tool_denied``) and a model server that keeps failing
  (``unavailable``); a served hook is a span from its ``hook_event`` to its ``status_update``;
- a resumed attempt of a task does not crash the tracing and lands in the same trace;
- a ``runtime_worker`` OS process exports its tasks' spans (a refused API invoke too) with
  ``OTEL_EXPORTER_OTLP_HEADERS``;
- without the endpoint variable nothing is built, installed or sent.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import socket
import threading
from typing import Any

import pytest
from django.core.exceptions import ImproperlyConfigured
from opentelemetry import trace

from monitoring.models import Task
from monitoring.tracing import TraceSink, start_tracing, traces_endpoint
from runs import host as host_module
from runs.models import RuntimeWorker
from runs.tasks import sample_requirement
from teamclaw.runtime import (
    CollectingSink,
    ExecutorRegistry,
    HookEvent,
    InvokeRequest,
    OfflineExecutor,
    Runtime,
    ToolMode,
)
from teamclaw.runtime.executors.chat import ModelEndpoint, ModelSettings
from teamclaw.runtime.executors.model import OpenAIExecutor
from teamclaw.runtime.resume import RecordedStep, ResumeJournal
from teamclaw.workflows import register_offline_handlers
from tests.documents import BOOKSTORE
from tests.executors.test_openai_executor import answer, team
from tests.factories import builtin_snapshot, echo_card, small_snapshot
from tests.helpers import wait_for_task
from tests.model_server import Completion, Failure, ModelServer
from tests.otlp_receiver import OtlpReceiver, ReceivedSpan
from tests.processes import manage, process_env, wait_until

OTEL_VARIABLES = (
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_SDK_DISABLED",
    "OTEL_TRACES_EXPORTER",
    "OTEL_EXPORTER_OTLP_PROTOCOL",
    "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
)


@pytest.fixture
def receiver(monkeypatch):
    for name in OTEL_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    with OtlpReceiver() as running:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", running.url)
        monkeypatch.setenv("OTEL_SERVICE_NAME", "teamclaw-test")
        yield running


@pytest.fixture
def tracing(receiver):
    """A ``TraceSink`` exporting to ``receiver`` (closed at the end even when the test fails)."""
    sink = start_tracing("worker")
    assert sink is not None
    yield sink
    sink.close()


@pytest.fixture
def traced_host(receiver, transactional_db, builtin):
    host_module.reset_host()
    host = host_module.get_host()
    yield host
    host_module.reset_host()


def by_id(spans: list[ReceivedSpan]) -> dict[str, ReceivedSpan]:
    return {s.span_id: s for s in spans}


def assert_well_formed_tree(spans: list[ReceivedSpan]) -> ReceivedSpan:
    """One trace, one root, every parent present, every child inside its parent's time and
    every invoke under the call its caller instance was serving; returns the root."""
    spans_by_id = by_id(spans)
    assert len({s.trace_id for s in spans}) == 1
    (root,) = [s for s in spans if not s.parent_id]
    for span in spans:
        assert span.get("gen_ai.operation.name") in {"invoke_workflow", "invoke_agent", "execute_tool", "chat"}
        assert span["teamclaw.task.id"] == root["teamclaw.task.id"]
        if span is root:
            continue
        parent = spans_by_id[span.parent_id]
        assert parent.start_ns <= span.start_ns <= span.end_ns <= parent.end_ns, (span.name, parent.name)
        caller = span.get("teamclaw.caller.instance_id")
        if span["gen_ai.operation.name"] == "invoke_agent" and not caller:
            assert parent is root  # from outside any agent: the operator, the API
        elif span["gen_ai.operation.name"] == "invoke_agent":
            assert parent["teamclaw.instance.id"] == caller  # the call its caller was serving
        else:  # a tool use or a model call: the agent's own invoke
            assert parent["gen_ai.operation.name"] == "invoke_agent"
            assert parent["teamclaw.instance.id"] == span["teamclaw.instance.id"]
    return root


def test_a_review_through_the_api_arrives_as_one_span_tree_with_genai_attributes(api, traced_host, receiver):
    assert isinstance(traced_host.tracing, TraceSink)
    response = api.post("/api/v1/tasks", {"workflow": "requirement_review", "input_markdown": BOOKSTORE}, format="json")
    assert response.status_code == 201, response.content
    task_id = response.json()["task_id"]
    assert wait_for_task(traced_host, task_id).status == "completed"
    traced_host.tracing.provider.force_flush()
    spans = receiver.wait_for(lambda got: any(not s.parent_id and s.trace_id == task_id for s in got))
    spans = [s for s in spans if s.trace_id == task_id]

    root = assert_well_formed_tree(spans)
    assert root.name == "invoke_workflow requirement_review"
    assert root["gen_ai.workflow.name"] == "requirement_review"
    assert root["teamclaw.task.status"] == "completed"
    assert root["teamclaw.task.tokens_used"] > 0
    assert root["teamclaw.task.tokens_estimated"] is True  # offline agents: every token an estimate
    assert root["teamclaw.outcome.verdict"] in {"clean", "findings"}
    assert root.resource["service.name"] == "teamclaw-test"
    assert root.resource["teamclaw.worker.kind"] == "embedded"
    (main,) = [s for s in spans if s.parent_id == root.span_id]
    assert (main.name, main["gen_ai.agent.name"], main["teamclaw.capability_id"]) == (
        "invoke_agent main",
        "main",
        "task_orchestration",
    )
    assert main["teamclaw.caller.role"] == "user"
    assert main["gen_ai.agent.id"] == main["teamclaw.instance.id"]
    assert main["gen_ai.agent.id"].startswith("main-")
    assert "delivered" in main.events

    reviews = [s for s in spans if s.get("teamclaw.capability_id") == "expert_review"]
    assert len(reviews) >= 4
    for review in reviews:  # asked by main while it served the task: children of main's call
        assert review.parent_id == main.span_id
        assert review.kind == "SPAN_KIND_INTERNAL"
        assert review.status[0] == "STATUS_CODE_UNSET"
        assert review.name == f"invoke_agent {review['gen_ai.agent.name']}"
    roles = {s["gen_ai.agent.name"] for s in spans if s["gen_ai.operation.name"] == "invoke_agent"}
    assert {"main", "pm", "architect", "consolidator"} <= roles

    (copy,) = [s for s in spans if s["gen_ai.operation.name"] == "execute_tool"]
    assert (copy.name, copy["gen_ai.tool.name"], copy["teamclaw.tool.mode"]) == (
        "execute_tool file_write",
        "file_write",
        "allow",
    )
    assert copy.parent_id == main.span_id
    assert copy["gen_ai.agent.name"] == "main"


def model_runtime(server: ModelServer, sinks: list[Any], **options: Any) -> Runtime:
    settings = ModelSettings(
        endpoints={"default": ModelEndpoint("default", server.url, "sk-test")},
        model="test-model",
        stream=False,
        **options,
    )
    registry = ExecutorRegistry({"offline": OfflineExecutor(), "openai": OpenAIExecutor(settings)})
    return Runtime(snapshot=team(), executors=registry, sinks=sinks)


async def test_model_calls_carry_the_model_and_the_reported_usage_and_refusals_their_error_code(receiver, tracing):
    sink = tracing
    replies = [
        Completion(tool_calls=[("echo", json.dumps({"text": "hello b"}))], usage=(120, 15), finish_reason="tool_calls"),
        Completion(json.dumps({"summary": "done", "steps": ["first"]}), usage=None),  # no usage reported
    ]
    with ModelServer(replies) as server:
        runtime = model_runtime(server, [sink])
        try:
            result = await runtime.run_task(capability_id="plan", params={"goal": "ship it"}, entry_role="a")
            refused = await runtime.invoke(InvokeRequest("secret", {"text": "x"}), from_role="a")
        finally:
            await runtime.stop()
    assert result.success, result.error
    assert refused.error is not None and refused.error.code == "permission_denied"
    sink.close()
    spans = receiver.wait_for(lambda got: len({s.trace_id for s in got if not s.parent_id}) == 2)

    (plan_task,) = [s for s in spans if s.get("gen_ai.workflow.name") == "plan"]
    tree = [s for s in spans if s.trace_id == plan_task.trace_id]
    assert_well_formed_tree(tree)
    (agent_a,) = [s for s in tree if s.name == "invoke_agent a"]
    chats = sorted((s for s in tree if s["gen_ai.operation.name"] == "chat"), key=lambda s: s.start_ns)
    assert [c.parent_id for c in chats] == [agent_a.span_id, agent_a.span_id]
    first, second = chats
    assert first.name == "chat test-model"
    assert first.kind == "SPAN_KIND_CLIENT"
    assert first["gen_ai.request.model"] == "test-model"
    assert first["gen_ai.provider.name"] == "openai"
    assert (first["gen_ai.usage.input_tokens"], first["gen_ai.usage.output_tokens"]) == (120, 15)
    assert first["gen_ai.response.finish_reasons"] == ("tool_calls",)
    assert first["teamclaw.model.tool_calls"] == ("echo",)
    assert first["teamclaw.usage.estimated"] is False
    assert (first["server.address"], first["server.port"]) == ("127.0.0.1", int(server.url.split(":")[2].split("/")[0]))
    # The server reported no usage for the answer: TeamClaw's estimate, labelled as one.
    assert "gen_ai.usage.input_tokens" not in second.attributes
    assert second["teamclaw.usage.estimated"] is True
    assert second["teamclaw.usage.estimated_input_tokens"] > 0
    # The model's function call went through the runtime: an invoke of b, child of a's call.
    (echo,) = [s for s in tree if s.get("teamclaw.capability_id") == "echo"]
    assert (echo.name, echo.parent_id, echo["teamclaw.caller.role"]) == ("invoke_agent b", agent_a.span_id, "a")
    assert first.end_ns <= echo.start_ns <= echo.end_ns <= second.start_ns

    (denied,) = [s for s in spans if s.get("teamclaw.capability_id") == "secret"]
    assert denied["error.type"] == "permission_denied"
    assert denied.status[0] == "STATUS_CODE_ERROR"
    assert (denied["gen_ai.agent.name"], denied["teamclaw.caller.role"]) == ("c", "a")
    denied_root = by_id(spans)[denied.parent_id]
    assert denied_root["error.type"] == "permission_denied"  # the short task around it failed with it
    assert denied_root["teamclaw.task.kind"] == "invoke"
    assert denied_root.status[0] == "STATUS_CODE_ERROR"


async def test_a_resumed_attempt_is_traced_in_the_same_trace_without_crashing(receiver, tracing):
    sink = tracing
    collected = CollectingSink()
    task_id = "0123456789abcdef0123456789abcdef"
    with ModelServer([Completion(tool_calls=[("echo", '{"text": "hi"}')], usage=(5, 5)), answer()] * 2) as server:
        runtime = model_runtime(server, [sink, collected])
        try:
            first = await runtime.run_task(capability_id="plan", params={"goal": "g"}, entry_role="a", task_id=task_id)
            journal = ResumeJournal.of(2, [RecordedStep("a", "echo", {"text": "hi"}, {"text": "hi"})])
            second = await runtime.run_task(
                capability_id="plan", params={"goal": "g"}, entry_role="a", task_id=task_id, journal=journal
            )
        finally:
            await runtime.stop()
    assert first.success and second.success
    assert journal.answered == 1  # b's echo came from the record the second time
    sink.close()
    spans = receiver.wait_for(lambda got: len([s for s in got if not s.parent_id]) == 2)
    assert {s.trace_id for s in spans} == {task_id}
    assert len([s for s in spans if s.get("teamclaw.capability_id") == "echo"]) == 1  # only the live one


async def test_a_hook_is_a_span_until_its_status_update_and_a_refused_one_carries_its_code(receiver, tracing):
    sink = tracing
    snapshot = small_snapshot(
        cards=[echo_card("echo", owners=("b",)), echo_card("secret", owners=("c",))],
        roles=["a", "b", "c"],
        allowed=[("a", "b")],
    )
    runtime = Runtime(snapshot=snapshot, sinks=[sink])
    try:
        (ack,) = await runtime.hook(HookEvent("code_completed", {"text": "x"}, False, ["b"], "echo"), from_role="a")
        (refusal,) = await runtime.hook(
            HookEvent("code_completed", {"text": "x"}, False, ["c"], "secret"), from_role="a"
        )
        for _ in range(200):  # each hook's short task ends once its receivers processed it
            if not runtime.tasks:
                break
            await asyncio.sleep(0.01)
    finally:
        await runtime.stop()
    assert (ack.status, refusal.status, refusal.reason) == ("received", "rejected", "permission_denied")
    sink.close()
    spans = receiver.wait_for(lambda got: len([s for s in got if not s.parent_id]) == 2)
    hooks = {s["gen_ai.agent.name"]: s for s in spans if s.get("teamclaw.hook.event_type") == "code_completed"}
    assert set(hooks) == {"b", "c"}
    served, refused = hooks["b"], hooks["c"]
    assert (served.name, served["teamclaw.capability_id"], served["teamclaw.message.type"]) == (
        "invoke_agent b",
        "echo",
        "hook_event",
    )
    assert served.status[0] == "STATUS_CODE_UNSET"
    assert "delivered" in served.events
    assert (refused["error.type"], refused.status[0]) == ("permission_denied", "STATUS_CODE_ERROR")
    for hook in (served, refused):
        assert by_id(spans)[hook.parent_id]["teamclaw.task.kind"] == "hook"


async def test_a_denied_tool_and_a_failing_model_server_carry_their_error_codes(receiver, tracing, tmp_path):
    offline = OfflineExecutor()
    register_offline_handlers(offline)
    snapshot = builtin_snapshot()
    denied = dataclasses.replace(snapshot, tool_modes={**snapshot.tool_modes, ("main", "file_write"): ToolMode.DENY})
    review = Runtime(
        snapshot=denied, sinks=[tracing], executors=ExecutorRegistry({"offline": offline}), default_project_dir=tmp_path
    )
    params = {
        "workflow": "requirement_review",
        "input_markdown": sample_requirement(),
        "document_name": "requirement.md",
        "task_description": "Review",
    }
    try:
        reviewed = await review.run_task(capability_id="task_orchestration", params=params)
    finally:
        await review.stop()
    with ModelServer([Failure(503, "overloaded")]) as server:
        model = model_runtime(server, [tracing], max_retries=0)
        try:
            failed = await model.run_task(capability_id="plan", params={"goal": "g"}, entry_role="a")
        finally:
            await model.stop()
    assert reviewed.success, reviewed.error  # the copy is skipped (a tool_denied error in main's context)
    assert failed.error is not None and failed.error.code == "unavailable"
    tracing.close()
    spans = receiver.wait_for(lambda got: len([s for s in got if not s.parent_id]) == 2)
    (tool,) = [s for s in spans if s["gen_ai.operation.name"] == "execute_tool"]
    assert (tool["error.type"], tool["teamclaw.tool.mode"]) == ("tool_denied", "deny")
    assert tool.status[0] == "STATUS_CODE_ERROR"
    assert by_id(spans)[tool.parent_id]["teamclaw.capability_id"] == "task_orchestration"
    (chat,) = [s for s in spans if s["gen_ai.operation.name"] == "chat"]
    assert (chat["error.type"], chat.status[0]) == ("unavailable", "STATUS_CODE_ERROR")
    assert "gen_ai.usage.input_tokens" not in chat.attributes
    assert by_id(spans)[chat.parent_id]["error.type"] == "unavailable"  # a's invoke failed with it
    failed_root = by_id(spans)[by_id(spans)[chat.parent_id].parent_id]
    assert (failed_root["teamclaw.task.tokens_used"], failed_root["teamclaw.task.tokens_estimated"]) == (0, False)


def test_the_endpoint_variables_and_their_refusals(monkeypatch):
    assert traces_endpoint({}) is None
    assert traces_endpoint({"OTEL_SERVICE_NAME": "x", "OTEL_EXPORTER_OTLP_HEADERS": "a=b"}) is None
    assert traces_endpoint({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318/"}) == "http://c:4318/v1/traces"
    both = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "https://t/x"}
    assert traces_endpoint(both) == "https://t/x"
    assert traces_endpoint({**both, "OTEL_SDK_DISABLED": "true"}) is None
    assert traces_endpoint({**both, "OTEL_TRACES_EXPORTER": "none"}) is None
    with pytest.raises(ImproperlyConfigured, match="OTEL_EXPORTER_OTLP_ENDPOINT must be an http"):
        traces_endpoint({"OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4318"})
    with pytest.raises(ImproperlyConfigured, match="OTEL_EXPORTER_OTLP_TRACES_ENDPOINT must be an http"):
        traces_endpoint({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://:99999"})
    for broken in ("http://[::1", "http://[zz]:4318", "http://c:port"):  # urlsplit raises on these
        with pytest.raises(ImproperlyConfigured, match="OTEL_EXPORTER_OTLP_ENDPOINT must be an http"):
            traces_endpoint({"OTEL_EXPORTER_OTLP_ENDPOINT": broken})
    with pytest.raises(ImproperlyConfigured, match="OTEL_EXPORTER_OTLP_PROTOCOL='grpc'"):
        traces_endpoint({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"})


def default_port_receiver() -> OtlpReceiver | None:
    """A receiver on OTLP/HTTP's default port 4318, where an exporter without an endpoint
    would post; None when another program holds the port."""
    try:
        return OtlpReceiver(port=4318)
    except OSError:
        return None


def test_without_the_endpoint_variable_nothing_is_built_installed_or_sent(api, transactional_db, builtin, monkeypatch):
    for name in OTEL_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OTEL_SERVICE_NAME", "teamclaw-test")  # other OpenTelemetry variables alone do nothing
    fallback = default_port_receiver()
    host_module.reset_host()
    try:
        if fallback is not None:
            fallback.__enter__()
        host = host_module.get_host()
        assert host.tracing is None
        response = api.post(
            "/api/v1/tasks", {"workflow": "requirement_review", "input_markdown": sample_requirement()}, format="json"
        )
        assert wait_for_task(host, response.json()["task_id"]).status == "completed"
        host_module.reset_host()
        assert isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)  # never installed
        assert not [t.name for t in threading.enumerate() if t.name.startswith("OtelBatch")]
        if fallback is not None:
            assert fallback.requests == 0
    finally:
        host_module.reset_host()
        if fallback is not None:
            fallback.__exit__(None, None, None)


@pytest.mark.django_db(transaction=True)
def test_a_runtime_worker_process_exports_its_tasks_spans_with_the_configured_headers(
    builtin, api, settings, receiver, tmp_path
):
    settings.TEAMCLAW = {**settings.TEAMCLAW, "RUNTIME": "remote"}  # this process runs no agents
    env = process_env(
        OTEL_EXPORTER_OTLP_ENDPOINT=receiver.url,
        OTEL_EXPORTER_OTLP_HEADERS="x-tenant=team-a,authorization=Bearer%20t0k",
        OTEL_SERVICE_NAME="teamclaw-worker",
    )
    worker = manage("runtime_worker", "--concurrency", "2", env=env, log=tmp_path / "worker.log")
    try:
        wait_until(lambda: RuntimeWorker.objects.filter(pid=worker.process.pid).exists(), 60, "the worker")
        response = api.post(
            "/api/v1/tasks", {"workflow": "requirement_review", "input_markdown": sample_requirement()}, format="json"
        )
        assert response.status_code == 201, response.content
        task_id = response.json()["task_id"]
        refused = {"capability_id": "task_orchestration", "from_role": "pm", "params": {}}  # pm may not invoke main
        body = api.post("/api/v1/capabilities/invoke", refused, format="json").json()
        assert body["error"]["code"] == "permission_denied", body
        wait_until(lambda: Task.objects.get(pk=task_id).status == "completed", 60, lambda: worker.output())
    finally:
        worker.stop()  # SIGTERM: the worker's host stops and exports what is left
    assert host_module.current_host() is None
    spans = receiver.spans
    tree = [s for s in spans if s.trace_id == task_id]
    root = assert_well_formed_tree(tree)
    assert root.name == "invoke_workflow requirement_review"
    assert (root.resource["service.name"], root.resource["teamclaw.worker.kind"]) == ("teamclaw-worker", "worker")
    assert len([s for s in tree if s.get("teamclaw.capability_id") == "expert_review"]) >= 4
    (denied,) = [s for s in spans if s.get("teamclaw.caller.role") == "pm"]
    assert (denied.name, denied["error.type"], denied.status[0]) == (
        "invoke_agent main",
        "permission_denied",
        "STATUS_CODE_ERROR",
    )
    assert {(h["x-tenant"], h["authorization"]) for h in receiver.headers} == {("team-a", "Bearer t0k")}


def test_the_receiver_refuses_what_a_collector_would(receiver):
    with socket.create_connection(("127.0.0.1", int(receiver.url.rsplit(":", 1)[1]))) as conn:
        conn.sendall(
            b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"
        )
        assert b" 415 " in conn.recv(100)
    assert receiver.spans == []
