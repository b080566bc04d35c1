"""A task's replay (issue 30, ``monitoring.task_replay``): every agent's steps on one timeline,
each with its round, and at every step the state of its agent as recorded at that step."""

from __future__ import annotations

import re

import pytest
import yaml
from django.utils import translation

from monitoring import task_replay
from monitoring.models import ExecutionContext, Message, Snapshot, Task, ToolConfirmation
from runs.resume import recorded_steps
from tests.documents import CLINIC
from tests.helpers import wait_for_task
from tests.live_helpers import wait_for_confirmation
from tests.runs.test_fork_policy import set_main_file_write

EXPERTS = {"architect", "pm", "ai_expert", "domain_expert"}
ROUNDS = {"review", "evaluate", "respond"}


@pytest.fixture
def recorded(api, runtime_host) -> Task:
    """A demo review whose file write waits for the operator, who instructs main meanwhile
    and then approves: calls, tool uses, a wait, an instruction and the messages between."""
    set_main_file_write(api, "confirm")
    response = api.post("/api/v1/tasks", {"workflow": "requirement_review", "input_markdown": CLINIC}, format="json")
    assert response.status_code == 201
    task_id = response.json()["task_id"]
    confirmation = wait_for_confirmation(runtime_host, task_id)
    said = api.post(
        f"/api/v1/contexts/{confirmation.context_id}/instructions", {"text": "keep it short"}, format="json"
    )
    assert said.status_code in (200, 201), said.content
    assert api.post(f"/api/v1/confirmations/{confirmation.id}", {"approve": True}, format="json").status_code == 200
    task = wait_for_task(runtime_host, task_id)
    assert task.status == "completed"
    return task


def _ids(state: dict) -> list:
    return [ref.get("id") for ref in state["input_context"]["messages"]]


def _check_state(step: task_replay.TaskStep, state: dict, final: dict[str, ExecutionContext]) -> None:
    """The record at ``step``: what its agent had done by then, and nothing it did later."""
    context = final[state["id"]]
    assert step.context is not None and state["id"] == step.context.id
    recorded = context.input_context["messages"]
    # no drift and no future: the state's messages are the start of the agent's final list
    assert state["input_context"]["messages"] == recorded[: len(state["input_context"]["messages"])]
    if step.kind == "snapshot":
        assert state == Snapshot.objects.get(pk=step.ref.pk).state
        return
    message = step.ref
    if message.from_instance == context.instance_id and message.type in ("invoke_response", "invoke_error"):
        # an answer: the agent's state holds the answer, the call it answered and its output
        assert message.id in _ids(state), f"step {step.index + 1}: {context.role}'s state lacks its answer"
        assert state["status"] in ("ready", "completed", "failed"), state["status"]
        result = (message.payload or {}).get("result") or {}
        if isinstance(result, dict) and result.get("artifact"):
            written = {a["name"] for a in state["output_state"]["generated_artifacts"]}
            assert result["artifact"] in written, f"step {step.index + 1}: its artifact is not in the state"


def test_the_state_at_every_step_is_the_record_at_that_step(recorded):
    timeline = task_replay.build_task_timeline(recorded)
    final = {c.id: c for c in ExecutionContext.objects.filter(task=recorded)}
    assert len(timeline) > 50 and not timeline.truncated
    for index, step in enumerate(timeline.steps):
        shown = task_replay.task_step(timeline, index)
        assert shown["number"] == index + 1 and shown["step"] is step
        if shown["state"] is None:  # only before the agent's first snapshot (its start)
            assert step.kind == "message" and step.ref.type == "invoke_request"
            continue
        _check_state(step, shown["state"], final)
    # every message of the task is a step, once; every snapshot of every agent too
    messages = [s.ref.id for s in timeline.steps if s.kind == "message"]
    assert sorted(messages) == sorted(Message.objects.filter(task_id=recorded.id).values_list("id", flat=True))
    snapshots = [s.ref.id for s in timeline.steps if s.kind == "snapshot"]
    assert sorted(snapshots) == sorted(Snapshot.objects.filter(context__task=recorded).values_list("id", flat=True))


