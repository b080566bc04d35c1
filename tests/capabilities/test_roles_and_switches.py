"""Custom roles (US-09), role and capability switches globally and per project (PRD §4.1,
US-06), and what the runtime does with a disabled role or card (``capability_disabled``)."""

from __future__ import annotations

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from capabilities.config import current_version
from capabilities.models import (
    AgentRole,
    CapabilityCard,
    ConfigChange,
    InvokePermission,
    Project,
    ProjectCapabilityOverride,
    ProjectRoleOverride,
    RoleConstraint,
    ToolPermission,
)
from prompts.models import PromptVersion
from team.snapshot import build_snapshot
from teamclaw.runtime import InvokeRequest

ROLES = "/api/v1/roles"


@pytest.fixture
def shop(db):
    return Project.objects.create(slug="shop", name="Shop")


def reviewer(**extra):
    return {
        "role": "codeReviewer",
        "display_name": "Code Reviewer",
        "emoji": "🔍",
        "description": "Reviews pull requests.",
        "responsibilities": ["Review code", "Ask for tests"],
        "capabilities": ["code_review"],
        "permissions": {
            "can_invoke": ["dba"],
            "can_be_invoked_by": ["main", "coderA"],
            "allowed_tools": ["file_read"],
            "requires_user_confirmation": ["network"],
            "max_concurrent_instances": 2,
        },
        "constraints": {"timeout_s": 120, "token_budget": 20000},
        "copy_prompts_from": "coderB",
        "note": "US-09",
        **extra,
    }


def test_creating_a_custom_role_sets_up_everything_as_one_version(api, builtin, staff_user):
    before = current_version()
    response = api.post(ROLES, reviewer(), format="json")
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["role"] == "codeReviewer"
    assert body["is_builtin"] is False
    assert body["enabled"] is True
    assert body["permissions"]["can_invoke"] == ["dba"]
    assert body["permissions"]["can_be_invoked_by"] == ["coderA", "main"]
    assert body["permissions"]["allowed_tools"] == ["file_read"]
    assert body["permissions"]["requires_user_confirmation"] == ["network"]
    assert "file_write" in body["permissions"]["denied_tools"]
    assert body["constraints"] == {
        "timeout_s": 120,
        "max_retries": 3,
        "file_scope": ".",
        "token_budget": 20000,
        "max_concurrent_instances": 2,
        "memory_tokens": None,
    }
    assert "code_review" in body["capabilities"]
    assert current_version() == before + 1
    change = ConfigChange.objects.get(new_version=before + 1)
    assert change.config_type == "role"
    assert change.role == "codeReviewer"
    assert change.actor == staff_user
    assert change.note == "US-09"
    assert "roles.codeReviewer.created" in change.changed_fields
    assert "codeReviewer" in change.changes["capabilities.code_review.owner_roles"]["new"]
    assert "codeReviewer" not in change.changes["capabilities.code_review.owner_roles"]["old"]
    # the whole matrix row and column exist, so the editor shows the new role
    roles = AgentRole.objects.count()
    assert InvokePermission.objects.filter(project=None, caller__role="codeReviewer").count() == roles
    assert InvokePermission.objects.filter(project=None, target__role="codeReviewer").count() == roles
    assert ToolPermission.objects.filter(project=None, role__role="codeReviewer").count() == 6
    snapshot = build_snapshot()
    assert snapshot.can_invoke("main", "codeReviewer")
    assert snapshot.can_invoke("codeReviewer", "dba")
    assert not snapshot.can_invoke("pm", "codeReviewer")


def test_prompts_are_copied_from_the_chosen_role(api, builtin):
    assert api.post(ROLES, reviewer(), format="json").status_code == 201
    copied = {v.template.template_type: v for v in PromptVersion.objects.filter(template__role__role="codeReviewer")}
    source = {
        v.template.template_type: v
        for v in PromptVersion.objects.filter(template__role__role="coderB", is_active=True, template__project=None)
    }
    assert set(copied) == set(source)
    for template_type, version in copied.items():
        assert version.is_active
        assert version.version == "1.0.0"
        assert version.content == source[template_type].content
        assert version.variables == source[template_type].variables
        assert "coderB" in version.note
    assert build_snapshot().prompts["codeReviewer"]["system_prompt"].base.content == source["system_prompt"].content


def test_without_a_source_role_the_standard_templates_use_the_new_role_s_responsibilities(api, builtin):
    data = reviewer(copy_prompts_from=None)
    assert api.post(ROLES, data, format="json").status_code == 201
    system = PromptVersion.objects.get(template__role__role="codeReviewer", template__template_type="system_prompt")
    assert "- Review code" in system.content
    assert "- Ask for tests" in system.content


