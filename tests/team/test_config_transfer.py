"""Import/export of the configuration (US-10): published schema, safe loading, every error
listed with its path, exact dry runs, one version per import, round trips change nothing,
no secret in an export (issue 5)."""

from __future__ import annotations

import json

import pytest
import yaml
from django.contrib.auth.models import Permission
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from capabilities.config import current_version
from capabilities.models import (
    AgentRole,
    CapabilityCard,
    ConfigChange,
    InvokePermission,
    Project,
    ProjectRoleOverride,
    RoleConstraint,
)
from prompts.models import PromptVersion
from team.config_schema import schema_errors
from team.snapshot import build_snapshot

EXPORT = "/api/v1/config/export"
IMPORT = "/api/v1/config/import"
SKILL_INDEX = """\
skill:
  id: hr-assistant
  name: HR智能助手
  version: 2.0.0
  capabilities:
    - name: chat
      type: ENTRY
      address: cap://hr-assistant/chat
"""


def export(api, **params) -> str:
    response = api.get(EXPORT, params)
    assert response.status_code == 200, response.content
    return response.content.decode()


def post(api, text: str, content_type: str = "application/yaml", **params):
    query = "&".join(f"{k}={v}" for k, v in params.items())
    return api.post(f"{IMPORT}?{query}", data=text.encode(), content_type=content_type)


def test_the_schema_is_published_and_the_export_satisfies_it(api, builtin):
    schema = api.get("/api/v1/config/schema").json()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert set(schema["$defs"]) == {"global_document", "project_document"}
    document = yaml.safe_load(export(api))
    assert schema_errors(document) == {}
    assert document["format"] == "teamclaw-config/1"
    assert document["scope"] == "global"
    assert set(document["roles"]) == set(AgentRole.objects.values_list("role", flat=True))
    assert document["invoke_matrix"] == api.get("/api/v1/permissions/invoke-matrix").json()["matrix"]
    assert document["tool_matrix"] == api.get("/api/v1/permissions/tool-matrix").json()["matrix"]
    assert document["constraints"]["dba"]["token_budget"] == 50000
    system = PromptVersion.objects.get(
        template__role__role="pm", template__template_type="system_prompt", template__project=None
    )
    assert document["prompts"]["pm"]["system_prompt"]["content"] == system.content


def test_no_secret_is_ever_exported(api, builtin, settings):
    settings.TEAMCLAW = {**settings.TEAMCLAW, "OPENAI_API_KEY": "sk-live-SETTINGS-KEY"}
    CapabilityCard.objects.filter(capability_id="code_review").update(
        executor_config={"url": "https://plugin.example/run", "api_key": "sk-live-CARD-KEY", "headers": {"x": "y"}}
    )
    for fmt in ("yaml", "json"):
        text = export(api, format=fmt, history="true")
        assert "sk-live" not in text
        assert "executor_config" not in text
        assert "plugin.example" not in text
    assert "api_key" not in export(api)


@pytest.mark.parametrize("fmt", ["yaml", "json"])
def test_exporting_and_reimporting_changes_nothing(api, builtin, fmt):
    api.post("/api/v1/roles", {"role": "scribe", "display_name": "Scribe 📝", "copy_prompts_from": "pm"}, format="json")
    text = export(api, format=fmt, history="true")
    version = current_version()
    changes = ConfigChange.objects.count()
    content_type = "application/json" if fmt == "json" else "application/yaml"
    dry = post(api, text, content_type, dry_run="true")
    assert dry.status_code == 200, dry.json()
    assert dry.json()["changes"] == []
    assert dry.json()["dry_run"] is True
    real = post(api, text, content_type)
    assert real.status_code == 200
    assert real.json()["applied"] is False
    assert real.json()["count"] == 0
    assert current_version() == version
    assert ConfigChange.objects.count() == changes
    assert (
        export(api, format=fmt, history="true").split("exported_at")[1].split("\n", 1)[1]
        == (text.split("exported_at")[1].split("\n", 1)[1])
    )


def edited_document(api) -> dict:
    document = yaml.safe_load(export(api))
    document["invoke_matrix"]["pm"]["dba"] = True
    document["tool_matrix"]["pm"]["network"] = "confirm"
    document["constraints"]["coderA"]["timeout_s"] = 45
    document["roles"]["devops"]["enabled"] = False
    document["capabilities"]["code_review"]["timeout"] = 900
    document["roles"]["reviewer"] = {"display_name": "Reviewer", "responsibilities": ["Review"]}
    document["invoke_matrix"]["main"]["reviewer"] = True
    document["prompts"]["pm"]["persona"] = {"version": "1.1.0", "content": "Be brief, {{ project_name }}."}
    return document