def test_each_call_tool_use_wait_and_instruction_is_a_step_with_its_state(recorded):
    timeline = task_replay.build_task_timeline(recorded)
    kinds = [s.step_kind for s in timeline.steps]
    for kind in ("call", "answer", "tool_use", "operator_wait", "instruction", "invoke"):
        assert kind in kinds, kind
    for context in ExecutionContext.objects.filter(task=recorded, role__in=EXPERTS):
        answered = [s for s in timeline.steps if s.step_kind == "answer" and s.context.id == context.id]
        calls = [s for s in timeline.steps if s.step_kind == "call" and s.context.id == context.id]
        taken = [r for r in context.input_context["messages"] if r["type"] == "invoke_request"]
        assert len(calls) == len(answered) == len(taken) >= 3  # one snapshot per call, taken and answered
        for call in calls:  # what the agent read when it took the call: the request, its prompts
            state = task_replay.task_step(timeline, call.index)["state"]
            assert state["status"] == "executing" and state["current_step"] == call.ref.trigger.removeprefix("call ")
            assert _ids(state)[-1] in {r["id"] for r in taken}
        for answer in answered:  # what it answered with: the prompt versions it rendered, its output
            state = task_replay.task_step(timeline, answer.index)["state"]
            assert state["status"] == "ready"
            assert state["input_context"]["prompt_versions"] == context.input_context["prompt_versions"]
            assert _ids(state)[-1] in set(
                Message.objects.filter(task_id=recorded.id, type="invoke_response").values_list("id", flat=True)
            )
    main = ExecutionContext.objects.get(task=recorded, role="main")
    (write,) = [r for r in main.input_context["messages"] if r["type"] == "tool"]
    (tool_step,) = [s for s in timeline.steps if s.step_kind == "tool_use" and s.context.id == main.id]
    assert write in task_replay.task_step(timeline, tool_step.index)["state"]["input_context"]["messages"]
    confirmation = ToolConfirmation.objects.get(task_id=recorded.id)
    waiting, decided = [s for s in timeline.steps if s.step_kind == "operator_wait"]
    assert waiting.index < decided.index < tool_step.index
    state = task_replay.task_step(timeline, waiting.index)["state"]
    assert state["status"] == "waiting_user"
    assert any(confirmation.id in q for q in state["output_state"]["pending_questions"])
    assert "approved" in decided.ref.trigger
    (instruction,) = [s for s in timeline.steps if s.step_kind == "instruction"]
    assert waiting.index < instruction.index < decided.index
    assert (
        "keep it short"
        in task_replay.task_step(timeline, instruction.index)["state"]["input_context"]["user_instructions"]
    )


def test_each_step_of_an_experts_call_is_labelled_with_its_round(recorded):
    timeline = task_replay.build_task_timeline(recorded)
    for role in EXPERTS:
        steps = [s for s in timeline.steps if s.context and s.context.role == role]
        requests = [s for s in timeline.steps if s.kind == "message" and s.ref.type == "invoke_request"]
        sent = {s.round for s in requests if s.ref.to_role == role and s.ref.capability_id == "expert_review"}
        assert sent == ROUNDS, role
        for kind in ("call", "answer"):
            assert {s.round for s in steps if s.step_kind == kind} >= ROUNDS, (role, kind)
        answers = [s for s in steps if s.kind == "message" and s.ref.type == "invoke_response"]
        assert {s.round for s in answers if s.ref.capability_id == "expert_review"} == ROUNDS
        for answer in answers:  # the answer's round is its request's
            request = Message.objects.get(
                task_id=recorded.id, type="invoke_request", correlation_id=answer.ref.correlation_id
            )
            assert answer.round == (request.payload["params"].get("mode") or "")
            assert answer.trace_node == request.id


