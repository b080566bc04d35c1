"""Tools under the tool permission matrix (PRD §4.7): allow, deny, confirm; file scope."""

from __future__ import annotations

import asyncio
import os

import pytest

from teamclaw.runtime import AgentFailure, Constraints, ContextStatus, ErrorCode, EventKind, InvokeRequest
from teamclaw.runtime.tools import confine
from tests.factories import small_snapshot
from tests.runtime.conftest import settle


def tooling(harness_factory, tmp_path, mode: str, **options):
    snapshot = small_snapshot(
        tool_modes={("b", "file_write"): mode, ("b", "file_read"): "allow"},
        project_dir=str(tmp_path),
        constraints=Constraints(max_retries=0),
    )
    h = harness_factory(snapshot, **options)

    async def write(call):
        result = await call.use_tool("file_write", path=call.params["text"], content="hello")
        return {"text": str(result["bytes"])}

    h.handle("echo", write)
    return h


async def test_an_allowed_tool_runs(harness_factory, tmp_path):
    h = tooling(harness_factory, tmp_path, "allow")
    result = await h.runtime.invoke(InvokeRequest("echo", {"text": "notes/a.txt"}), from_role="a")
    assert result.success
    assert (tmp_path / "notes" / "a.txt").read_text() == "hello"


async def test_a_denied_tool_fails_with_tool_denied(harness_factory, tmp_path):
    h = tooling(harness_factory, tmp_path, "deny")
    result = await h.runtime.invoke(InvokeRequest("echo", {"text": "a.txt"}), from_role="a")
    assert result.error.code == ErrorCode.TOOL_DENIED
    assert not (tmp_path / "a.txt").exists()


async def test_a_confirm_tool_waits_for_the_operator_and_runs_when_approved(harness_factory, tmp_path):
    h = tooling(harness_factory, tmp_path, "confirm")
    task = asyncio.create_task(h.runtime.invoke(InvokeRequest("echo", {"text": "a.txt"}), from_role="a"))
    await settle()
    [confirmation] = h.runtime.confirmations.values()
    context = h.runtime.contexts[confirmation.context_id]
    assert context.status == ContextStatus.WAITING_USER
    assert confirmation.tool == "file_write"
    assert any(e.kind == EventKind.CONFIRMATION for e in h.sink.events)
    await h.advance(120)  # waiting for the operator does not eat the 60 s invoke timeout
    assert not task.done()
    h.runtime.resolve_confirmation(confirmation.id, True, "ops")
    result = await task
    assert result.success
    assert (tmp_path / "a.txt").exists()
    assert context.status == ContextStatus.COMPLETED
    assert not context.pending_questions


async def test_a_rejected_confirmation_fails_with_tool_denied(harness_factory, tmp_path):
    h = tooling(harness_factory, tmp_path, "confirm")
    task = asyncio.create_task(h.runtime.invoke(InvokeRequest("echo", {"text": "a.txt"}), from_role="a"))
    await settle()
    [confirmation] = h.runtime.confirmations.values()
    h.runtime.resolve_confirmation(confirmation.id, False, "ops")
    result = await task
    assert result.error.code == ErrorCode.TOOL_DENIED
    assert "did not approve" in result.error.message
    with pytest.raises(KeyError):
        h.runtime.resolve_confirmation(confirmation.id, True, "ops")


async def test_an_unanswered_confirmation_times_out(harness_factory, tmp_path):
    h = tooling(harness_factory, tmp_path, "confirm", confirmation_timeout_s=300)
    task = asyncio.create_task(h.runtime.invoke(InvokeRequest("echo", {"text": "a.txt"}), from_role="a"))
    await settle()
    await h.advance(301, step=10)
    result = await task
    assert result.error.code == ErrorCode.TOOL_DENIED
    statuses = [e.confirmation.status for e in h.sink.events if e.kind == EventKind.CONFIRMATION]
    assert statuses == ["pending", "expired"]


@pytest.mark.parametrize("path", ["../outside.txt", "a/../../outside.txt", "/etc/passwd", ""])
def test_file_paths_outside_the_project_are_refused(tmp_path, path):
    with pytest.raises(AgentFailure) as failure:
        confine(tmp_path, path)
    assert failure.value.error.code == ErrorCode.TOOL_DENIED


