"""Revert a saved change from the audit trail (issue 30, ``team.revert``): the preview says
what it changes now, the revert writes the recorded old values back as a new audited change
at the config version the preview showed, and every refusal changes nothing."""

from __future__ import annotations

import pytest

from capabilities.config import current_version
from capabilities.models import ConfigChange, InvokePermission, ToolPermission
from tests.helpers import database_state


def put_tool(api, mode: str, note: str = "") -> int:
    doc = api.get("/api/v1/permissions/tool-matrix").json()
    body = {"version": doc["version"], "matrix": {"main": {"file_write": mode}}, "note": note}
    response = api.put("/api/v1/permissions/tool-matrix", body, format="json")
    assert response.status_code == 200, response.content
    return ConfigChange.objects.order_by("-new_version").first().pk


def tool_mode() -> str:
    return ToolPermission.objects.get(project=None, role__role="main", tool="file_write").mode


def test_a_matrix_change_is_previewed_and_reverted_as_a_new_audited_change(api, builtin):
    before = tool_mode()
    change_id = put_tool(api, "deny" if before != "deny" else "confirm", "too open")
    changed = tool_mode()
    preview = api.get(f"/api/v1/config/changes/{change_id}/revert").json()
    assert preview["revertible"] is True
    (key,) = preview["keys"]
    assert key == {
        "key": "tool_matrix.main.file_write",
        "old": before,
        "new": changed,
        "current": changed,
        "after": before,
        "changed_since": False,
        "changes_now": True,
    }
    response = api.post(
        f"/api/v1/config/changes/{change_id}/revert", {"version": preview["version"], "note": "undo"}, format="json"
    )
    assert response.status_code == 201, response.content
    assert tool_mode() == before
    revert_row = ConfigChange.objects.order_by("-new_version").first()
    assert revert_row.pk == response.json()["change"]["id"]
    assert revert_row.changes == {"tool_matrix.main.file_write": {"old": changed, "new": before}}
    assert (
        revert_row.note
        == f"Revert of change #{change_id} (version {ConfigChange.objects.get(pk=change_id).new_version}): undo"
    )
    assert revert_row.actor.username == "operator"
    assert revert_row.new_version == preview["version"] + 1
    assert response.json()["preview"]["revertible"] is False  # reverting again changes nothing


def test_an_invoke_and_a_constraint_change_revert_too(api, builtin):
    was = InvokePermission.objects.get(project=None, caller__role="pm", target__role="dba").allowed
    doc = api.get("/api/v1/permissions/invoke-matrix").json()
    body = {"version": doc["version"], "matrix": {"pm": {"dba": not was}}}
    assert api.put("/api/v1/permissions/invoke-matrix", body, format="json").status_code == 200
    invoke_change = ConfigChange.objects.order_by("-new_version").first().pk
    doc = api.get("/api/v1/constraints/coderA").json()
    timeout = doc["constraints"]["timeout_s"]
    body = {"version": doc["version"], "constraints": {"timeout_s": timeout + 7}}
    assert api.put("/api/v1/constraints/coderA", body, format="json").status_code == 200
    constraint_change = ConfigChange.objects.order_by("-new_version").first().pk
    for change_id in (invoke_change, constraint_change):
        version = api.get(f"/api/v1/config/changes/{change_id}/revert").json()["version"]
        response = api.post(f"/api/v1/config/changes/{change_id}/revert", {"version": version}, format="json")
        assert response.status_code == 201, response.content
    assert InvokePermission.objects.get(project=None, caller__role="pm", target__role="dba").allowed is was
    assert api.get("/api/v1/constraints/coderA").json()["constraints"]["timeout_s"] == timeout


def test_a_revert_at_a_stale_version_changes_nothing_and_shows_the_fresh_preview(api, builtin):
    before = tool_mode()
    made = "deny" if before != "deny" else "confirm"
    change_id = put_tool(api, made)
    preview = api.get(f"/api/v1/config/changes/{change_id}/revert").json()
    later = ({"allow", "confirm", "deny"} - {before, made}).pop()
    put_tool(api, later, "someone else moved it")  # the key changed since
    state = database_state()
    response = api.post(f"/api/v1/config/changes/{change_id}/revert", {"version": preview["version"]}, format="json")
    assert response.status_code == 409
    body = response.json()
    assert body["current_version"] == current_version()
    assert body["preview"]["keys"][0]["changed_since"] is True
    assert body["preview"]["keys"][0]["current"] == later
    assert database_state() == state  # applied changes and values as they were (refusals are in ``every``)
    refused = ConfigChange.every.filter(outcome="refused").order_by("-id").first()
    assert refused is not None and refused.refusal["status"] == 409


@pytest.mark.parametrize(
    ("body", "field"),
    [({}, "version"), ({"version": "3"}, "version"), ({"version": 1, "extra": 1}, "extra")],
)
def test_bad_revert_requests_are_refused_by_field(api, builtin, body, field):
    change_id = put_tool(api, "deny" if tool_mode() != "deny" else "confirm")
    response = api.post(f"/api/v1/config/changes/{change_id}/revert", body, format="json")
    assert response.status_code == 400
    assert field in response.json()["errors"]


