"""Seed 003 orchestration workflows: validated at save, run on the runtime as tasks whose
every step is a recorded, permission-checked invoke."""

from __future__ import annotations

import json

import pytest

from capabilities.models import Skill
from capabilities.skill_models import Workflow
from monitoring.models import Message
from tests.helpers import wait_for_task
from tests.skills.support import DATA, bring_up

ASSISTANT = """\
skill:
  id: assistant
  name: Assistant
  version: 1.0.0
  capabilities:
    - name: classifyIntent
      type: EXPOSED
      inputParameters: [{name: intent, type: string, required: true}, {name: query, type: string}]
      outputParameters: [{name: intent, type: string}]
    - name: getWeather
      type: EXPOSED
      inputParameters: [{name: location, type: string, required: true}]
      outputParameters: [{name: report, type: string}]
    - name: composeEmail
      type: EXPOSED
      inputParameters: [{name: to, type: string, required: true}]
      outputParameters: [{name: draft, type: string}]
    - name: chat
      type: ENTRY
      inputParameters: [{name: query, type: string, required: true}]
      outputParameters: [{name: reply, type: string}]
    - name: formatResponse
      type: EXPOSED
      inputParameters: [{name: context, type: object, required: true}, {name: template, type: string}]
      outputParameters: [{name: text, type: string}]
    - name: lookupSecret
      type: INTERNAL
"""

FLOW = """\
orchestration:
  id: assistant-flow
  name: Assistant flow
  steps:
    - id: intent-recognition
      capability: cap://assistant/classifyIntent
      input:
        intent: ${userInput.intent}
        query: ${userInput.query}
      output:
        intent: ${result.intent}
    - id: route-by-intent
      type: switch
      condition: ${intent-recognition.intent}
      cases:
        weather:
          next: weather-query
        email:
          next: email-compose
        default:
          next: general-chat
    - id: weather-query
      capability: cap://assistant/getWeather
      input:
        location: ${userInput.location}
      next: format-response
    - id: email-compose
      capability: cap://assistant/composeEmail
      input: {to: "${userInput.to}"}
      next: end
    - id: general-chat
      capability: cap://assistant/chat
      input: {query: "Q: ${userInput.query}"}
      next: end
    - id: format-response
      capability: cap://assistant/formatResponse
      input:
        context: ${weather-query}
        template: weather_report
"""


def save(api, text: str, method: str = "post", path: str = "/api/v1/workflows"):
    return getattr(api, method)(path, text.encode(), content_type="application/yaml")


@pytest.fixture
def assistant(api, builtin):
    bring_up(api, ASSISTANT, role="devops")


def test_the_seed_example_is_refused_naming_every_unknown_reference(api, assistant):
    text = (DATA / "workflows" / "smart-assistant-workflow.yaml").read_text(encoding="utf-8")
    response = save(api, text)
    assert response.status_code == 400
    errors = response.json()["errors"]
    assert "unknown step 'email-compose'" in errors["orchestration.steps[1].cases.email.next"][0]
    assert "unknown step 'general-chat'" in errors["orchestration.steps[1].cases.default.next"][0]
    assert all("(line " in reasons[0] for reasons in errors.values())
    assert not Workflow.objects.exists()


def test_the_seed_example_with_its_branches_fixed_still_names_unknown_capabilities(api, assistant):
    text = (DATA / "workflows" / "smart-assistant-workflow.yaml").read_text(encoding="utf-8")
    text = text.replace("next: email-compose", "next: weather-query").replace("next: general-chat", "next: end")
    errors = save(api, text).json()["errors"]
    assert "unknown capability 'cap://llm-service/classifyIntent'" in errors["orchestration.steps[0].capability"][0]
    assert "orchestration.steps[2].capability" in errors
    assert "orchestration.steps[3].capability" in errors


