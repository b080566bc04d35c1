"""Every event a demo run emits matches its declared type, field by field (Zulip's habit of
checking events against their schemas): the recorder and the live sink read these fields by
name, so a field of the wrong type would fail there, far from where it was made."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import typing

import pytest
from typeguard import TypeCheckError, check_type

from runs.tasks import sample_requirement
from teamclaw.runtime import (
    EVENT_TYPES,
    CollectingSink,
    ConfigSnapshot,
    ExecutorRegistry,
    ModelCalled,
    OfflineExecutor,
    Runtime,
    RuntimeEvent,
    ToolMode,
)
from teamclaw.runtime.executors.chat import ModelEndpoint, ModelSettings
from teamclaw.runtime.executors.model import OpenAIExecutor
from teamclaw.workflows import register_offline_handlers
from tests.factories import builtin_snapshot, echo_card, small_snapshot
from tests.model_server import Completion, Failure, ModelServer


def field_problems(value: object, path: str) -> list[str]:
    """Each field of dataclass ``value`` (and of the dataclasses it holds) that does not
    match its annotation, as ``path.field: reason``."""
    problems: list[str] = []
    hints = typing.get_type_hints(type(value))
    for field in dataclasses.fields(value):  # type: ignore[arg-type]
        item = getattr(value, field.name)
        try:
            check_type(item, hints[field.name])
        except TypeCheckError as exc:
            problems.append(f"{path}.{field.name}: {exc}")
        if dataclasses.is_dataclass(item) and not isinstance(item, type):
            problems.extend(field_problems(item, f"{path}.{field.name}"))
    return problems


def with_confirmed_file_writes(snapshot: ConfigSnapshot) -> ConfigSnapshot:
    """The built-in team, with main's ``file_write`` waiting for an operator (PRD §4.7 ⚠️)."""
    modes = {**snapshot.tool_modes, ("main", "file_write"): ToolMode.CONFIRM}
    return dataclasses.replace(snapshot, tool_modes=modes)


async def approve_every_confirmation(runtime: Runtime) -> None:
    while True:
        for confirmation_id in list(runtime.confirmations):
            runtime.resolve_confirmation(confirmation_id, True, decided_by="operator")
        await asyncio.sleep(0.01)


@pytest.fixture
async def demo_events(tmp_path) -> list[RuntimeEvent]:
    """The events of one requirement review (the demo), a config change and a lost heartbeat."""
    sink = CollectingSink()
    offline = OfflineExecutor()
    register_offline_handlers(offline)
    runtime = Runtime(
        snapshot=with_confirmed_file_writes(builtin_snapshot()),
        sinks=[sink],
        executors=ExecutorRegistry({"offline": offline}),
        default_project_dir=tmp_path,
    )
    approver = asyncio.ensure_future(approve_every_confirmation(runtime))
    try:
        result = await runtime.run_task(
            capability_id="task_orchestration",
            params={
                "workflow": "requirement_review",
                "input_markdown": sample_requirement(),
                "document_name": "requirement.md",
                "task_description": "Review the requirement 'Online bookstore'",
            },
            description="Review the requirement 'Online bookstore'",
        )
        assert result.success, result.error
        runtime.apply_config_change({"config_type": "invoke_permission", "old_version": 1, "new_version": 2})
        # A task's own instances end with it (teamclaw.runtime.scopes): one outside any task beats on.
        instance = runtime.spawn("main")
        instance.last_heartbeat -= runtime.heartbeat_timeout_s + 1
        runtime.check_health()
    finally:
        approver.cancel()
        await runtime.stop()
    return sink.events


async def test_every_event_of_a_demo_run_matches_its_type(demo_events):
    problems = [p for event in demo_events for p in field_problems(event, type(event).__name__)]
    assert problems == []


async def test_a_demo_run_emits_every_kind_of_event(demo_events):
    # The offline demo asks no model: ModelCalled is checked on a model run below.
    assert {type(event) for event in demo_events} == set(EVENT_TYPES) - {ModelCalled}


async def test_every_model_call_event_matches_its_type():
    reply = Completion(json.dumps({"text": "hi"}), usage=(12, 3), finish_reason="stop")
    with ModelServer([reply, Failure(400, "no such model")]) as server:
        settings = ModelSettings(endpoints={"default": ModelEndpoint("default", server.url, "k")}, stream=False)
        card = dataclasses.replace(echo_card("echo", owners=("a",)), executor="openai")
        sink = CollectingSink()
        runtime = Runtime(
            snapshot=small_snapshot(cards=[card], roles=["a"]),
            sinks=[sink],
            executors=ExecutorRegistry({"offline": OfflineExecutor(), "openai": OpenAIExecutor(settings)}),
        )
        try:
            first = await runtime.run_task(capability_id="echo", params={"text": "hi"}, entry_role="a")
            second = await runtime.run_task(capability_id="echo", params={"text": "hi"}, entry_role="a")
        finally:
            await runtime.stop()
    assert first.success and not second.success
    calls = sink.of(ModelCalled)
    assert [(c.input_tokens, c.output_tokens, c.error is None) for c in calls] == [(12, 3, True), (0, 0, False)]
    assert [p for event in calls for p in field_problems(event, "ModelCalled")] == []


async def test_event_order_numbers_only_grow(demo_events):
    seqs = [event.seq for event in demo_events]
    assert seqs == sorted(seqs)
    assert len(set(seqs)) == len(seqs)


def test_the_checker_catches_a_field_of_the_wrong_type():
    from teamclaw.runtime import AlertRaised

    wrong = AlertRaised(alert_kind="health", severity=3, message="m", details={}, at=1.0)  # type: ignore[arg-type]
    assert field_problems(wrong, "AlertRaised") == ["AlertRaised.severity: int is not an instance of str"]
