"""Issue 17 item 8: refused attempts at a governed config write are in the audit trail
(who, when, what, why), told apart from changes (``outcome``), and never as a half change."""

from __future__ import annotations

import pytest

from capabilities.config import current_version
from capabilities.models import AgentRole, ConfigChange
from tests.web.test_governance_pages import invoke_form

ROLES = "/api/v1/roles"
CHANGES = "/api/v1/config/changes"


def test_a_stale_save_is_audited_as_refused_without_changing_anything(api, builtin):
    doc = api.get(f"{ROLES}/pm").json()
    ok = api.patch(f"{ROLES}/pm", {"version": doc["version"], "description": "Writes PRDs."}, format="json")
    assert ok.status_code == 200
    version, applied = current_version(), ConfigChange.objects.count()
    stale = api.patch(f"{ROLES}/pm", {"version": doc["version"], "emoji": "🧾", "note": "old tab"}, format="json")
    assert stale.status_code == 409
    assert current_version() == version  # no version for a refusal
    assert ConfigChange.objects.count() == applied  # the changes are what they were
    assert AgentRole.objects.get(role="pm").emoji != "🧾"
    refused = api.get(CHANGES, {"outcome": "refused"}).json()
    assert refused["count"] == 1
    (row,) = refused["results"]
    assert row["outcome"] == "refused"
    assert row["actor"] == "operator"
    assert row["config_type"] == "role"
    assert row["role"] == "pm"
    assert row["changed_fields"] == ["emoji"]
    assert row["changes"] == {}
    assert row["note"] == "old tab"
    assert row["old_version"] == row["new_version"] == version
    assert row["refusal"]["status"] == 409
    assert "since you loaded it" in row["refusal"]["detail"]
    assert row["refusal"]["method"] == "PATCH"
    assert row["refusal"]["path"] == f"{ROLES}/pm"
    applied_rows = api.get(CHANGES, {"outcome": "applied"}).json()
    assert {r["outcome"] for r in applied_rows["results"]} == {"applied"}
    everything = api.get(CHANGES).json()
    assert everything["count"] == applied_rows["count"] + 1
    assert everything["results"][0]["outcome"] == "refused"  # newest first


def test_an_invalid_write_is_audited_with_its_field_errors(api, builtin):
    doc = api.get("/api/v1/permissions/invoke-matrix").json()
    bad = api.put(
        "/api/v1/permissions/invoke-matrix",
        {"version": doc["version"], "matrix": {"pm": {"ghost": True}}},
        format="json",
    )
    assert bad.status_code == 400
    (row,) = api.get(CHANGES, {"outcome": "refused"}).json()["results"]
    assert row["config_type"] == "permission"
    assert row["refusal"]["status"] == 400
    assert row["refusal"]["errors"] == bad.json()["errors"]


def test_reads_and_refused_logins_are_no_config_refusals(api, builtin, viewer_user):
    """A read, and a write by nobody signed in (401), are not refused writes; a signed-in
    user's write refused for want of permission (403) is one (issue 31)."""
    from rest_framework.authtoken.models import Token
    from rest_framework.test import APIClient

    assert api.get(f"{ROLES}/pm").status_code == 200
    assert APIClient().patch(f"{ROLES}/pm", {"version": 0}, format="json").status_code == 401
    assert api.get(CHANGES, {"outcome": "refused"}).json()["count"] == 0
    viewer = APIClient()
    viewer.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=viewer_user).key}")
    assert viewer.patch(f"{ROLES}/pm", {"version": 0}, format="json").status_code == 403
    (row,) = api.get(CHANGES, {"outcome": "refused"}).json()["results"]
    assert row["refusal"]["status"] == 403
    assert row["actor"] == viewer_user.username


def test_the_outcome_filter_is_checked(api, builtin):
    bad = api.get(CHANGES, {"outcome": "maybe"})
    assert bad.status_code == 400
    assert "outcome" in bad.json()["errors"]