def test_a_dry_run_lists_exactly_what_the_import_then_does(api, builtin, staff_user):
    document = edited_document(api)
    version = current_version()
    dry = post(api, json.dumps(document), "application/json", dry_run="true")
    assert dry.status_code == 200, dry.json()
    planned = dry.json()["changes"]
    fields = {c["field"] for c in planned}
    assert {
        "invoke_matrix.pm.dba",
        "tool_matrix.pm.network",
        "constraints.coderA.timeout_s",
        "roles.devops.enabled",
        "capabilities.code_review.timeout",
        "roles.reviewer.created",
        "invoke_matrix.main.reviewer",
        "prompts.pm.persona",
    } <= fields
    assert {f"prompts.reviewer.{t}" for t in ("system_prompt", "guardrails")} <= fields
    assert next(c for c in planned if c["field"] == "constraints.coderA.timeout_s") == {
        "field": "constraints.coderA.timeout_s",
        "old": 60,
        "new": 45,
    }
    # the rehearsal left no trace
    assert current_version() == version
    assert not AgentRole.objects.filter(role="reviewer").exists()
    assert not InvokePermission.objects.get(project=None, caller__role="pm", target__role="dba").allowed
    real = post(api, json.dumps(document), "application/json", expected_version=version, note="bulk edit")
    assert real.status_code == 200
    assert real.json()["applied"] is True
    assert real.json()["changes"] == planned
    assert current_version() == version + 1 == real.json()["config_version"]
    change = ConfigChange.objects.get(new_version=version + 1)
    assert change.config_type == "import"
    assert change.note == "bulk edit"
    assert change.actor == staff_user
    assert set(change.changed_fields) == fields
    snapshot = build_snapshot()
    assert snapshot.can_invoke("pm", "dba")
    assert snapshot.can_invoke("main", "reviewer")
    assert not snapshot.roles["devops"].enabled
    assert snapshot.cards["code_review"].timeout_s == 900
    assert snapshot.prompts["pm"]["persona"].base.version == "1.1.0"
    # the matrix document moved with the import: a copy loaded before it is stale now
    assert api.get("/api/v1/permissions/invoke-matrix").json()["version"] == version + 1


def test_a_reviewed_dry_run_is_refused_when_the_configuration_moved(api, builtin):
    document = edited_document(api)
    version = current_version()
    doc = api.get("/api/v1/permissions/tool-matrix").json()
    api.put(
        "/api/v1/permissions/tool-matrix",
        {"version": doc["version"], "matrix": {"dba": {"network": "confirm"}}},
        format="json",
    )
    response = post(api, json.dumps(document), "application/json", expected_version=version)
    assert response.status_code == 409
    assert response.json()["changes"][0]["changed_fields"] == ["tool_matrix.dba.network"]
    assert not AgentRole.objects.filter(role="reviewer").exists()


def test_every_error_is_listed_with_its_path_and_nothing_changes(api, builtin):
    document = yaml.safe_load(export(api))
    document["invoke_matrix"]["pm"]["dba"] = "yes"
    document["tool_matrix"]["pm"]["network"] = "maybe"
    document["constraints"]["coderA"]["timeout_s"] = 0
    document["roles"]["pm"]["colour"] = "blue"
    document["roles"]["Coda"] = {"display_name": "x"}
    document["capabilities"]["code_review"]["category"] = "magic"
    document["prompts"]["pm"]["persona"]["version"] = "2.0"
    document["unexpected"] = 1
    version = current_version()
    response = post(api, yaml.safe_dump(document), dry_run="false")
    assert response.status_code == 400
    errors = response.json()["errors"]
    assert "8 problems" in response.json()["detail"]
    assert set(errors) == {
        "/invoke_matrix/pm/dba",
        "/tool_matrix/pm/network",
        "/constraints/coderA/timeout_s",
        "/roles",
        "/roles/pm",
        "/capabilities/code_review/category",
        "/prompts/pm/persona/version",
        "/",
    }
    assert "'yes' is not of type 'boolean'" in errors["/invoke_matrix/pm/dba"][0]
    assert current_version() == version