def test_a_symlink_leading_out_of_the_project_is_refused(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    project = tmp_path / "project"
    project.mkdir()
    os.symlink(outside, project / "escape")
    with pytest.raises(AgentFailure):
        confine(project, "escape/secret.txt")
    assert confine(project, "inside/ok.txt") == (project / "inside" / "ok.txt").resolve()


async def test_file_scope_narrows_the_directory(harness_factory, tmp_path):
    snapshot = small_snapshot(
        tool_modes={("b", "file_write"): "allow"},
        project_dir=str(tmp_path),
        constraints=Constraints(file_scope="docs", max_retries=0),
    )
    h = harness_factory(snapshot)

    async def write(call):
        await call.use_tool("file_write", path=call.params["text"], content="x")
        return {"text": "ok"}

    h.handle("echo", write)
    assert (await h.runtime.invoke(InvokeRequest("echo", {"text": "a.md"}), from_role="a")).success
    assert (tmp_path / "docs" / "a.md").exists()
    escape = await h.runtime.invoke(InvokeRequest("echo", {"text": "../a.md"}), from_role="a")
    assert escape.error.code == ErrorCode.TOOL_DENIED


async def test_the_token_budget_stops_a_task_before_and_after_model_calls(harness_factory):
    snapshot = small_snapshot(constraints=Constraints(token_budget=150, max_retries=0))
    h = harness_factory(snapshot)  # the handler below is the "model": it charges exact counts

    async def spend(call):
        call.ensure_budget(40)
        call.charge_tokens(40, 40)
        return {"text": "spent"}

    h.handle("echo", spend)
    task = await h.runtime.begin_task(entry_role="a")
    results = [
        await h.runtime.invoke(InvokeRequest("echo", {"text": "x"}), from_role="a", task_id=task.task_id)
        for _ in range(3)
    ]
    assert [r.success for r in results] == [True, False, False]
    after, before = results[1].error, results[2].error
    assert after.code == before.code == ErrorCode.BUDGET_EXCEEDED
    assert after.details == {"token_budget": 150, "tokens_used": 160, "expected_tokens": 0}  # 2 x (40 + 40)
    assert before.details["expected_tokens"] == 40
    assert task.tokens_used == 160  # refused before spending
    assert any(e.kind == EventKind.ALERT and e.alert_kind == "budget" for e in h.sink.events)


async def test_offline_token_counts_are_estimated_and_recorded_on_the_context(harness_factory):
    h = harness_factory(small_snapshot(), charge_tokens=True)
    task = await h.runtime.begin_task(entry_role="a")
    await h.runtime.invoke(InvokeRequest("echo", {"text": "a" * 400}), from_role="a", task_id=task.task_id)
    [context] = task.contexts.values()
    usage = context.resource_usage
    assert usage["estimated"] is True
    assert usage["api_calls"] == 1
    assert usage["input_tokens"] >= 100
    assert usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"]


@pytest.mark.parametrize(
    ("path", "reason"),
    [(".", "is a directory"), ("x" * 300 + ".txt", "File name too long"), ("f.txt/child", "cannot write")],
)
async def test_file_tool_errors_name_the_project_path_not_the_servers(tmp_path, path, reason):
    from teamclaw.runtime.tools import file_write

    (tmp_path / "f.txt").write_text("x")
    with pytest.raises(AgentFailure) as failure:
        await file_write(tmp_path, {"path": path, "content": "hello"})
    assert reason in failure.value.error.message
    assert str(tmp_path) not in failure.value.error.message


def scoped_writer(harness_factory, project, scope):
    snapshot = small_snapshot(
        tool_modes={("b", "file_write"): "allow"},
        project_dir=str(project),
        constraints=Constraints(file_scope=scope, max_retries=0),
    )
    h = harness_factory(snapshot)

    async def write(call):
        await call.use_tool("file_write", path=call.params["text"], content="x")
        return {"text": "ok"}

    h.handle("echo", write)
    return h


@pytest.mark.parametrize("scope", ["docs", "docs/sub", "inside/docs/deeper"])
async def test_a_file_scope_through_a_symlink_out_of_the_project_is_refused(harness_factory, tmp_path, scope):
    outside = tmp_path / "outside"
    outside.mkdir()
    project = tmp_path / "project"
    (project / "inside").mkdir(parents=True)
    os.symlink(outside, project / "docs")
    os.symlink(outside, project / "inside" / "docs")
    h = scoped_writer(harness_factory, project, scope)
    result = await h.runtime.invoke(InvokeRequest("echo", {"text": "a.md"}), from_role="a")
    assert result.error.code == ErrorCode.TOOL_DENIED
    assert list(outside.iterdir()) == []  # nothing written, no folder made outside


async def test_a_file_scope_through_a_symlink_inside_the_project_is_allowed(harness_factory, tmp_path):
    project = tmp_path / "project"
    (project / "real").mkdir(parents=True)
    os.symlink(project / "real", project / "docs")
    h = scoped_writer(harness_factory, project, "docs/sub")
    assert (await h.runtime.invoke(InvokeRequest("echo", {"text": "a.md"}), from_role="a")).success
    assert (project / "real" / "sub" / "a.md").exists()


async def test_each_tool_use_is_snapshotted_with_its_outcome(harness_factory, tmp_path):
    """Issue 30: a replay step on a tool use shows the state with that use in it."""
    for mode, outcome in (("allow", "used"), ("deny", "denied")):
        h = tooling(harness_factory, tmp_path, mode)
        await h.runtime.invoke(InvokeRequest("echo", {"text": "notes/a.txt"}), from_role="a")
        (snapshot,) = [e.snapshot for e in h.sink.of(EventKind.SNAPSHOT) if e.snapshot.trigger == "tool file_write"]
        assert snapshot.label == outcome
        (use,) = [m for m in snapshot.state["input_context"]["messages"] if m["type"] == "tool"]
        assert use["outcome"] == outcome and use["tool"] == "file_write"
