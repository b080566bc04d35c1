"""The main job end to end through the API: POST /api/v1/tasks -> task_id -> artifacts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from monitoring.models import ExecutionContext, Message, Snapshot, Task
from tests.documents import BOOKSTORE, CLINIC
from tests.helpers import wait_for_task

EXPECTED_ARTIFACTS = {
    "requirement.md",
    "interview_result.json",
    "domain_role.md",
    "requirement_final.md",
    "consolidation_report.json",
    "quality_report.json",
    *(f"{kind}_{p}.json" for kind in ("review", "evaluate", "response") for p in ("dev", "pm", "ai", "domain")),
}


def run_review(api, host, markdown: str) -> dict:
    response = api.post("/api/v1/tasks", {"workflow": "requirement_review", "input_markdown": markdown}, format="json")
    assert response.status_code == 201, response.content
    task_id = response.json()["task_id"]
    wait_for_task(host, task_id)
    detail = api.get(f"/api/v1/tasks/{task_id}")
    assert detail.status_code == 200
    return detail.json()


def findings(body: dict) -> set[tuple[str, str]]:
    artifacts = {a["name"]: a["content"] for a in body["artifacts"]}
    out = set()
    for p in ("dev", "pm", "ai", "domain"):
        for issue in json.loads(artifacts[f"review_{p}.json"])["issues"]:
            out.add((issue["rule"], issue["quote"]))
    return out


def test_requirement_review_runs_end_to_end_and_returns_every_artifact(api, runtime_host):
    body = run_review(api, runtime_host, BOOKSTORE)
    assert body["status"] == "completed", body["error"]
    names = {a["name"] for a in body["artifacts"]}
    assert EXPECTED_ARTIFACTS <= names
    roles = sorted(c["role"] for c in body["contexts"])
    assert {"main", "architect", "pm", "ai_expert", "domain_expert", "consolidator"} <= set(roles)
    assert all(c["status"] == "completed" for c in body["contexts"])
    final = next(a["content"] for a in body["artifacts"] if a["name"] == "requirement_final.md")
    assert final != BOOKSTORE
    assert "Customers must see the status of every order on an order page." in final  # the user's text stays
    assert "within 300 ms" not in final  # no unit the user did not give: the owner is asked
    assert "What is the unit of 300" in final
    report = json.loads(next(a["content"] for a in body["artifacts"] if a["name"] == "consolidation_report.json"))
    assert report["counts"]["adopted"] >= 1 and report["counts"]["open_point"] >= 1


def test_two_documents_give_different_findings(api, runtime_host):
    first = findings(run_review(api, runtime_host, BOOKSTORE))
    second = findings(run_review(api, runtime_host, CLINIC))
    assert first
    assert second
    assert first != second
    assert all(quote == "" or quote in BOOKSTORE for _, quote in first)
    assert all(quote == "" or quote in CLINIC for _, quote in second)


def test_every_step_is_recorded_as_messages_contexts_and_snapshots(api, runtime_host):
    body = run_review(api, runtime_host, CLINIC)
    task_id = body["task_id"]
    requests = Message.objects.filter(task_id=task_id, type="invoke_request")
    # 4 experts x 3 modes + consolidation + quality check, plus the operator's hand-over to main
    assert requests.filter(capability_id="expert_review").count() == 12
    assert requests.filter(status="delivered").count() == requests.count()
    assert Message.objects.filter(task_id=task_id, type="invoke_response").count() == requests.count()
    main = ExecutionContext.objects.filter(task_id=task_id, role="main").order_by("created_at").first()
    triggers = list(Snapshot.objects.filter(context=main).values_list("trigger", flat=True))
    assert triggers[0] == "start"
    assert "before invoke expert_review" in triggers
    assert "after invoke expert_review" in triggers


@pytest.mark.parametrize(
    ("markdown", "reason"),
    [
        ("", "empty"),
        ("   \n\n  ", "empty"),
        ("x" * 5_000_001, "limit"),
        ("# doc\x00\x00 binary", "binary"),
    ],
)
def test_a_bad_document_is_refused_with_a_clear_error(api, builtin, markdown, reason):
    response = api.post("/api/v1/tasks", {"workflow": "requirement_review", "input_markdown": markdown}, format="json")
    assert response.status_code == 400
    body = response.json()
    assert reason in body["errors"]["input_markdown"][0]
    assert not Task.objects.exists()


def test_unknown_workflow_and_project_are_refused(api, builtin):
    response = api.post("/api/v1/tasks", {"workflow": "nope", "input_markdown": "# x"}, format="json")
    assert response.status_code == 400
    assert "workflow" in response.json()["errors"]
    response = api.post(
        "/api/v1/tasks", {"workflow": "requirement_review", "input_markdown": "# x", "project": "ghost"}, format="json"
    )
    assert response.status_code == 400
    assert "ghost" in response.json()["errors"]["project"][0]


def test_unknown_task_is_404(api, builtin):
    assert api.get("/api/v1/tasks/doesnotexist").status_code == 404


def test_a_document_that_is_not_text_or_not_unicode_is_refused(api, builtin):
    number = api.post("/api/v1/tasks", {"workflow": "requirement_review", "input_markdown": 12345}, format="json")
    assert number.status_code == 400
    assert "string" in number.json()["errors"]["input_markdown"][0]
    raw = '{"workflow": "requirement_review", "input_markdown": "# Title\\n\\ud800 hello"}'
    surrogate = api.generic("POST", "/api/v1/tasks", raw, content_type="application/json")
    assert surrogate.status_code == 400
    assert surrogate.json()["errors"] == {"input_markdown": ["holds an unpaired surrogate (not valid Unicode)"]}
    assert not Task.objects.exists()


def test_many_reviews_at_once_all_complete(api, runtime_host):
    ids = []
    for n in range(12):  # three times main's instance limit
        response = api.post(
            "/api/v1/tasks",
            {"workflow": "requirement_review", "input_markdown": f"# Doc {n}\n- The page must load fast.\n"},
            format="json",
        )
        ids.append(response.json()["task_id"])
    statuses = {wait_for_task(runtime_host, task_id, timeout=240).status for task_id in ids}
    assert statuses == {"completed"}, [Task.objects.get(pk=i).error for i in ids]


def test_a_document_larger_than_the_token_budget_is_refused_up_front(api, builtin):
    from capabilities.models import RoleConstraint

    RoleConstraint.objects.filter(project=None, role__role="main").update(token_budget=1000)
    text = "# Big\n" + "- The system must do a thing.\n" * 200  # about 1,500 tokens
    response = api.post("/api/v1/tasks", {"workflow": "requirement_review", "input_markdown": text}, format="json")
    assert response.status_code == 400
    assert "token budget is 1,000" in response.json()["errors"]["input_markdown"][0]


def test_an_oversized_body_gets_a_json_413(api, builtin, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    response = api.post(
        "/api/v1/tasks", {"workflow": "requirement_review", "input_markdown": "x" * 5000}, format="json"
    )
    assert response.status_code == 413
    assert "larger than 1,000 bytes" in response.json()["detail"]


def test_unknown_api_urls_answer_json(api, builtin):
    response = api.get("/api/v1/nothing-here")
    assert response.status_code == 404
    assert response.json()["detail"]


def test_a_run_that_crashes_before_the_runtime_records_it_marks_the_task_failed(api, runtime_host, monkeypatch):
    """A run that raises (here: the config snapshot cannot be read) must not leave the task
    ``running`` for ever: it ends ``failed`` with a reason the operator can read."""

    def unreadable(*args, **kwargs):
        raise RuntimeError("database is unavailable")

    monkeypatch.setattr(runtime_host.runtime.config, "snapshot_for", unreadable)
    response = api.post("/api/v1/tasks", {"workflow": "generic", "task_description": "Anything"}, format="json")
    assert response.status_code == 201, response.content
    task = wait_for_task(runtime_host, response.json()["task_id"], timeout=20)
    assert task.status == "failed"
    assert task.finished_at is not None
    assert task.error == {"code": "executor_error", "message": "the run stopped on an internal error (RuntimeError)"}
    assert api.get(f"/api/v1/tasks/{task.id}").json()["status"] == "failed"


def set_main_file_write(api, mode: str) -> None:
    doc = api.get("/api/v1/permissions/tool-matrix").json()
    body = {"version": doc["version"], "matrix": {"main": {"file_write": mode}}, "note": f"file_write {mode}"}
    response = api.put("/api/v1/permissions/tool-matrix", body, format="json")
    assert response.status_code == 200, response.content


def saved_copy(task_id: str):
    from django.conf import settings

    return list(Path(settings.TEAMCLAW["PROJECTS_ROOT"]).rglob(f"reviews/{task_id}/requirement_final.md"))


def main_context(task_id: str) -> ExecutionContext:
    return ExecutionContext.objects.get(task_id=task_id, role="main")


def test_main_saves_the_final_document_to_the_project_folder_when_file_write_is_allowed(api, runtime_host):
    body = run_review(api, runtime_host, BOOKSTORE)
    assert body["status"] == "completed"
    (copy,) = saved_copy(body["task_id"])
    final = next(a["content"] for a in body["artifacts"] if a["name"] == "requirement_final.md")
    assert copy.read_text(encoding="utf-8") == final
    assert main_context(body["task_id"]).output_state.get("errors", []) == []


def test_with_file_write_on_confirm_the_copy_waits_for_the_operator(api, runtime_host):
    from tests.live_helpers import wait_for_confirmation

    set_main_file_write(api, "confirm")
    response = api.post("/api/v1/tasks", {"workflow": "requirement_review", "input_markdown": BOOKSTORE}, format="json")
    task_id = response.json()["task_id"]
    confirmation = wait_for_confirmation(runtime_host, task_id)
    assert confirmation.tool == "file_write"
    assert confirmation.role == "main"
    assert Task.objects.get(pk=task_id).status == "running"
    assert saved_copy(task_id) == []
    assert api.post(f"/api/v1/confirmations/{confirmation.id}", {"approve": True}, format="json").status_code == 200
    assert wait_for_task(runtime_host, task_id).status == "completed"
    assert len(saved_copy(task_id)) == 1


@pytest.mark.parametrize("how", ["deny", "reject"])
def test_a_denied_or_rejected_copy_is_reported_and_the_review_still_completes(api, runtime_host, how):
    from tests.live_helpers import wait_for_confirmation

    set_main_file_write(api, "deny" if how == "deny" else "confirm")
    response = api.post("/api/v1/tasks", {"workflow": "requirement_review", "input_markdown": BOOKSTORE}, format="json")
    task_id = response.json()["task_id"]
    if how == "reject":
        confirmation = wait_for_confirmation(runtime_host, task_id)
        api.post(f"/api/v1/confirmations/{confirmation.id}", {"approve": False}, format="json")
    task = wait_for_task(runtime_host, task_id)
    assert task.status == "completed"
    assert saved_copy(task_id) == []
    assert task.artifacts.filter(name="requirement_final.md").exists()
    (error,) = main_context(task_id).output_state["errors"]
    assert error["code"] == "tool_denied"
    assert error["tool"] == "file_write"
    assert error["path"] == f"reviews/{task_id}/requirement_final.md"