def test_references_and_cards_are_checked_against_the_registry(api, builtin):
    document = yaml.safe_load(export(api))
    document["invoke_matrix"]["ghost"] = {"pm": True}
    document["tool_matrix"]["pm"] = {"network": "allow"}
    document["constraints"]["phantom"] = {"timeout_s": 10}
    document["constraints"]["pm"]["file_scope"] = "../../etc"
    document["capabilities"]["code_review"]["input_schema"] = {"type": "object", "properties": {"x": {"mininum": 1}}}
    document["capabilities"]["code_review"]["owner_roles"] = ["nobody"]
    document["capabilities"]["code_review"]["executor"] = "http"
    document["capabilities"]["brand_new"] = {"name": "New", "executor": "http"}
    document["prompts"]["pm"]["persona"] = {"version": "2.0.0", "content": "{% if %}"}
    document["roles"]["user"] = {"display_name": "User"}
    document["roles"]["newbie"] = {"emoji": "x"}
    response = post(api, json.dumps(document), "application/json")
    assert response.status_code == 400
    errors = response.json()["errors"]
    assert errors["/invoke_matrix/ghost"] == ["unknown role 'ghost'"]
    assert errors["/constraints/phantom"] == ["unknown role 'phantom'"]
    assert "'..'" in errors["/constraints/pm/file_scope"][0]
    assert "mininum" in " ".join(errors["/capabilities/code_review/input_schema"])
    assert "unknown role 'nobody'" in errors["/capabilities/code_review/owner_roles"]
    assert "cannot change a card's executor" in errors["/capabilities/code_review/executor"][0]
    assert "offline" in errors["/capabilities/brand_new/executor"][0]
    assert "this field is required" in errors["/capabilities/brand_new/category"]
    assert "syntax error" in errors["/prompts/pm/persona/content"][0]
    assert "reserved" in errors["/roles/user"][0]
    assert errors["/roles/newbie/display_name"] == ["a new role needs a display_name"]
    assert not CapabilityCard.objects.filter(capability_id="brand_new").exists()


def test_a_changed_prompt_needs_a_new_version(api, builtin):
    document = yaml.safe_load(export(api))
    document["prompts"]["pm"]["persona"]["content"] = "Different text under the same version."
    response = post(api, yaml.safe_dump(document))
    assert response.status_code == 400
    assert "already exists with different content" in response.json()["errors"]["/prompts/pm/persona"][0]


@pytest.mark.parametrize(
    ("text", "where", "reason"),
    [
        ("format: teamclaw-config/1\nroles: {}\nroles: {}\n", "line 3", "duplicate key 'roles'"),
        ("!!python/object/apply:os.system ['echo pwned']\n", "line 1", "!!python/object/apply:os.system is not"),
        ("format: !!python/name:os.system\n", "line 1", "is not accepted"),
        ("format: !custom x\n", "line 1", "the tag !custom is not accepted"),
        ("a: &a [*a]\n", "line 1", "anchors (&a) are not accepted"),
        ("- 1\n- 2\n", "document", "top level must be a mapping"),
        ("format: [unclosed\n", "line 2", "YAML syntax error, column 1"),
        ("   \n", "document", "empty"),
    ],
)
def test_unsafe_or_malformed_yaml_is_refused_with_its_location(api, builtin, text, where, reason):
    version = current_version()
    response = post(api, text)
    assert response.status_code == 400, response.json()
    errors = response.json()["errors"]
    assert where in errors
    assert reason in errors[where][0]
    assert current_version() == version


def test_a_yaml_bomb_is_refused_before_it_is_expanded(api, builtin):
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for i in range(1, 10):
        lines.append(f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]")
    bomb = "format: teamclaw-config/1\n" + "\n".join(lines) + "\n"
    response = post(api, bomb)
    assert response.status_code == 400
    assert "aliases (*a0) are not accepted" in json.dumps(response.json()["errors"])


def test_json_duplicates_constants_and_bad_encoding_are_refused(api, builtin):
    dup = post(api, '{"format": "teamclaw-config/1", "roles": {}, "roles": {}}', "application/json")
    assert dup.status_code == 400
    assert "duplicate key 'roles'" in dup.json()["errors"]["document"][0]
    nan = post(api, '{"format": "teamclaw-config/1", "config_version": NaN}', "application/json")
    assert nan.status_code == 400
    assert "NaN" in nan.json()["errors"]["document"][0]
    latin1 = api.post(IMPORT, data="format: café".encode("latin-1"), content_type="application/yaml")
    assert latin1.status_code == 400
    assert "not UTF-8" in latin1.json()["errors"]["document"][0]


