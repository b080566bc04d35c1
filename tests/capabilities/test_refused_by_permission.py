"""A signed-in user refused a governed write for want of permission (403) is in the audit
trail as ``outcome: refused`` like any other refused write (issue 31: every refused write is
audited), through the API and the pages alike; an anonymous caller (401, or the login page)
names nobody and is not. A write only staff may make says so."""

from __future__ import annotations

from django.test import Client
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from capabilities.access import STAFF_ONLY
from capabilities.models import ConfigChange, ToolPermission

TOOL_MATRIX = "/api/v1/permissions/tool-matrix"


def api_as(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.get_or_create(user=user)[0].key}")
    return client


def refused_rows():
    return list(ConfigChange.every.filter(outcome="refused"))


def test_a_non_staff_matrix_save_is_refused_and_audited_with_its_403(api, viewer_user, builtin):
    doc = api.get(TOOL_MATRIX).json()
    before = list(ToolPermission.objects.values_list("pk", "mode"))
    body = {"version": doc["version"], "matrix": {"main": {"file_write": "deny"}}, "note": "tighten"}
    response = api_as(viewer_user).put(TOOL_MATRIX, body, format="json")
    assert response.status_code == 403, response.content
    assert list(ToolPermission.objects.values_list("pk", "mode")) == before
    (row,) = refused_rows()
    assert row.actor == viewer_user
    assert row.config_type == "tool_binding"
    assert row.refusal["status"] == 403
    assert row.refusal["detail"] == response.json()["detail"]
    assert row.refusal["method"] == "PUT"
    assert row.changed_fields == ["matrix"]
    assert row.note == "tighten"
    anonymous = APIClient().put(TOOL_MATRIX, body, format="json")
    assert anonymous.status_code == 401
    assert len(refused_rows()) == 1  # nobody to name


def test_a_non_staff_matrix_form_is_refused_and_audited_with_its_403(viewer_user, builtin):
    client = Client()
    client.force_login(viewer_user)
    response = client.post("/permissions/tools/", {"cell.main.file_write": "deny", "note": "tighten"})
    assert response.status_code == 403
    (row,) = refused_rows()
    assert row.actor == viewer_user
    assert row.config_type == "tool_binding"
    assert row.refusal["status"] == 403
    assert row.refusal["form"] is True
    anonymous = Client().post("/permissions/tools/", {"cell.main.file_write": "deny"})
    assert anonymous.status_code in (302, 403)
    assert len(refused_rows()) == 1


def test_a_write_only_staff_may_make_says_so(viewer_user, builtin):
    response = api_as(viewer_user).post("/api/v1/knowledge/sources", {"name": "x"}, format="json")
    assert response.status_code == 403
    assert response.json()["detail"] == STAFF_ONLY
