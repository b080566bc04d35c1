"""Replay and fork (docs/architecture.md §3): a task re-run as a new one that takes its first N
completed steps from the record and runs live from there, then compared with its source.

On the ``openai`` executor with a chat-completions server on 127.0.0.1 (tests/model_server.py):
a replay with no live step reproduces the artifacts byte for byte and sends the model
nothing; a fork from step 0 with another prompt layer sends the model the changed system
prompt, and its artifacts differ where the model's answers did.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from monitoring.models import Message, Task
from runs.resume import recorded_steps
from tests.documents import CLINIC
from tests.executors.test_review_on_a_model import ReviewBrain
from tests.helpers import wait_for_task
from tests.model_server import Completion, host_on_model

STRICT = "STRICT MODE: name every vague word."


class LayerAwareBrain(ReviewBrain):
    """The review brain, except that a system prompt with STRICT marks each problem it finds."""

    strict = False

    def __call__(self, body: dict[str, Any]) -> Completion:
        self.strict = any(STRICT in m.get("content", "") for m in body["messages"] if m["role"] == "system")
        return super().__call__(body)

    def _review(self, prompt: str) -> dict[str, Any]:
        answer = super()._review(prompt)
        if self.strict:
            answer = json.loads(json.dumps(answer))
            answer["issues"][0]["problem"] += " (strict)"
        return answer


@pytest.fixture
def model_host(transactional_db, builtin, settings):
    with host_on_model(settings, LayerAwareBrain(), MODEL_STREAM=False) as model:
        yield model


def run_source(api, model_host) -> Task:
    response = api.post("/api/v1/tasks", {"workflow": "requirement_review", "input_markdown": CLINIC}, format="json")
    assert response.status_code == 201, response.json()
    task = wait_for_task(model_host.host, response.json()["task_id"])
    assert task.status == "completed", task.error
    return task


def fork(api, model_host, task_id: str, body: dict[str, Any]) -> Task:
    response = api.post(f"/api/v1/tasks/{task_id}/fork", body, format="json")
    assert response.status_code == 201, response.json()
    return wait_for_task(model_host.host, response.json()["task_id"])


def artifacts(task: Task) -> dict[str, str]:
    return {a.name: a.content for a in task.artifacts.all()}


def test_a_replay_with_no_live_step_reproduces_the_artifacts_and_spends_no_tokens(api, model_host):
    source = run_source(api, model_host)
    steps = len(recorded_steps(source.id))
    assert api.get(f"/api/v1/tasks/{source.id}").json()["steps"] == steps
    asked = len(model_host.server.requests)
    replay = fork(api, model_host, source.id, {"from_step": steps})
    assert replay.status == "completed"
    assert artifacts(replay) == artifacts(source)  # byte for byte
    assert len(model_host.server.requests) == asked  # the model was not asked anything
    assert replay.tokens_used == 0
    assert not Message.objects.filter(task_id=replay.id, type="invoke_request").exists()
    body = api.get(f"/api/v1/tasks/{source.id}/compare", {"with": replay.id}).json()
    assert {row["status"] for row in body["artifacts"]} == {"same"}
    assert api.get(f"/api/v1/tasks/{replay.id}").json()["forked_from"] == {"task_id": source.id, "from_step": steps}


def test_a_fork_with_another_prompt_layer_sends_it_to_the_model_and_its_artifacts_differ(api, model_host):
    source = run_source(api, model_host)
    asked = len(model_host.server.requests)
    forked = fork(api, model_host, source.id, {"from_step": 0, "overrides": {"prompt_enhancement": STRICT}})
    assert forked.status == "completed", forked.error
    new_requests = model_host.server.requests[asked:]
    assert new_requests
    assert all(STRICT in body["messages"][0]["content"] for body in new_requests)
    assert not any(STRICT in body["messages"][0]["content"] for body in model_host.server.requests[:asked])
    review = json.loads(artifacts(forked)["review_dev.json"])
    assert review["issues"][0]["problem"].endswith("(strict)")
    body = api.get(f"/api/v1/tasks/{source.id}/compare", {"with": forked.id}).json()
    changed = {row["name"]: row for row in body["artifacts"] if row["status"] == "changed"}
    assert "review_dev.json" in changed
    assert any(line.startswith("+") and "(strict)" in line for line in changed["review_dev.json"]["diff"])


def test_a_fork_from_a_middle_step_takes_the_steps_before_it_from_the_record(api, model_host):
    source = run_source(api, model_host)
    steps = recorded_steps(source.id)
    reviews = sum(1 for step in steps[:4] if step.capability_id == "expert_review")
    forked = fork(api, model_host, source.id, {"from_step": 4})
    assert forked.status == "completed", forked.error
    sent = Message.objects.filter(task_id=forked.id, type="invoke_request")
    original = Message.objects.filter(task_id=source.id, type="invoke_request")
    assert sent.count() == original.count() - 4  # the first four steps were not sent again
    assert reviews == 4
    assert artifacts(forked).keys() == artifacts(source).keys()


def test_fork_refuses_bad_input_and_running_tasks(api, transactional_db, builtin):
    from tests.runs.test_resume import queued_task

    queued_task("busy")
    assert api.post("/api/v1/tasks/busy/fork", {"from_step": 0}, format="json").status_code == 409
    Task.objects.filter(pk="busy").update(status="completed")
    for body, field in (
        ({"from_step": 1}, "from_step"),  # it has no completed steps
        ({"from_step": "0"}, "from_step"),
        ({"from_step": True}, "from_step"),
        ({"from_step": 0, "overrides": {"model": "x"}}, "overrides"),
        ({"from_step": 0, "overrides": []}, "overrides"),
        ({"from_step": 0, "overrides": {"prompt_enhancement": 3}}, "overrides.prompt_enhancement"),
    ):
        response = api.post("/api/v1/tasks/busy/fork", body, format="json")
        assert response.status_code == 400, (body, response.json())
        assert field in response.json()["errors"], (body, response.json())
    assert api.post("/api/v1/tasks/nope/fork", {"from_step": 0}, format="json").status_code == 404
    assert api.get("/api/v1/tasks/busy/compare").status_code == 400
    ghost = api.get("/api/v1/tasks/busy/compare", {"with": "ghost"})
    assert (ghost.status_code, ghost.json()["detail"]) == (404, "there is no task ghost")
    assert Task.objects.count() == 1  # nothing was started


def test_the_task_page_forks_and_the_compare_page_shows_the_difference(page_client, api, model_host):
    source = run_source(api, model_host)
    steps = len(recorded_steps(source.id))
    page = page_client.get(f"/tasks/{source.id}/").content.decode()
    assert "Re-run from a step…" in page
    response = page_client.post(
        f"/tasks/{source.id}/fork", {"from_step": "0", "change_prompt": "1", "prompt_enhancement": STRICT}
    )
    assert response.status_code == 302
    forked_id = response["Location"].rstrip("/").split("/")[-1]
    forked = wait_for_task(model_host.host, forked_id)
    page = page_client.get(f"/tasks/{forked.id}/").content.decode()
    assert f"at step 0 of {steps}" in page
    compare = page_client.get(f"/tasks/{source.id}/compare/", {"with": forked.id}).content.decode()
    assert "review_dev.json</code> · changed" in compare
    assert "(strict)" in compare
    pick = page_client.get(f"/tasks/{source.id}/compare/")  # no ?with=: which task, not a 404
    assert pick.status_code == 200
    assert f'<option value="{forked.id}">' in pick.content.decode()
    assert f'<option value="{source.id}">' not in pick.content.decode()
    junk = page_client.get(f"/tasks/{source.id}/compare/", {"with": "nope"})
    assert junk.status_code == 404
    assert "There is no task nope that you can see." in junk.content.decode()
    assert f'<option value="{forked.id}">' in junk.content.decode()  # and the choice again
    refused = page_client.post(f"/tasks/{source.id}/fork", {"from_step": "999"}, follow=True).content.decode()
    assert "Give a whole number from 0 to" in refused


def test_a_fork_with_another_prompt_version_uses_it_for_that_task_alone(api, model_host):
    from prompts.models import PromptVersion

    source = run_source(api, model_host)
    asked = len(model_host.server.requests)
    active = PromptVersion.objects.filter(
        is_active=True, template__template_type="system_prompt", template__project__isnull=True
    ).select_related("template__role")
    versions = {}
    for version in active:  # a saved but never activated version of every role's system prompt
        PromptVersion.objects.create(
            template=version.template,
            version="9.0.0",
            content=f"{version.content}\n{STRICT}",
            variables=version.variables,
            language=version.language,
        )
        versions[f"{version.template.role.role}/system_prompt"] = "9.0.0"
    forked = fork(api, model_host, source.id, {"from_step": 0, "overrides": {"prompt_versions": versions}})
    assert forked.status == "completed", forked.error
    new_requests = model_host.server.requests[asked:]
    missing = [
        body["messages"][0]["content"][:120] for body in new_requests if STRICT not in body["messages"][0]["content"]
    ]
    assert new_requests and not missing, missing
    assert json.loads(artifacts(forked)["review_dev.json"])["issues"][0]["problem"].endswith("(strict)")
    assert forked.run_spec["config_overlay"]["prompts"]["pm/system_prompt"]["version"] == "9.0.0"
    # the saved configuration did not move: the active versions are the same, and a new task
    # (not a fork) sends the old prompt
    assert not PromptVersion.objects.filter(version="9.0.0", is_active=True).exists()
    asked = len(model_host.server.requests)
    run_source(api, model_host)
    assert not any(STRICT in body["messages"][0]["content"] for body in model_host.server.requests[asked:])


def test_fork_overrides_that_name_nothing_real_are_refused_by_field(api, transactional_db, builtin):
    Task.objects.create(
        id="done", kind="task", title="t", status="completed", run_spec={"capability_id": "x", "params": {}}
    )
    for overrides, field in (
        ({"prompt_versions": {"nobody/system_prompt": "1.0.0"}}, "overrides.prompt_versions.nobody/system_prompt"),
        ({"prompt_versions": {"pm/system_prompt": "77.0.0"}}, "overrides.prompt_versions.pm/system_prompt"),
        ({"prompt_versions": {"pm": "1.0.0"}}, "overrides.prompt_versions.pm"),
        ({"prompt_versions": []}, "overrides.prompt_versions"),
        ({"tool_modes": {"main/file_write": "maybe"}}, "overrides.tool_modes.main/file_write"),
        ({"tool_modes": {"main/teleport": "allow"}}, "overrides.tool_modes.main/teleport"),
        ({"invoke": {"pm/dba": "yes"}}, "overrides.invoke.pm/dba"),
        ({"invoke": {"pm/ghost": True}}, "overrides.invoke.pm/ghost"),
        ({"executors": {"pm": {"executor": "quantum"}}}, "overrides.executors.pm.executor"),
        ({"executors": {"pm": {"model": ""}}}, "overrides.executors.pm.model"),
        ({"executors": {"pm": {"temperature": 1}}}, "overrides.executors.pm"),
        ({"executors": {"ghost": {"model": "m"}}}, "overrides.executors.ghost"),
    ):
        response = api.post("/api/v1/tasks/done/fork", {"from_step": 0, "overrides": overrides}, format="json")
        assert response.status_code == 400, (overrides, response.json())
        assert field in response.json()["errors"], (overrides, response.json())
    assert Task.objects.count() == 1  # nothing was started