def test_oversized_documents_are_refused_with_413(api, builtin, settings):
    settings.TEAMCLAW = {**settings.TEAMCLAW, "MAX_CONFIG_BYTES": 1000}
    response = post(api, "format: teamclaw-config/1\n# " + "x" * 2000 + "\n")
    assert response.status_code == 413
    assert "1,000 bytes" in response.json()["detail"]


def test_a_skill_index_is_not_a_config_document(api, builtin):
    response = post(api, SKILL_INDEX)
    assert response.status_code == 400
    errors = response.json()["errors"]
    assert any("'format' is a required property" in reason for reason in errors["/"])
    assert any("'skill' was unexpected" in reason for reason in errors["/"])


def test_project_documents_round_trip_and_create_projects(api, builtin):
    shop = Project.objects.create(slug="shop", name="Shop", tech_stack="React")
    matrix = api.get("/api/v1/permissions/invoke-matrix", {"project": "shop"}).json()
    api.put(
        "/api/v1/permissions/invoke-matrix?project=shop",
        {"version": matrix["version"], "matrix": {"designer": {"dba": True}}},
        format="json",
    )
    role = api.get("/api/v1/roles/devops", {"project": "shop"}).json()
    api.patch("/api/v1/roles/devops?project=shop", {"version": role["version"], "enabled": False}, format="json")
    constraints = api.get("/api/v1/constraints/coderA", {"project": "shop"}).json()
    api.put(
        "/api/v1/constraints/coderA?project=shop",
        {"version": constraints["version"], "constraints": {"token_budget": 9000}},
        format="json",
    )
    document = yaml.safe_load(export(api, project="shop"))
    assert schema_errors(document) == {}
    assert document["invoke_matrix"] == {"designer": {"dba": True}}
    assert document["roles"] == {"devops": {"enabled": False}}
    assert document["constraints"] == {"coderA": {"token_budget": 9000}}
    version = current_version()
    again = post(api, yaml.safe_dump(document, allow_unicode=True))
    assert again.status_code == 200
    assert again.json()["count"] == 0
    assert current_version() == version
    document["project"]["slug"] = "shop2"
    document["invoke_matrix"]["designer"]["dba"] = None  # null = inherit the global value
    created = post(api, yaml.safe_dump(document))
    assert created.status_code == 200, created.json()
    shop2 = Project.objects.get(slug="shop2")
    assert shop2.tech_stack == shop.tech_stack
    assert ProjectRoleOverride.objects.get(project=shop2).enabled is False
    assert RoleConstraint.objects.get(project=shop2).token_budget == 9000
    assert not InvokePermission.objects.filter(project=shop2).exists()
    assert ConfigChange.objects.get(new_version=current_version()).project == shop2


def test_project_documents_refuse_unknown_roles_and_bad_project_fields(api, builtin):
    document = {
        "format": "teamclaw-config/1",
        "scope": "project",
        "project": {"slug": "shop", "name": "Shop", "working_directory": "relative"},
        "roles": {"ghost": {"enabled": False}},
        "capabilities": {"nothing_here": {"enabled": False}},
        "invoke_matrix": {"pm": {"phantom": True}},
    }
    response = post(api, json.dumps(document), "application/json")
    assert response.status_code == 400
    errors = response.json()["errors"]
    assert "absolute" in errors["/project/working_directory"][0]
    assert errors["/roles/ghost"] == ["unknown role 'ghost'"]
    assert errors["/capabilities/nothing_here"] == ["unknown capability 'nothing_here'"]
    assert errors["/invoke_matrix/pm/phantom"] == ["unknown role 'phantom'"]
    assert not Project.objects.filter(slug="shop").exists()


def test_import_needs_staff_or_the_import_permission(api, builtin, viewer_user):
    text = export(api)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=viewer_user).key}")
    assert client.get(EXPORT).status_code == 200
    refused = client.post(f"{IMPORT}?dry_run=true", data=text.encode(), content_type="application/yaml")
    assert refused.status_code == 403
    assert "capabilities.import_config" in refused.json()["detail"]
    viewer_user.user_permissions.add(Permission.objects.get(codename="import_config"))
    allowed = client.post(f"{IMPORT}?dry_run=true", data=text.encode(), content_type="application/yaml")
    assert allowed.status_code == 200