def test_a_minimal_custom_role_gets_least_privilege_defaults(api, builtin):
    response = api.post(ROLES, {"role": "scribe", "display_name": "Scribe"}, format="json")
    assert response.status_code == 201
    body = response.json()
    assert body["permissions"]["can_invoke"] == []
    assert body["permissions"]["can_be_invoked_by"] == ["main"]
    assert body["permissions"]["allowed_tools"] == ["file_read"]
    assert body["permissions"]["requires_user_confirmation"] == []
    assert body["constraints"]["token_budget"] == 50000
    assert body["constraints"]["timeout_s"] == 60


@pytest.mark.parametrize(
    ("data", "field", "reason"),
    [
        ({"role": "Coder", "display_name": "x"}, "role", "starting with a lowercase letter"),
        ({"role": "a", "display_name": "x"}, "role", "2-40"),
        ({"role": "a" * 41, "display_name": "x"}, "role", "2-40"),
        ({"role": "code-reviewer", "display_name": "x"}, "role", "letters, digits or '_'"),
        ({"role": "dba", "display_name": "x"}, "role", "already exists"),
        ({"role": "codera", "display_name": "x"}, "role", "only in case"),
        ({"role": "user", "display_name": "x"}, "role", "reserved"),
        ({"role": "ok_role"}, "display_name", "required"),
        ({"role": "ok_role", "display_name": "   "}, "display_name", "blank"),
        ({"role": "ok_role", "display_name": "x", "capabilities": ["ghost"]}, "capabilities", "unknown capability"),
        (
            {"role": "ok_role", "display_name": "x", "permissions": {"can_invoke": ["ghost"]}},
            "permissions.can_invoke",
            "unknown role",
        ),
        (
            {
                "role": "ok_role",
                "display_name": "x",
                "permissions": {"allowed_tools": ["network"], "denied_tools": ["network"]},
            },
            "permissions.denied_tools",
            "also listed",
        ),
        (
            {"role": "ok_role", "display_name": "x", "permissions": {"allowed_tools": ["teleport"]}},
            "permissions.allowed_tools",
            "unknown tool",
        ),
        ({"role": "ok_role", "display_name": "x", "constraints": {"timeout_s": 0}}, "constraints.timeout_s", "between"),
        ({"role": "ok_role", "display_name": "x", "copy_prompts_from": "ghost"}, "copy_prompts_from", "unknown role"),
        ({"role": "ok_role", "display_name": "x", "responsibilities": [1]}, "responsibilities", "list of strings"),
    ],
)
def test_custom_role_refusals_name_the_field_and_create_nothing(api, builtin, data, field, reason):
    roles = AgentRole.objects.count()
    version = current_version()
    response = api.post(ROLES, data, format="json")
    assert response.status_code == 400, response.json()
    assert reason in " ".join(response.json()["errors"][field])
    assert AgentRole.objects.count() == roles
    assert current_version() == version


def test_all_role_problems_are_reported_at_once(api, builtin):
    response = api.post(ROLES, {"role": "X", "emoji": 5, "constraints": {"token_budget": 1}}, format="json")
    assert response.status_code == 400
    assert {"role", "display_name", "emoji", "constraints.token_budget"} <= set(response.json()["errors"])


def test_viewers_cannot_create_roles(builtin, viewer_user):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=viewer_user).key}")
    response = client.post(ROLES, {"role": "sneaky", "display_name": "Sneaky"}, format="json")
    assert response.status_code == 403
    assert not AgentRole.objects.filter(role="sneaky").exists()


def test_built_in_roles_can_be_disabled_but_not_deleted(api, builtin):
    doc = api.get(f"{ROLES}/devops").json()
    refused = api.delete(f"{ROLES}/devops?version={doc['version']}")
    assert refused.status_code == 400
    assert refused.json()["errors"]["role"] == ["built-in roles can be disabled but not deleted"]
    assert AgentRole.objects.filter(role="devops").exists()
    disabled = api.patch(f"{ROLES}/devops", {"version": doc["version"], "enabled": False}, format="json")
    assert disabled.status_code == 200
    assert disabled.json()["enabled"] is False
    assert not build_snapshot().roles["devops"].enabled