def test_the_audit_page_shows_refusals_apart(page_client, api, builtin):
    doc = api.get(f"{ROLES}/pm").json()
    api.patch(f"{ROLES}/pm", {"version": doc["version"], "description": "Writes PRDs."}, format="json")
    api.patch(f"{ROLES}/pm", {"version": doc["version"], "emoji": "🧾"}, format="json")
    html = page_client.get("/config/changes/?outcome=refused").content.decode()
    assert "refused" in html.split("<tbody>")[1]
    assert "since you loaded it" in html
    applied = page_client.get("/config/changes/?outcome=applied").content.decode()
    assert "since you loaded it" not in applied


pytestmark = pytest.mark.django_db


def test_refused_prompt_and_skill_writes_are_audited_too(api, builtin):
    from tests.skills.support import skill_yaml, upload

    bad = api.post("/api/v1/prompts/pm/persona/versions", {"content": 5}, format="json")
    assert bad.status_code == 400
    assert upload(api, skill_yaml("versioned", "ping", version="2.0.0")).status_code == 201
    assert upload(api, skill_yaml("versioned", "ping", version="1.0.0")).status_code == 409
    rows = api.get(CHANGES, {"outcome": "refused"}).json()["results"]
    assert [(r["config_type"], r["refusal"]["status"]) for r in rows] == [("skill", 409), ("prompt", 400)]
    assert rows[1]["role"] == "pm"
    assert "1.0.0" in rows[0]["refusal"]["detail"]


def test_a_stale_save_through_a_page_form_is_audited_as_refused_like_the_apis(api, page_client, builtin):
    """The pages write governed configuration too; a refused form is in the audit trail as
    the API's refusal is (web.forms.PageRefusalAuditMiddleware)."""
    loaded = api.get(f"{ROLES}/pm").json()["version"]
    assert (
        api.patch(f"{ROLES}/pm", {"version": loaded, "description": "Writes PRDs."}, format="json").status_code == 200
    )
    version, applied = current_version(), ConfigChange.objects.count()
    form = {"version": str(loaded), "display_name": "PM", "emoji": "🧾", "description": "x", "note": "old tab"}
    response = page_client.post("/roles/pm/edit/", {**form, "responsibilities": "Plans"})
    assert response.status_code == 302
    assert current_version() == version
    assert ConfigChange.objects.count() == applied
    (row,) = ConfigChange.every.filter(outcome=ConfigChange.REFUSED)
    assert (row.config_type, row.role, row.note, row.actor.username) == ("role", "pm", "old tab", "operator")
    assert {"display_name", "emoji", "description", "responsibilities"} <= set(row.changed_fields)
    assert row.refusal["status"] == 409 and row.refusal["method"] == "POST" and row.refusal["form"] is True
    assert row.refusal["path"] == "/roles/pm/edit/"
    assert "since you loaded it" in row.refusal["detail"]


def test_a_stale_matrix_form_is_audited_as_refused(page_client, builtin):
    stale = invoke_form(allow={"pm:dba": True}, note="mine")
    assert page_client.post("/permissions/invoke/", invoke_form(allow={"coderA:dba": False})).status_code == 302
    response = page_client.post("/permissions/invoke/", stale)
    assert response.status_code == 409
    (row,) = ConfigChange.every.filter(outcome=ConfigChange.REFUSED)
    assert (row.config_type, row.note, row.refusal["status"]) == ("permission", "mine", 409)
    assert row.refusal["code"] == "stale_version"
    # what was tried, as config keys and read as such on the audit page (issue 30), not the
    # form's own field names (allow, base, days)
    assert row.changed_fields == ["invoke_matrix.pm.dba"]
    page = page_client.get("/config/changes/?outcome=refused", HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert "invoke permission pm → dba" in page
    assert "allow, base" not in page


def test_a_page_that_refuses_nothing_writes_no_refusal(page_client, builtin):
    assert page_client.get("/roles/pm/").status_code == 200
    assert not ConfigChange.every.filter(outcome=ConfigChange.REFUSED).exists()