def test_bad_query_parameters_name_the_field(api, builtin):
    assert api.get(EXPORT, {"format": "xml"}).json()["errors"] == {"format": ["must be one of yaml, json"]}
    assert "history" in api.get(EXPORT, {"history": "maybe"}).json()["errors"]
    assert api.get(EXPORT, {"project": "ghost"}).status_code == 404
    assert "dry_run" in post(api, "format: x", dry_run="perhaps").json()["errors"]
    assert "expected_version" in post(api, "format: x", expected_version="v1").json()["errors"]
    forced = post(api, export(api, format="json"), "text/plain", format="json", dry_run="true")
    assert forced.status_code == 200
    assert forced.json()["count"] == 0


def test_deep_nesting_is_refused_instead_of_crashing(api, builtin):
    # 500 levels: far past the 64 allowed, yet far from Python's recursion limit however deep
    # the middleware stack is, so the depth check (not a RecursionError) answers.
    deep = '{"format": "teamclaw-config/1", "capabilities": {"code_review": {"input_schema": ' + "[" * 500 + "]" * 500
    deep += "}}}"
    response = post(api, deep, "application/json")
    assert response.status_code == 400
    assert "nests too deeply: more than 64 levels" in response.json()["errors"]["document"][0]
    yaml_deep = "format: teamclaw-config/1\nx: " + "[" * 5000 + "]" * 5000 + "\n"
    response = post(api, yaml_deep)
    assert response.status_code == 400


def test_imported_prompts_follow_the_prompt_rules(api, builtin):
    document = yaml.safe_load(export(api))
    persona = document["prompts"]["pm"]["persona"]
    api_doc = dict(persona, version="1.1.0", content="Newer persona.")
    document["prompts"]["pm"]["persona"] = api_doc
    assert post(api, yaml.safe_dump(document)).status_code == 200
    document["prompts"]["pm"]["persona"] = dict(persona, version="1.0.5", content="Sneaking in below 1.1.0.")
    document["prompts"]["pm"]["system_prompt"]["language"] = "english!"
    response = post(api, yaml.safe_dump(document))
    assert response.status_code == 400
    errors = response.json()["errors"]
    assert "language code" in errors["/prompts/pm/system_prompt/language"][0]
    del document["prompts"]["pm"]["system_prompt"]["language"]
    response = post(api, yaml.safe_dump(document))
    assert response.status_code == 400
    assert (
        "greater than the highest existing version 1.1.0" in response.json()["errors"]["/prompts/pm/persona/version"][0]
    )
    # going back to an existing version is fine: it is activated, like a rollback
    document["prompts"]["pm"]["persona"] = persona
    back = post(api, yaml.safe_dump(document))
    assert back.status_code == 200
    assert back.json()["changes"] == [{"field": "prompts.pm.persona", "old": "1.1.0", "new": "1.0.0"}]


def test_a_cards_idempotent_flag_is_exported_and_imported(api, builtin):
    """Whether a card may be run again after its request was sent (``idempotent``, which
    decides the retries of docs/architecture.md §6; null is the executor's default) travels
    with the card both ways."""
    CapabilityCard.objects.filter(capability_id="code_review").update(idempotent=True)
    document = yaml.safe_load(export(api))
    assert document["capabilities"]["code_review"]["idempotent"] is True
    assert document["capabilities"]["schema_query"]["idempotent"] is None  # the executor's default
    document["capabilities"]["code_review"]["idempotent"] = False
    document["capabilities"]["schema_query"]["idempotent"] = True
    dry = post(api, yaml.safe_dump(document, allow_unicode=True), dry_run="true")
    assert dry.status_code == 200, dry.json()
    assert {c["field"] for c in dry.json()["changes"]} == {
        "capabilities.code_review.idempotent",
        "capabilities.schema_query.idempotent",
    }
    assert post(api, yaml.safe_dump(document, allow_unicode=True)).status_code == 200
    assert not CapabilityCard.objects.get(capability_id="code_review").idempotent
    assert CapabilityCard.objects.get(capability_id="schema_query").idempotent
    document["capabilities"]["code_review"]["idempotent"] = "yes"
    refused = post(api, yaml.safe_dump(document, allow_unicode=True), dry_run="true")
    assert refused.status_code == 400
    assert "/capabilities/code_review/idempotent" in refused.json()["errors"]