def test_unknown_refused_and_unsupported_changes(api, builtin):
    assert api.get("/api/v1/config/changes/999999/revert").status_code == 404
    builtin_change = ConfigChange.objects.filter(config_type="builtin").first()
    preview = api.get(f"/api/v1/config/changes/{builtin_change.pk}/revert").json()
    assert preview["revertible"] is False and "cannot write back" in preview["reason"]
    response = api.post(
        f"/api/v1/config/changes/{builtin_change.pk}/revert", {"version": preview["version"]}, format="json"
    )
    assert response.status_code == 409


def test_only_staff_may_revert(api, builtin, viewer_user):
    from rest_framework.authtoken.models import Token
    from rest_framework.test import APIClient

    change_id = put_tool(api, "deny" if tool_mode() != "deny" else "confirm")
    viewer = APIClient()
    viewer.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=viewer_user).key}")
    version = viewer.get(f"/api/v1/config/changes/{change_id}/revert").json()["version"]
    refused = viewer.post(f"/api/v1/config/changes/{change_id}/revert", {"version": version}, format="json")
    assert refused.status_code == 403
    (row,) = ConfigChange.every.filter(outcome="refused")  # audited as a refused tool-matrix write
    assert (row.config_type, row.refusal["status"], row.actor) == ("tool_binding", 403, viewer_user)


def test_a_prompt_activation_reverts_as_a_rollback_to_the_version_before(api, builtin):
    from prompts.models import PromptVersion

    def active() -> PromptVersion:
        return PromptVersion.objects.get(
            template__role__role="pm", template__template_type="persona", template__project=None, is_active=True
        )

    before = active()
    response = api.post("/api/v1/prompts/pm/persona/versions", {"content": "A sharper persona."}, format="json")
    assert response.status_code == 201, response.content
    assert active().content == "A sharper persona."
    change = ConfigChange.objects.filter(config_type="prompt").order_by("-new_version").first()
    preview = api.get(f"/api/v1/config/changes/{change.pk}/revert").json()
    assert preview["revertible"] is True, preview
    assert preview["keys"][0]["after"] == before.version
    response = api.post(f"/api/v1/config/changes/{change.pk}/revert", {"version": preview["version"]}, format="json")
    assert response.status_code == 201, response.content
    now = active()
    assert now.content == before.content
    assert now.rollback_of == before.version


def test_a_prompt_revert_is_done_once_reverted_and_a_second_one_is_refused(api, builtin):
    """A review found that a prompt change stayed 'revertible' for ever (a rollback makes a
    new version number with the old content) and that concurrent reverts all applied."""
    api.post("/api/v1/prompts/pm/persona/versions", {"content": "A sharper persona."}, format="json")
    change = ConfigChange.objects.filter(config_type="prompt").order_by("-new_version").first()
    version = api.get(f"/api/v1/config/changes/{change.pk}/revert").json()["version"]
    assert (
        api.post(f"/api/v1/config/changes/{change.pk}/revert", {"version": version}, format="json").status_code == 201
    )
    after = api.get(f"/api/v1/config/changes/{change.pk}/revert").json()
    assert after["revertible"] is False and "nothing to revert" in after["reason"]
    assert after["keys"][0]["changes_now"] is False and after["keys"][0]["changed_since"] is False
    again = api.post(f"/api/v1/config/changes/{change.pk}/revert", {"version": after["version"]}, format="json")
    assert again.status_code == 409


def test_concurrent_prompt_reverts_apply_once(api, builtin, transactional_db):
    import threading

    from prompts.models import PromptVersion

    api.post("/api/v1/prompts/pm/persona/versions", {"content": "A sharper persona."}, format="json")
    change = ConfigChange.objects.filter(config_type="prompt").order_by("-new_version").first()
    version = api.get(f"/api/v1/config/changes/{change.pk}/revert").json()["version"]
    statuses: list[int] = []
    start = threading.Barrier(4)

    def revert_once() -> None:
        start.wait()
        response = api.post(f"/api/v1/config/changes/{change.pk}/revert", {"version": version}, format="json")
        statuses.append(response.status_code)

    threads = [threading.Thread(target=revert_once) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(statuses) == [201, 409, 409, 409]
    rollbacks = PromptVersion.objects.filter(template__role__role="pm", template__template_type="persona")
    assert rollbacks.exclude(rollback_of="").count() == 1


def test_a_revert_for_a_role_that_is_gone_says_so(api, builtin):
    response = api.post("/api/v1/roles", {"role": "brk", "display_name": "Brk"}, format="json")
    assert response.status_code == 201, response.content
    api.post("/api/v1/prompts/brk/persona/versions", {"content": "Be brief."}, format="json")
    change = ConfigChange.objects.filter(config_type="prompt", role="brk").order_by("-new_version").first()
    version = api.get("/api/v1/roles/brk").json()["version"]
    assert api.delete(f"/api/v1/roles/brk?version={version}").status_code == 204
    preview = api.get(f"/api/v1/config/changes/{change.pk}/revert").json()
    assert preview["revertible"] is False and preview["reason"] == "role brk no longer exists"
    refused = api.post(f"/api/v1/config/changes/{change.pk}/revert", {"version": preview["version"]}, format="json")
    assert refused.status_code == 409