@pytest.mark.parametrize(
    ("old", "new", "path", "words"),
    [
        ("next: format-response", "next: format-respons", "orchestration.steps[2].next", "did you mean"),
        ("next: format-response", "next: intent-recognition", "orchestration.steps", "loop"),
        ("        default:\n          next: general-chat\n", "", "orchestration.steps[4]", "unreachable"),
        ("${userInput.location}", "${format-response.text}", "orchestration.steps[2].input", "never runs before"),
        ("${weather-query}", "${weather-query.temperature}", "orchestration.steps[5].input", "returns no"),
        ("${intent-recognition.intent}", "${intent-recognition.mood}", "orchestration.steps[1].condition", "no output"),
        ("${userInput.query}\n      output", "${nowhere}\n      output", "orchestration.steps[0].input", "no step"),
        ("${weather-query}", "${route-by-intent}", "orchestration.steps[5].input", "switch"),
        ("cap://assistant/getWeather", "cap://assistant/lookupSecret", "orchestration.steps[2].capability", "INTERNAL"),
        ("        location: ${userInput.location}\n", "        city: x\n", "orchestration.steps[2].input", "requires"),
        ("- id: email-compose", "- id: weather-query", "orchestration.steps[3].id", "used twice"),
        ("      type: switch\n", "", "orchestration.steps[1].condition", "only a switch step"),
        ("cap://assistant/chat", "cap://assistant/chat/x", "orchestration.steps[4].capability", "cap://"),
        ("cap://assistant/chat", "workflow_orchestration", "orchestration.steps[4].capability", "runs whole"),
    ],
)
def test_workflow_validation_errors_name_the_path_and_reason(api, assistant, old, new, path, words):
    assert old in FLOW
    response = save(api, FLOW.replace(old, new, 1))
    assert response.status_code == 400, response.content
    errors = response.json()["errors"]
    assert path in errors, errors
    assert words in " ".join(errors[path]), errors


def test_an_inactive_capability_is_a_warning_at_save(api, assistant):
    api.post("/api/v1/skills/assistant/deactivate", {}, format="json")
    response = save(api, FLOW)
    assert response.status_code == 201
    assert any("not active" in w["message"] for w in response.json()["warnings"])


def test_saving_twice_conflicts_and_put_replaces_with_a_new_version(api, assistant):
    assert save(api, FLOW).status_code == 201
    assert save(api, FLOW).status_code == 409
    again = save(
        api, FLOW.replace("name: Assistant flow", "name: Assistant flow 2"), "put", "/api/v1/workflows/assistant-flow"
    )
    assert again.status_code == 200
    assert again.json()["version"] == 2
    renamed = save(api, FLOW.replace("id: assistant-flow", "id: other"), "put", "/api/v1/workflows/assistant-flow")
    assert renamed.status_code == 409
    assert api.get("/api/v1/workflows").json()["count"] == 1


def _run(api, host, run_input: dict) -> dict:
    response = api.post("/api/v1/workflows/assistant-flow/run", {"input": run_input}, format="json")
    assert response.status_code == 201, response.content
    task = wait_for_task(host, response.json()["task_id"])
    return {"task": task, "body": api.get(f"/api/v1/tasks/{task.id}").json()}


@pytest.mark.parametrize(
    ("run_input", "path", "last"),
    [
        ({"intent": "weather", "location": "Beijing", "query": "q"}, "weather-query", "assistant__format_response"),
        ({"intent": "email", "to": "ann@example.com", "query": "q"}, "email-compose", "assistant__compose_email"),
        ({"intent": "smalltalk", "query": "how are you"}, "general-chat", "assistant__chat"),
    ],
)
def test_a_switch_workflow_runs_end_to_end_on_the_runtime(api, runtime_host, assistant, run_input, path, last):
    assert save(api, FLOW).status_code == 201
    run = _run(api, runtime_host, run_input)
    task = run["task"]
    assert task.status == "completed", task.error
    assert task.workflow == "assistant-flow"
    main = next(c for c in run["body"]["contexts"] if c["role"] == "main")
    assert main["status"] == "completed"
    response = Message.objects.get(task_id=task.id, type="invoke_response", capability_id="workflow_orchestration")
    steps = [s["id"] for s in response.payload["result"]["steps"]]
    assert steps[:3] == ["intent-recognition", "route-by-intent", path]
    invoked = list(
        Message.objects.filter(task_id=task.id, type="invoke_request", from_role="main")
        .order_by("seq")
        .values_list("capability_id", "to_role", "status")
    )
    assert invoked[0] == ("assistant__classify_intent", "devops", "delivered")
    assert invoked[-1][0] == last
    assert all(status == "delivered" for _, _, status in invoked)
    if path == "weather-query":
        formatted = Message.objects.get(task_id=task.id, type="invoke_request", capability_id=last)
        assert "report" in formatted.payload["params"]["context"]
    if path == "general-chat":
        chat = Message.objects.get(task_id=task.id, type="invoke_request", capability_id=last)
        assert chat.payload["params"] == {"query": "Q: how are you"}
    page = api.get(f"/tasks/{task.id}/")
    assert page.status_code in (200, 302)


def test_a_run_fails_naming_the_step_when_its_capability_was_deactivated(api, runtime_host, assistant):
    save(api, FLOW)
    api.post("/api/v1/skills/assistant/deactivate", {}, format="json")
    run = _run(api, runtime_host, {"intent": "weather", "location": "x", "query": "q"})
    task = run["task"]
    assert task.status == "failed"
    assert task.error["code"] == "capability_disabled"
    assert "step intent-recognition" in task.error["message"]