def test_a_fork_from_a_step_takes_the_calls_answered_by_then(recorded):
    timeline = task_replay.build_task_timeline(recorded)
    forks = [s.fork_step for s in timeline.steps]
    assert forks == sorted(forks) and forks[0] == 0
    assert forks[-1] == len(recorded_steps(recorded.id))


def test_the_page_steps_through_all_agents_with_trace_links_and_a_fork(page_client, recorded):
    timeline = task_replay.build_task_timeline(recorded)
    answer = next(s for s in timeline.steps if s.step_kind == "answer" and s.context.role == "ai_expert")
    page = page_client.get(f"/tasks/{recorded.id}/replay/?step={answer.index + 1}")
    assert page.status_code == 200
    html = page.content.decode()
    assert f'data-trace-node="{answer.context.id}"' in html
    assert "Answered expert_review" in html and f'data-snapshot="{answer.ref.id}"' in html
    roles = set(re.findall(r'data-index="\d+" data-round="(\w*)"', html))
    assert ROUNDS <= roles
    request = next(
        s for s in timeline.steps if s.kind == "message" and s.ref.type == "invoke_request" and s.round == "evaluate"
    )
    html = page_client.get(f"/tasks/{recorded.id}/replay/?at={request.index}").content.decode()
    trace = page_client.get(f"/tasks/{recorded.id}/trace/?node={request.ref.id}").content.decode()
    assert f'<li id="node-{request.ref.id}"><details open>' in trace
    assert f"?node={request.ref.id}#node-{request.ref.id}" in html
    main = ExecutionContext.objects.get(task=recorded, role="main")
    only_main = page_client.get(f"/tasks/{recorded.id}/replay/?agent={main.id}").content.decode()
    shown = {int(i) for i in re.findall(r'<li class="tl-\w+[^"]*" data-index="(\d+)"', only_main)}
    assert shown and shown == {s.index for s in timeline.steps if s.context and s.context.id == main.id} & shown
    assert page_client.get(f"/tasks/{recorded.id}/replay/?step=two").status_code == 400
    forked = page_client.post(
        f"/tasks/{recorded.id}/fork",
        {"from_step": request.fork_step, "prompt_enhancement": recorded.prompt_enhancement},
    )
    assert forked.status_code == 302
    fork = Task.objects.exclude(pk=recorded.id).get(run_spec__fork__task_id=recorded.id)
    assert fork.run_spec["fork"]["from_step"] == request.fork_step and fork.run_spec["fork"]["overrides"] == {}


def test_the_page_speaks_chinese(page_client, recorded):
    timeline = task_replay.build_task_timeline(recorded)
    answer = next(s for s in timeline.steps if s.step_kind == "answer")
    html = page_client.get(
        f"/tasks/{recorded.id}/replay/?step={answer.index + 1}", HTTP_ACCEPT_LANGUAGE="zh-hans"
    ).content.decode()
    with translation.override("zh-hans"):
        label = task_replay.snapshot_step(answer.ref.trigger)[1]
    assert label != f"Answered {answer.ref.trigger.removeprefix('answered ')}" and label in html
    assert "从这里分叉" in html


def test_every_step_row_is_matched_and_translated():
    rows = yaml.safe_load(task_replay.STEPS_FILE.read_text(encoding="utf-8"))["steps"]
    assert len(rows) == len(task_replay.step_rules())
    for row in rows:
        trigger = task_replay.PLACE.sub(lambda m: f"x_{m.group(1)}", row["pattern"])
        kind, label = task_replay.snapshot_step(trigger)
        assert kind == row["kind"], row
        with translation.override("zh-hans"):
            chinese = task_replay.snapshot_step(trigger)[1]
        assert chinese != label, f"no Chinese for {row['label']!r}"
        for name in task_replay.PLACE.findall(row["pattern"]):
            assert f"x_{name}" in label and f"x_{name}" in chinese
    assert task_replay.snapshot_step("something new") == ("snapshot", "something new")