def test_custom_roles_can_be_deleted_with_their_cells(api, builtin):
    created = api.post(ROLES, {"role": "scribe", "display_name": "Scribe"}, format="json").json()
    response = api.delete(f"{ROLES}/scribe?version={created['version']}")
    assert response.status_code == 204
    assert not AgentRole.objects.filter(role="scribe").exists()
    assert not InvokePermission.objects.filter(target__role="scribe").exists()
    assert ConfigChange.objects.order_by("-new_version").first().changed_fields == ["roles.scribe.deleted"]


def test_a_role_that_alone_owns_a_capability_cannot_be_deleted(api, builtin):
    created = api.post(ROLES, {"role": "scribe", "display_name": "Scribe"}, format="json").json()
    card = CapabilityCard.objects.get(capability_id="code_review")
    card.owner_roles.set([AgentRole.objects.get(role="scribe")])
    response = api.delete(f"{ROLES}/scribe?version={created['version']}")
    assert response.status_code == 400
    assert "code_review" in response.json()["errors"]["role"][0]


def test_deleting_needs_the_version(api, builtin):
    created = api.post(ROLES, {"role": "scribe", "display_name": "Scribe"}, format="json").json()
    assert api.delete(f"{ROLES}/scribe").status_code == 400
    assert api.delete(f"{ROLES}/scribe?version={created['version'] - 1}").status_code == 409


def test_role_edits_are_audited_and_stale_edits_refused(api, builtin):
    doc = api.get(f"{ROLES}/pm").json()
    ok = api.patch(
        f"{ROLES}/pm", {"version": doc["version"], "description": "Writes PRDs.", "note": "clarify"}, format="json"
    )
    assert ok.status_code == 200
    assert ok.json()["description"] == "Writes PRDs."
    change = ConfigChange.objects.order_by("-new_version").first()
    assert change.changes == {
        "roles.pm.description": {"old": "Analyses requirements and writes the PRD.", "new": "Writes PRDs."}
    }
    stale = api.patch(f"{ROLES}/pm", {"version": doc["version"], "emoji": "🧾"}, format="json")
    assert stale.status_code == 409
    assert stale.json()["changes"][0]["changes"]["roles.pm.description"]["new"] == "Writes PRDs."


def test_role_edit_refusals(api, builtin, shop):
    doc = api.get(f"{ROLES}/pm").json()
    bad = api.patch(
        f"{ROLES}/pm", {"version": doc["version"], "role": "pm2", "enabled": "no", "colour": 1}, format="json"
    )
    assert bad.status_code == 400
    assert set(bad.json()["errors"]) == {"role", "enabled", "colour"}
    project_bad = api.patch(f"{ROLES}/pm?project=shop", {"version": doc["version"], "description": "x"}, format="json")
    assert project_bad.status_code == 400
    assert "globally" in project_bad.json()["errors"]["description"][0]


def test_a_project_can_switch_a_role_off_and_back_to_inherit(api, builtin, shop):
    doc = api.get(f"{ROLES}/devops", {"project": "shop"}).json()
    assert doc["project_enabled"] is None
    assert doc["enabled"] is True
    off = api.patch(f"{ROLES}/devops?project=shop", {"version": doc["version"], "enabled": False}, format="json")
    assert off.status_code == 200
    assert off.json()["enabled"] is False
    assert off.json()["project_enabled"] is False
    assert off.json()["global_enabled"] is True
    assert not build_snapshot("shop").roles["devops"].enabled
    assert build_snapshot().roles["devops"].enabled
    back = api.patch(f"{ROLES}/devops?project=shop", {"version": off.json()["version"], "enabled": None}, format="json")
    assert back.json()["project_enabled"] is None
    assert not ProjectRoleOverride.objects.exists()


def test_a_project_can_switch_a_capability_off(api, builtin, shop):
    doc = api.get("/api/v1/capabilities/deployment_config", {"project": "shop"}).json()
    assert doc["version"] == "1.0.0"
    assert "document_version" in doc
    response = api.patch(
        "/api/v1/capabilities/deployment_config?project=shop",
        {"document_version": doc["document_version"], "enabled": False, "note": "no deploys from shop (US-06)"},
        format="json",
    )
    assert response.status_code == 200
    assert response.json()["enabled"] is False
    assert response.json()["global_enabled"] is True
    assert ProjectCapabilityOverride.objects.get().enabled is False
    assert not build_snapshot("shop").cards["deployment_config"].enabled
    assert build_snapshot().cards["deployment_config"].enabled
    change = ConfigChange.objects.order_by("-new_version").first()
    assert change.config_type == "capability"
    assert change.project == shop
    assert change.changes == {"capabilities.deployment_config.enabled": {"old": None, "new": False}}