def test_a_run_with_a_missing_input_fails_at_that_step(api, runtime_host, assistant):
    save(api, FLOW)
    run = _run(api, runtime_host, {"intent": "weather", "query": "q"})
    assert run["task"].status == "failed"
    assert "step weather-query" in run["task"].error["message"]
    assert "location" in run["task"].error["message"]


def test_run_input_must_be_a_mapping_and_the_workflow_must_exist(api, assistant):
    save(api, FLOW)
    bad = api.post("/api/v1/workflows/assistant-flow/run", {"input": [1, 2]}, format="json")
    assert bad.status_code == 400
    assert "input" in bad.json()["errors"]
    assert api.post("/api/v1/workflows/nope/run", {}, format="json").status_code == 404


def test_uninstalling_a_skill_a_workflow_uses_lists_it_and_needs_force(api, assistant):
    save(api, FLOW)
    api.post("/api/v1/skills/assistant/deactivate", {}, format="json")
    refused = api.delete("/api/v1/skills/assistant")
    assert refused.status_code == 409
    assert refused.json()["dependents"]["workflows"][0]["workflowId"] == "assistant-flow"
    assert Skill.objects.get(skill_id="assistant").status == "DEACTIVATED"
    assert api.delete("/api/v1/skills/assistant?force=true").status_code == 200


def test_workflow_and_skill_schemas_are_published(api, builtin):
    skill_schema = api.get("/api/v1/schemas/skill-index").json()
    assert skill_schema["$defs"]["skill"]["required"] == ["id", "name", "version"]
    flow_schema = api.get("/api/v1/schemas/orchestration").json()
    assert "steps" in json.dumps(flow_schema)
    assert api.get("/api/v1/schemas/nope").status_code == 404


def test_a_workflow_runs_the_same_when_main_thinks_with_a_model(api, runtime_host, assistant):
    """The steps are the workflow's: with main on the openai executor the engine still runs
    deterministically and never asks the model (no model server is configured here)."""
    from django.db import transaction

    from capabilities.config import record_change
    from capabilities.models import AgentRole

    with transaction.atomic():  # published after commit: the next task start sees it
        AgentRole.objects.filter(role="main").update(executor="openai")
        record_change("role", changed_fields=["executor"], role="main")
    save(api, FLOW)
    run = _run(api, runtime_host, {"intent": "smalltalk", "query": "hello"})
    assert run["task"].status == "completed", run["task"].error


CHAT_FLOW = """\
orchestration:
  id: chat-flow
  name: Chat flow
  steps:
    - id: answer
      capability: cap://assistant/chat
      input:
        query: hello
"""


def test_a_workflow_run_s_page_shows_what_ran_and_says_why_there_are_no_artifacts(
    api, runtime_host, assistant, page_client
):
    """Issue 17: the run showed ``{}`` as its input document and "No artifacts yet" for ever."""
    assert save(api, CHAT_FLOW).status_code == 201
    empty = page_client.get("/workflows/chat-flow/").content.decode()
    assert 'id="no-runs"' in empty and "▶ Run" in empty.split('id="no-runs"')[1]
    assert "Run demo" not in empty.split('id="no-runs"')[1].split("</div>")[0]
    response = api.post("/api/v1/workflows/chat-flow/run", {"input": {}}, format="json")
    task = wait_for_task(runtime_host, response.json()["task_id"])
    runtime_host.recorder.flush()
    assert task.status == "completed", task.error
    html = page_client.get(f"/tasks/{task.id}/").content.decode()
    panel = html.split('id="workflow-run-result"')[1].split("</section>")[0]
    assert 'data-step="answer"' in panel and "assistant__chat" in panel
    assert 'class="badge completed">completed' in panel
    assert 'id="run-output"' in panel or 'id="run-output-empty"' in panel
    assert "This run produced no artifacts" in html.split('id="no-artifacts"')[1].split("</div>")[0]
    assert "No artifacts yet" not in html
    assert "The run was started with an empty input ({})." in html
    assert "<summary>Input document</summary>" not in html
    runs = page_client.get("/workflows/chat-flow/").content.decode()
    assert 'id="no-runs"' not in runs and task.id in runs


def test_a_failed_workflow_run_s_page_names_the_step_and_the_invokes_it_made(api, runtime_host, assistant, page_client):
    save(api, FLOW)
    api.post("/api/v1/skills/assistant/deactivate", {}, format="json")
    task = _run(api, runtime_host, {"intent": "weather", "location": "x", "query": "q"})["task"]
    runtime_host.recorder.flush()
    html = page_client.get(f"/tasks/{task.id}/").content.decode()
    panel = html.split('id="workflow-run-result"')[1].split("</section>")[0]
    assert "<code>capability_disabled</code> at step intent-recognition" in panel
    assert "assistant__classify_intent" in panel and 'id="run-output' not in panel
