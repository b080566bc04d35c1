"""Forks stay inside the permission matrices (issue 31, ``runs.fork_policy``).

A non-staff user who may fork a task may narrow the matrices for the fork but not widen them
(a tool mode towards allow, an invoke cell to true, another executor or model): 403 naming
the override, audited as a refused ``fork`` write, no task made. A staff user may, with a
reason, and leaves an ``override`` audit row. A tool use the source's operator rejected stays
rejected in the fork, whatever the mode, unless a staff user asks to reconsider it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from django.conf import settings
from rest_framework.test import APIClient

from capabilities.models import ConfigChange
from monitoring.models import ExecutionContext, Task
from tests.documents import BOOKSTORE
from tests.helpers import wait_for_task


@pytest.fixture
def user_api(viewer_api) -> APIClient:
    return viewer_api


def set_main_file_write(api, mode: str) -> None:
    doc = api.get("/api/v1/permissions/tool-matrix").json()
    body = {"version": doc["version"], "matrix": {"main": {"file_write": mode}}, "note": f"file_write {mode}"}
    assert api.put("/api/v1/permissions/tool-matrix", body, format="json").status_code == 200


def review(client, host) -> Task:
    response = client.post(
        "/api/v1/tasks", {"workflow": "requirement_review", "input_markdown": BOOKSTORE}, format="json"
    )
    assert response.status_code == 201, response.content
    return wait_for_task(host, response.json()["task_id"])


def saved_copies(task_id: str) -> list[Path]:
    return list(Path(settings.TEAMCLAW["PROJECTS_ROOT"]).rglob(f"reviews/{task_id}/requirement_final.md"))


def file_write_errors(task_id: str) -> list[dict]:
    state = ExecutionContext.objects.get(task_id=task_id, role="main").output_state
    return [e for e in state.get("errors", []) if e.get("tool") == "file_write"]


def fork_rows(outcome: str) -> list[ConfigChange]:
    return list(ConfigChange.every.filter(config_type="fork", outcome=outcome).order_by("id"))


WIDENING = [
    ({"tool_modes": {"main/file_write": "allow"}}, "overrides.tool_modes.main/file_write"),
    ({"invoke": {"pm/dba": True}}, "overrides.invoke.pm/dba"),
    ({"executors": {"pm": {"executor": "openai"}}}, "overrides.executors.pm"),
]


@pytest.mark.parametrize(("overrides", "field"), WIDENING)
def test_a_non_staff_fork_that_widens_is_refused_naming_the_override_and_audited(
    api, user_api, runtime_host, overrides, field
):
    set_main_file_write(api, "deny")
    source = review(user_api, runtime_host)
    assert source.status == "completed"
    tasks_before = Task.objects.count()
    response = user_api.post(
        f"/api/v1/tasks/{source.id}/fork", {"from_step": 3, "overrides": overrides, "reason": "try"}, format="json"
    )
    assert response.status_code == 403, response.content
    assert field in response.json()["errors"]
    assert Task.objects.count() == tasks_before
    (row,) = fork_rows("refused")
    assert row.actor.username == "viewer"
    assert row.refusal["status"] == 403
    assert field in row.changed_fields


def test_the_escalation_of_the_issue_writes_no_file(api, user_api, runtime_host):
    """The measured escalation: file_write denied by staff, a non-staff fork asks for allow."""
    set_main_file_write(api, "deny")
    source = review(user_api, runtime_host)
    response = user_api.post(
        f"/api/v1/tasks/{source.id}/fork",
        {"from_step": 14, "overrides": {"tool_modes": {"main/file_write": "allow"}}},
        format="json",
    )
    assert response.status_code == 403
    assert saved_copies(source.id) == []
    assert not Task.objects.exclude(pk=source.id).exists()


def test_a_non_staff_fork_may_narrow_the_matrices(api, user_api, runtime_host):
    set_main_file_write(api, "allow")
    source = review(user_api, runtime_host)
    assert len(saved_copies(source.id)) == 1
    response = user_api.post(
        f"/api/v1/tasks/{source.id}/fork",
        {"from_step": 0, "overrides": {"tool_modes": {"main/file_write": "deny"}, "invoke": {"main/pm": False}}},
        format="json",
    )
    assert response.status_code == 201, response.content
    fork = wait_for_task(runtime_host, response.json()["task_id"])
    assert saved_copies(fork.id) == []
    assert fork_rows("override") == [] and fork_rows("refused") == []


def test_a_staff_fork_widens_with_a_reason_and_is_audited(api, runtime_host):
    set_main_file_write(api, "deny")
    source = review(api, runtime_host)
    body = {"from_step": 3, "overrides": {"tool_modes": {"main/file_write": "allow"}}}
    missing = api.post(f"/api/v1/tasks/{source.id}/fork", body, format="json")
    assert missing.status_code == 400 and "reason" in missing.json()["errors"]
    response = api.post(f"/api/v1/tasks/{source.id}/fork", {**body, "reason": "check the saved copy"}, format="json")
    assert response.status_code == 201, response.content
    fork = wait_for_task(runtime_host, response.json()["task_id"])
    assert fork.status == "completed"
    assert len(saved_copies(fork.id)) == 1
    (row,) = fork_rows("override")
    assert row.actor.username == "operator"
    assert row.note == "check the saved copy"
    assert row.changes["overrides.tool_modes.main/file_write"] == {"old": "deny", "new": "allow"}
    assert row.changes["task"] == {"old": source.id, "new": fork.id}
    audit = api.get("/api/v1/config/changes", {"outcome": "override"}).json()
    assert [c["config_type"] for c in audit["results"]] == ["fork"]


def test_a_fork_of_a_widened_fork_is_a_widening_too(api, user_api, viewer_user, runtime_host):
    set_main_file_write(api, "deny")
    source = review(api, runtime_host)
    body = {"from_step": 3, "overrides": {"tool_modes": {"main/file_write": "allow"}}, "reason": "staff check"}
    forked = api.post(f"/api/v1/tasks/{source.id}/fork", body, format="json").json()["task_id"]
    widened = wait_for_task(runtime_host, forked)
    Task.objects.filter(pk=widened.id).update(created_by=viewer_user)  # handed to the viewer
    response = user_api.post(f"/api/v1/tasks/{widened.id}/fork", {"from_step": 0}, format="json")
    assert response.status_code == 403
    assert "inherited" in response.json()["errors"]["overrides.tool_modes.main/file_write"][0]


def reject_the_copy(api, host) -> Task:
    from tests.live_helpers import wait_for_confirmation

    set_main_file_write(api, "confirm")
    task_id = api.post(
        "/api/v1/tasks", {"workflow": "requirement_review", "input_markdown": BOOKSTORE}, format="json"
    ).json()["task_id"]
    confirmation = wait_for_confirmation(host, task_id)
    assert api.post(f"/api/v1/confirmations/{confirmation.id}", {"approve": False}, format="json").status_code == 200
    task = wait_for_task(host, task_id)
    assert saved_copies(task_id) == []
    return task


def test_a_rejected_tool_use_stays_rejected_in_a_fork_even_when_staff_widens_the_mode(api, page_client, runtime_host):
    source = reject_the_copy(api, runtime_host)
    body = {"from_step": 0, "overrides": {"tool_modes": {"main/file_write": "allow"}}, "reason": "widen only"}
    response = api.post(f"/api/v1/tasks/{source.id}/fork", body, format="json")
    assert response.status_code == 201, response.content
    fork = wait_for_task(runtime_host, response.json()["task_id"])
    assert fork.status == "completed"
    assert saved_copies(fork.id) == []
    (error,) = file_write_errors(fork.id)
    assert error["code"] == "tool_denied"
    assert fork.run_spec["fork"]["rejected_tools"] == ["main/file_write"]
    page = page_client.get(f"/tasks/{fork.id}/", HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert "Kept rejected" in page and "<code>main/file_write</code>" in page


def test_a_rejected_tool_use_in_confirm_mode_is_not_asked_again_in_a_fork(api, runtime_host):
    from runs.confirmations import list_confirmations

    source = reject_the_copy(api, runtime_host)
    response = api.post(f"/api/v1/tasks/{source.id}/fork", {"from_step": 0}, format="json")
    fork = wait_for_task(runtime_host, response.json()["task_id"])
    assert fork.status == "completed"
    assert list(list_confirmations(task_id=fork.id).filter(kind="tool")) == []
    assert file_write_errors(fork.id)[0]["code"] == "tool_denied"


def test_only_staff_may_reconsider_a_rejected_tool_use_and_it_is_audited(api, user_api, viewer_user, runtime_host):
    source = reject_the_copy(api, runtime_host)
    source.created_by = viewer_user
    source.save(update_fields=["created_by"])
    body = {"from_step": 0, "overrides": {"reconsider_rejected": True}, "reason": "the operator changed their mind"}
    refused = user_api.post(f"/api/v1/tasks/{source.id}/fork", body, format="json")
    assert refused.status_code == 403
    assert "overrides.reconsider_rejected" in refused.json()["errors"]
    set_main_file_write(api, "allow")
    response = api.post(f"/api/v1/tasks/{source.id}/fork", body, format="json")
    assert response.status_code == 201, response.content
    fork = wait_for_task(runtime_host, response.json()["task_id"])
    assert len(saved_copies(fork.id)) == 1
    (row,) = fork_rows("override")
    assert row.changes["overrides.reconsider_rejected"] == {"old": ["main/file_write"], "new": []}


def test_bad_reason_and_reconsider_values_are_refused_by_field(api, runtime_host):
    source = review(api, runtime_host)
    cases = [
        ({"from_step": 0, "reason": 5}, "reason"),
        ({"from_step": 0, "reason": "x" * 2001}, "reason"),
        ({"from_step": 0, "overrides": {"reconsider_rejected": "yes"}}, "overrides.reconsider_rejected"),
    ]
    for body, field in cases:
        response = api.post(f"/api/v1/tasks/{source.id}/fork", body, format="json")
        assert response.status_code == 400, (body, response.content)
        assert field in response.json()["errors"], (body, response.json())


def test_the_fork_form_uses_the_prompt_layer_typed_and_keeps_an_unchanged_one(api, page_client, runtime_host):
    """A layer typed into the page's fork form is the fork's (it was dropped silently unless
    a checkbox was ticked); one left as the task's own is no override."""
    source = review(api, runtime_host)
    page_client.post(f"/tasks/{source.id}/fork", {"from_step": "0", "prompt_enhancement": "Answer strictly."})
    typed = Task.objects.exclude(pk=source.id).get()
    assert typed.run_spec["fork"]["overrides"] == {"prompt_enhancement": "Answer strictly."}
    assert typed.prompt_enhancement == "Answer strictly."
    wait_for_task(runtime_host, typed.id)
    page_client.post(f"/tasks/{source.id}/fork", {"from_step": "0", "prompt_enhancement": source.prompt_enhancement})
    kept = Task.objects.exclude(pk__in=[source.id, typed.id]).get()
    assert kept.run_spec["fork"]["overrides"] == {}
    wait_for_task(runtime_host, kept.id)
    page = page_client.get(f"/tasks/{source.id}/", HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert "needs a user who may change them" in page