def test_capability_edits_and_refusals(api, builtin):
    doc = api.get("/api/v1/capabilities/code_review").json()
    ok = api.patch(
        "/api/v1/capabilities/code_review",
        {"document_version": doc["document_version"], "timeout": 300, "tags": ["review"], "owner_roles": ["coderB"]},
        format="json",
    )
    assert ok.status_code == 200, ok.json()
    assert ok.json()["timeout"] == 300
    assert ok.json()["owner_roles"] == ["coderB"]
    bad = api.patch(
        "/api/v1/capabilities/code_review",
        {
            "document_version": ok.json()["document_version"],
            "timeout": 0,
            "owner_roles": [],
            "input_schema": {},
            "enabled": 1,
        },
        format="json",
    )
    assert bad.status_code == 400
    assert set(bad.json()["errors"]) == {"timeout", "owner_roles", "input_schema", "enabled"}
    assert api.patch("/api/v1/capabilities/code_review", {"enabled": False}, format="json").status_code == 400
    assert api.patch("/api/v1/capabilities/ghost", {"document_version": 0}, format="json").status_code == 404


@pytest.mark.django_db(transaction=True)
def test_the_runtime_refuses_a_role_or_card_disabled_for_the_project_at_the_next_task(api, runtime_host, shop):
    runtime = runtime_host.runtime

    def invoke(project: str | None):
        request = InvokeRequest("schema_query", {"table": "users"}, target_role="dba")
        return runtime_host.call(runtime.invoke(request, from_role="coderA", project_id=project), timeout=30)

    assert invoke("shop").success
    doc = api.get("/api/v1/capabilities/schema_query", {"project": "shop"}).json()
    api.patch(
        "/api/v1/capabilities/schema_query?project=shop",
        {"document_version": doc["document_version"], "enabled": False},
        format="json",
    )
    refused = invoke("shop")
    assert not refused.success
    assert refused.error.code == "capability_disabled"
    assert "schema_query" in refused.error.message
    assert invoke(None).success
    card_doc = api.get("/api/v1/capabilities/schema_query", {"project": "shop"}).json()
    api.patch(
        "/api/v1/capabilities/schema_query?project=shop",
        {"document_version": card_doc["document_version"], "enabled": None},
        format="json",
    )
    role_doc = api.get(f"{ROLES}/dba", {"project": "shop"}).json()
    api.patch(f"{ROLES}/dba?project=shop", {"version": role_doc["version"], "enabled": False}, format="json")
    refused = invoke("shop")
    assert not refused.success
    assert refused.error.code == "capability_disabled"
    assert "role dba is disabled" in refused.error.message


def test_constraints_document_save_bounds_and_project_inheritance(api, builtin, shop):
    doc = api.get("/api/v1/constraints/coderA").json()
    assert doc["constraints"]["token_budget"] == 50000
    assert doc["bounds"]["timeout_s"] == {"minimum": 1, "maximum": 3600}
    saved = api.put(
        "/api/v1/constraints/coderA", {"version": doc["version"], "constraints": {"timeout_s": 90}}, format="json"
    )
    assert saved.status_code == 200
    assert saved.json()["constraints"]["timeout_s"] == 90
    assert build_snapshot().roles["coderA"].constraints.timeout_s == 90
    project_doc = api.get("/api/v1/constraints/coderA", {"project": "shop"}).json()
    assert project_doc["overrides"] == dict.fromkeys(project_doc["constraints"])
    put = api.put(
        "/api/v1/constraints/coderA?project=shop",
        {"version": project_doc["version"], "constraints": {"token_budget": 8000, "file_scope": "frontend"}},
        format="json",
    )
    assert put.status_code == 200
    body = put.json()
    assert body["constraints"]["token_budget"] == 8000
    assert body["constraints"]["timeout_s"] == 90
    assert body["overrides"]["token_budget"] == 8000
    assert body["overrides"]["timeout_s"] is None
    shop_constraints = build_snapshot("shop").roles["coderA"].constraints
    assert shop_constraints.token_budget == 8000
    assert shop_constraints.file_scope == "frontend"
    reset = api.put(
        "/api/v1/constraints/coderA?project=shop",
        {"version": body["version"], "constraints": {"token_budget": None, "file_scope": None}},
        format="json",
    )
    assert reset.status_code == 200
    assert not RoleConstraint.objects.filter(project=shop).exists()


