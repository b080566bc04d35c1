"""The invoke and tool matrix documents (PRD §4.7, US-07): read, save as one change, refuse
stale versions and bad cells, project overrides with reset to global (issue 5)."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from capabilities.builtin import read_builtin
from capabilities.config import add_listener, current_version, remove_listener
from capabilities.models import ConfigChange, InvokePermission, Project, ToolPermission
from team.snapshot import build_snapshot

INVOKE = "/api/v1/permissions/invoke-matrix"
TOOLS = "/api/v1/permissions/tool-matrix"


@pytest.fixture
def events():
    seen: list[dict] = []
    add_listener(seen.append)
    yield seen
    remove_listener(seen.append)


@pytest.fixture
def shop(db):
    return Project.objects.create(slug="shop", name="Shop", tech_stack="Django")


def token_client(user) -> APIClient:
    client = APIClient()
    token, _ = Token.objects.get_or_create(user=user)
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client


def test_invoke_matrix_document_is_the_prd_table_over_every_role(api, builtin):
    team, _cards = read_builtin()
    doc = api.get(INVOKE).json()
    roles = [r["role"] for r in team["roles"]] + [r["role"] for r in team["custom_roles"]]
    assert doc["roles"] == roles
    assert doc["project"] is None
    assert isinstance(doc["version"], int)
    for caller in roles:
        allowed = set(team["invoke_matrix"].get(caller, []))
        assert doc["matrix"][caller] == {callee: callee in allowed for callee in roles}


def test_tool_matrix_document_has_the_three_modes_of_the_prd(api, builtin):
    team, _cards = read_builtin()
    doc = api.get(TOOLS).json()
    assert doc["tools"] == ["file_read", "file_write", "code_execution", "database", "deployment", "network"]
    for role, cells in team["tool_matrix"].items():
        assert doc["matrix"][role] == cells


@pytest.mark.django_db(transaction=True)
def test_saving_cells_is_one_change_one_version_one_audit_row_and_one_event(api, builtin, staff_user, events):
    doc = api.get(INVOKE).json()
    before = current_version()
    assert doc["matrix"]["coderA"]["dba"] is True
    assert doc["matrix"]["pm"]["dba"] is False
    response = api.put(
        INVOKE,
        {"version": doc["version"], "matrix": {"coderA": {"dba": False}, "pm": {"dba": True}}, "note": "swap"},
        format="json",
    )
    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["changed"] is True
    assert body["version"] == before + 1 == current_version()
    assert body["matrix"]["coderA"]["dba"] is False
    assert body["matrix"]["pm"]["dba"] is True
    change = ConfigChange.objects.get(new_version=before + 1)
    assert change.config_type == "permission"
    assert change.actor == staff_user
    assert change.note == "swap"
    assert change.changed_fields == ["invoke_matrix.coderA.dba", "invoke_matrix.pm.dba"]
    assert change.changes["invoke_matrix.coderA.dba"] == {"old": True, "new": False}
    assert [e["new_version"] for e in events] == [str(before + 1)]
    assert events[0]["config_type"] == "permission"
    snapshot = build_snapshot()
    assert not snapshot.can_invoke("coderA", "dba")
    assert snapshot.can_invoke("pm", "dba")


def test_saving_the_values_already_there_changes_nothing(api, builtin):
    doc = api.get(INVOKE).json()
    before = current_version()
    response = api.put(INVOKE, {"version": doc["version"], "matrix": doc["matrix"]}, format="json")
    assert response.status_code == 200
    assert response.json()["changed"] is False
    assert current_version() == before
    assert ConfigChange.objects.filter(new_version__gt=before).count() == 0


def test_a_stale_version_is_refused_with_409_and_the_difference(api, builtin):
    loaded = api.get(INVOKE).json()
    first = api.put(
        INVOKE, {"version": loaded["version"], "matrix": {"coderA": {"dba": False}}, "note": "first"}, format="json"
    )
    assert first.status_code == 200
    second = api.put(INVOKE, {"version": loaded["version"], "matrix": {"pm": {"dba": True}}}, format="json")
    assert second.status_code == 409
    body = second.json()
    assert "changed" in body["detail"]
    assert "operator" in body["detail"]
    assert body["your_version"] == loaded["version"]
    assert body["current_version"] == first.json()["version"]
    assert body["changes"] == [
        {
            "version": first.json()["version"],
            "config_type": "permission",
            "project": None,
            "actor": "operator",
            "at": body["changes"][0]["at"],
            "note": "first",
            "changes": {"invoke_matrix.coderA.dba": {"old": True, "new": False}},
        }
    ]
    assert body["current"]["matrix"]["coderA"]["dba"] is False
    assert not InvokePermission.objects.get(project=None, caller__role="pm", target__role="dba").allowed


def test_bad_cells_are_all_listed_and_nothing_is_saved(api, builtin):
    doc = api.get(INVOKE).json()
    before = current_version()
    response = api.put(
        INVOKE,
        {
            "version": doc["version"],
            "matrix": {"ghost": {"dba": True}, "pm": {"nobody": True, "dba": "yes", "architect": None}, "dba": []},
        },
        format="json",
    )
    assert response.status_code == 400
    errors = response.json()["errors"]
    assert errors["matrix.ghost"] == ["unknown role 'ghost'"]
    assert errors["matrix.pm.nobody"] == ["unknown role 'nobody'"]
    assert errors["matrix.pm.dba"] == ["must be true or false"]
    assert "only applies to a project" in errors["matrix.pm.architect"][0]
    assert errors["matrix.dba"] == ["must be an object {column: value}"]
    assert current_version() == before


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"matrix": {}}, "version"),
        ({"version": "3", "matrix": {}}, "version"),
        ({"version": -1, "matrix": {}}, "version"),
        ({"version": 0}, "matrix"),
        ({"version": 0, "matrix": [1]}, "matrix"),
        ({"version": 0, "matrix": {}, "note": "x" * 2001}, "note"),
    ],
)
def test_malformed_saves_name_the_field(api, builtin, payload, field):
    response = api.put(INVOKE, payload, format="json")
    assert response.status_code == 400
    assert field in response.json()["errors"]


def test_tool_matrix_refuses_unknown_tools_and_modes(api, builtin):
    doc = api.get(TOOLS).json()
    response = api.put(
        TOOLS,
        {"version": doc["version"], "matrix": {"pm": {"teleport": "allow", "network": "maybe"}}},
        format="json",
    )
    assert response.status_code == 400
    errors = response.json()["errors"]
    assert errors["matrix.pm.teleport"] == ["unknown tool 'teleport'"]
    assert errors["matrix.pm.network"] == ["must be one of allow, deny, confirm"]


def test_tool_cells_save_and_reach_the_snapshot(api, builtin):
    doc = api.get(TOOLS).json()
    response = api.put(
        TOOLS,
        {"version": doc["version"], "matrix": {"pm": {"network": "confirm", "file_write": "deny"}}},
        format="json",
    )
    assert response.status_code == 200
    change = ConfigChange.objects.order_by("-new_version").first()
    assert change.config_type == "tool_binding"
    assert change.role == "pm"
    assert change.changes == {
        "tool_matrix.pm.network": {"old": "deny", "new": "confirm"},
        "tool_matrix.pm.file_write": {"old": "allow", "new": "deny"},
    }
    snapshot = build_snapshot()
    assert snapshot.tool_mode("pm", "network") == "confirm"
    assert snapshot.tool_mode("pm", "file_write") == "deny"


def test_project_overrides_show_both_layers_and_reset_to_global(api, builtin, shop):
    doc = api.get(INVOKE, {"project": "shop"}).json()
    assert doc["overrides"] == {}
    assert doc["global"] == doc["matrix"]
    saved = api.put(
        f"{INVOKE}?project=shop", {"version": doc["version"], "matrix": {"designer": {"dba": True}}}, format="json"
    )
    assert saved.status_code == 200
    body = saved.json()
    assert body["matrix"]["designer"]["dba"] is True
    assert body["global"]["designer"]["dba"] is False
    assert body["overrides"] == {"designer": {"dba": True}}
    assert build_snapshot("shop").can_invoke("designer", "dba")
    assert not build_snapshot().can_invoke("designer", "dba")
    assert api.get(INVOKE).json()["matrix"]["designer"]["dba"] is False
    change = ConfigChange.objects.order_by("-new_version").first()
    assert change.project == shop
    assert change.changes == {"invoke_matrix.designer.dba": {"old": None, "new": True}}
    reset = api.put(
        f"{INVOKE}?project=shop", {"version": body["version"], "matrix": {"designer": {"dba": None}}}, format="json"
    )
    assert reset.status_code == 200
    assert reset.json()["overrides"] == {}
    assert not InvokePermission.objects.filter(project=shop).exists()
    assert not build_snapshot("shop").can_invoke("designer", "dba")


def test_setting_a_project_cell_to_the_global_value_drops_the_override(api, builtin, shop):
    doc = api.get(TOOLS, {"project": "shop"}).json()
    first = api.put(
        f"{TOOLS}?project=shop", {"version": doc["version"], "matrix": {"pm": {"network": "allow"}}}, format="json"
    )
    assert first.json()["overrides"] == {"pm": {"network": "allow"}}
    back = api.put(
        f"{TOOLS}?project=shop",
        {"version": first.json()["version"], "matrix": {"pm": {"network": "deny"}}},
        format="json",
    )
    assert back.json()["overrides"] == {}
    assert not ToolPermission.objects.filter(project=shop).exists()
    unchanged = api.put(
        f"{TOOLS}?project=shop",
        {"version": back.json()["version"], "matrix": {"pm": {"network": "deny"}}},
        format="json",
    )
    assert unchanged.json()["changed"] is False
    assert not ToolPermission.objects.filter(project=shop).exists()


def test_a_global_change_makes_a_loaded_project_view_stale(api, builtin, shop):
    project_doc = api.get(INVOKE, {"project": "shop"}).json()
    global_doc = api.get(INVOKE).json()
    assert (
        api.put(INVOKE, {"version": global_doc["version"], "matrix": {"pm": {"dba": True}}}, format="json").status_code
        == 200
    )
    stale = api.put(
        f"{INVOKE}?project=shop", {"version": project_doc["version"], "matrix": {"pm": {"dba": False}}}, format="json"
    )
    assert stale.status_code == 409
    assert stale.json()["changes"][0]["changes"] == {"invoke_matrix.pm.dba": {"old": False, "new": True}}


def test_a_project_change_does_not_make_the_global_view_or_another_project_stale(api, builtin, shop):
    Project.objects.create(slug="blog", name="Blog")
    global_doc = api.get(INVOKE).json()
    blog_doc = api.get(INVOKE, {"project": "blog"}).json()
    shop_doc = api.get(INVOKE, {"project": "shop"}).json()
    assert (
        api.put(
            f"{INVOKE}?project=shop", {"version": shop_doc["version"], "matrix": {"pm": {"dba": True}}}, format="json"
        ).status_code
        == 200
    )
    assert (
        api.put(INVOKE, {"version": global_doc["version"], "matrix": {"dba": {"pm": True}}}, format="json").status_code
        == 200
    )
    # the global change above does make the blog view stale, like any global change
    assert (
        api.put(
            f"{INVOKE}?project=blog", {"version": blog_doc["version"], "matrix": {"pm": {"dba": True}}}, format="json"
        ).status_code
        == 409
    )
    fresh = api.get(INVOKE, {"project": "blog"}).json()
    assert (
        api.put(
            f"{INVOKE}?project=blog", {"version": fresh["version"], "matrix": {"pm": {"dba": True}}}, format="json"
        ).status_code
        == 200
    )


def test_unknown_project_is_404_naming_it(api, builtin):
    response = api.get(INVOKE, {"project": "ghost"})
    assert response.status_code == 404
    assert "ghost" in response.json()["detail"]


def test_viewers_read_but_cannot_save(builtin, viewer_user):
    client = token_client(viewer_user)
    doc = client.get(INVOKE).json()
    response = client.put(INVOKE, {"version": doc["version"], "matrix": {"pm": {"dba": True}}}, format="json")
    assert response.status_code == 403
    assert "capabilities.change_invokepermission" in response.json()["detail"]
    assert not InvokePermission.objects.get(project=None, caller__role="pm", target__role="dba").allowed
    assert APIClient().get(INVOKE).status_code == 401


def test_the_matching_django_permission_is_enough_and_only_for_its_matrix(builtin, viewer_user):
    viewer_user.user_permissions.add(Permission.objects.get(codename="change_toolpermission"))
    client = token_client(viewer_user)
    tools = client.get(TOOLS).json()
    ok = client.put(TOOLS, {"version": tools["version"], "matrix": {"pm": {"network": "confirm"}}}, format="json")
    assert ok.status_code == 200
    invoke = client.get(INVOKE).json()
    refused = client.put(INVOKE, {"version": invoke["version"], "matrix": {"pm": {"dba": True}}}, format="json")
    assert refused.status_code == 403


def test_session_clients_need_the_csrf_token(builtin, staff_user):
    client = APIClient(enforce_csrf_checks=True)
    client.force_login(staff_user)
    doc = client.get(INVOKE).json()
    response = client.put(INVOKE, {"version": doc["version"], "matrix": {"pm": {"dba": True}}}, format="json")
    assert response.status_code == 403
    assert "CSRF" in response.json()["detail"]