@pytest.mark.parametrize(
    ("values", "field", "reason"),
    [
        ({"timeout_s": 0}, "constraints.timeout_s", "between 1 and 3600 s"),
        ({"timeout_s": 3601}, "constraints.timeout_s", "between 1 and 3600 s"),
        ({"max_retries": 11}, "constraints.max_retries", "between 0 and 10"),
        ({"token_budget": 99}, "constraints.token_budget", "between 100 and 10000000"),
        ({"max_concurrent_instances": 65}, "constraints.max_concurrent_instances", "between 1 and 64"),
        ({"max_concurrent_instances": True}, "constraints.max_concurrent_instances", "whole number"),
        ({"timeout_s": 1.5}, "constraints.timeout_s", "whole number"),
        ({"file_scope": "../etc"}, "constraints.file_scope", "'..'"),
        ({"file_scope": "/etc"}, "constraints.file_scope", "not absolute"),
        ({"file_scope": ""}, "constraints.file_scope", "blank"),
        ({"file_scope": None}, "constraints.file_scope", "only applies to a project"),
        ({"colour": 3}, "constraints.colour", "unknown constraint"),
    ],
)
def test_constraint_bounds_are_checked(api, builtin, values, field, reason):
    doc = api.get("/api/v1/constraints/coderA").json()
    response = api.put("/api/v1/constraints/coderA", {"version": doc["version"], "constraints": values}, format="json")
    assert response.status_code == 400
    assert reason in response.json()["errors"][field][0]


def test_projects_are_created_listed_and_edited(api, builtin):
    bad = api.post(
        "/api/v1/projects", {"slug": "Bad Slug", "working_directory": "relative/dir", "extra": 1}, format="json"
    )
    assert bad.status_code == 400
    assert {"slug", "name", "working_directory", "extra"} <= set(bad.json()["errors"])
    created = api.post(
        "/api/v1/projects",
        {"slug": "shop", "name": "Shop", "tech_stack": "React", "working_directory": "/srv/shop", "note": "new"},
        format="json",
    )
    assert created.status_code == 201
    assert created.json()["overrides"] == {
        "roles": 0,
        "capabilities": 0,
        "invoke_matrix": 0,
        "tool_matrix": 0,
        "constraints": 0,
        "prompts": 0,
    }
    assert api.post("/api/v1/projects", {"slug": "shop", "name": "Again"}, format="json").status_code == 400
    listed = api.get("/api/v1/projects").json()
    assert listed["count"] == 1
    assert listed["projects"][0]["slug"] == "shop"
    edit = api.patch(
        "/api/v1/projects/shop", {"version": created.json()["version"], "tech_stack": "Vue"}, format="json"
    )
    assert edit.status_code == 200
    assert edit.json()["tech_stack"] == "Vue"
    assert build_snapshot("shop").tech_stack == "Vue"
    stale = api.patch("/api/v1/projects/shop", {"version": created.json()["version"], "name": "S"}, format="json")
    assert stale.status_code == 409
    assert (
        api.patch("/api/v1/projects/shop", {"version": edit.json()["version"], "slug": "x"}, format="json").status_code
        == 400
    )
    root = api.patch(
        "/api/v1/projects/shop", {"version": edit.json()["version"], "working_directory": "/"}, format="json"
    )
    assert root.status_code == 400
    assert "root" in root.json()["errors"]["working_directory"][0]


def test_the_audit_trail_lists_filters_and_pages(api, builtin):
    doc = api.get("/api/v1/permissions/invoke-matrix").json()
    version = doc["version"]
    for callee in ("dba", "devops", "coderA"):
        version = api.put(
            "/api/v1/permissions/invoke-matrix",
            {"version": version, "matrix": {"pm": {callee: True}}, "note": f"pm may call {callee}"},
            format="json",
        ).json()["version"]
    listed = api.get("/api/v1/config/changes", {"config_type": "permission", "page_size": 2}).json()
    assert listed["count"] == 3
    assert len(listed["results"]) == 2
    assert listed["next"]
    first = listed["results"][0]
    assert first["note"] == "pm may call coderA"
    assert first["actor"] == "operator"
    assert first["new_version"] == first["old_version"] + 1 == version
    assert first["changed_fields"] == ["invoke_matrix.pm.coderA"]
    assert api.get("/api/v1/config/changes", {"q": "devops"}).json()["count"] == 1
    assert api.get("/api/v1/config/changes", {"config_type": "builtin"}).json()["count"] == 1
    bad = api.get("/api/v1/config/changes", {"config_type": "nope", "since_version": "x"})
    assert bad.status_code == 400
    assert {"config_type", "since_version"} <= set(bad.json()["errors"])
