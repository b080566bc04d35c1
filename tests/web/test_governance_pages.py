"""The governance pages, server side: editors, conflicts, what-if, switches, custom roles,
projects, audit and import/export (issue 5). The browser tests click the same pages."""

from __future__ import annotations

import json
import re

import pytest
from django.test import Client

from capabilities.config import current_version
from capabilities.matrices import INVOKE, TOOL, matrix_document
from capabilities.matrix_forms import base_json
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
from capabilities.versions import document_version

PAGES = [
    "/permissions/invoke/",
    "/permissions/tools/",
    "/permissions/invoke/?project=shop",
    "/permissions/tools/?project=shop",
    "/constraints/",
    "/constraints/?project=shop",
    "/constraints/coderA/",
    "/constraints/coderA/?project=shop",
    "/roles/new/",
    "/roles/new/?from=coderA",
    "/projects/",
    "/projects/shop/",
    "/config/changes/",
    "/config/transfer/",
]


@pytest.fixture
def shop(db):
    return Project.objects.create(slug="shop", name="Shop")


@pytest.fixture
def viewer_client(viewer_user) -> Client:
    client = Client()
    client.force_login(viewer_user)
    return client


def invoke_form(project=None, *, allow=None, version=None, note="", reset=()):
    """The POST an operator's browser sends after toggling cells."""
    doc = matrix_document(INVOKE, project)
    checked = {f"{c}:{t}" for c, row in doc["matrix"].items() for t, v in row.items() if v}
    for cell, value in (allow or {}).items():
        (checked.add if value else checked.discard)(cell)
    return {
        "version": doc["version"] if version is None else version,
        "base": base_json(INVOKE, doc),
        "allow": sorted(checked),
        "reset": list(reset),
        "note": note,
        "days": "7",
    }


@pytest.mark.parametrize("path", PAGES)
def test_every_governance_page_renders_and_needs_a_login(page_client, builtin, shop, path):
    assert page_client.get(path).status_code == 200
    anonymous = Client().get(path)
    assert anonymous.status_code == 302
    assert anonymous["Location"].startswith("/login/")


def test_viewers_see_the_editors_without_controls_and_cannot_post(viewer_client, builtin):
    html = viewer_client.get("/permissions/invoke/").content.decode()
    assert "Save staged changes" not in html
    assert "disabled" in html
    assert viewer_client.post("/permissions/invoke/", invoke_form(allow={"pm:dba": True})).status_code == 403
    assert viewer_client.post("/roles/new/", {"role": "sneaky", "display_name": "S"}).status_code == 403
    assert viewer_client.post("/projects/", {"slug": "x", "name": "X"}).status_code == 403
    assert viewer_client.post("/config/transfer/", {"text": "format: teamclaw-config/1"}).status_code == 403
    assert viewer_client.post("/roles/dba/switch/", {"enabled": "off", "version": 0}).status_code == 403
    assert not InvokePermission.objects.get(project=None, caller__role="pm", target__role="dba").allowed
    assert AgentRole.objects.get(role="dba").enabled


def test_forms_need_the_csrf_token(builtin, staff_user):
    client = Client(enforce_csrf_checks=True)
    client.force_login(staff_user)
    assert client.post("/permissions/invoke/", invoke_form(allow={"pm:dba": True})).status_code == 403
    assert client.post("/roles/dba/switch/", {"enabled": "off", "version": 0}).status_code == 403
    html = client.get("/permissions/invoke/").content.decode()
    assert 'name="csrfmiddlewaretoken"' in html


def test_saving_staged_cells_from_the_editor_is_one_change_with_the_note(page_client, builtin, staff_user):
    before = current_version()
    response = page_client.post(
        "/permissions/invoke/", invoke_form(allow={"pm:dba": True, "coderA:dba": False}, note="rebalance"), follow=True
    )
    assert response.status_code == 200
    assert "Saved 2 cell changes as config version" in response.content.decode()
    change = ConfigChange.objects.get(new_version=before + 1)
    assert change.note == "rebalance"
    assert change.actor == staff_user
    assert change.changed_fields == ["invoke_matrix.coderA.dba", "invoke_matrix.pm.dba"]
    assert current_version() == before + 1


def test_a_form_with_nothing_staged_saves_nothing(page_client, builtin):
    before = current_version()
    response = page_client.post("/permissions/invoke/", invoke_form(), follow=True)
    assert "Nothing to save" in response.content.decode()
    assert current_version() == before


def test_a_stale_save_shows_the_difference_and_keeps_the_staged_cells(page_client, builtin):
    stale = invoke_form(allow={"pm:dba": True}, note="mine")
    assert (
        page_client.post("/permissions/invoke/", invoke_form(allow={"coderA:dba": False}, note="theirs")).status_code
        == 302
    )
    response = page_client.post("/permissions/invoke/", stale)
    assert response.status_code == 409
    html = response.content.decode()
    assert "someone else changed this" in html
    assert "theirs" in html
    assert "invoke permission coderA → dba" in html
    # the operator's staged cell is still ticked, on top of the current values
    assert re.search(
        r'<td class="cell staged" data-cell="pm:dba"[^>]*>\s*'
        r'<input type="checkbox" name="allow" value="pm:dba" checked',
        html,
    )
    # the other operator's saved change shows as the current value, not undone by the stale form
    assert re.search(r'value="coderA:dba"\s+data-base="0"', html)
    # and the current version is the one the next save will send
    assert f'name="version" value="{current_version()}"' in html
    assert not InvokePermission.objects.get(project=None, caller__role="pm", target__role="dba").allowed


def test_a_mangled_form_is_refused_with_a_reason(page_client, builtin):
    form = invoke_form(allow={"pm:dba": True})
    form["base"] = "{not json"
    response = page_client.post("/permissions/invoke/", form)
    assert response.status_code == 400
    assert "reload the page" in response.content.decode()


def test_project_cells_are_highlighted_and_reset_to_global(page_client, builtin, shop):
    page_client.post("/permissions/invoke/?project=shop", invoke_form(shop, allow={"designer:dba": True}))
    assert InvokePermission.objects.get(project=shop).allowed
    html = page_client.get("/permissions/invoke/?project=shop").content.decode()
    assert 'class="cell override" data-cell="designer:dba"' in html
    assert 'name="reset" value="designer:dba"' in html
    page_client.post("/permissions/invoke/?project=shop", invoke_form(shop, reset=["designer:dba"]))
    assert not InvokePermission.objects.filter(project=shop).exists()


def test_the_tool_editor_offers_inherit_in_a_project(page_client, builtin, shop):
    doc = matrix_document(TOOL, shop)
    form = {"version": doc["version"], "base": base_json(TOOL, doc), "cell:pm:network": "confirm"}
    assert page_client.post("/permissions/tools/?project=shop", form).status_code == 302
    assert ToolPermission.objects.get(project=shop).mode == "confirm"
    doc = matrix_document(TOOL, shop)
    html = page_client.get("/permissions/tools/?project=shop").content.decode()
    assert '<option value="inherit"' in html
    form = {"version": doc["version"], "base": base_json(TOOL, doc), "cell:pm:network": "inherit"}
    assert page_client.post("/permissions/tools/?project=shop", form).status_code == 302
    assert not ToolPermission.objects.filter(project=shop).exists()
    bad = {"version": doc["version"], "base": base_json(TOOL, doc), "cell:pm:network": "sometimes"}
    assert page_client.post("/permissions/tools/?project=shop", bad).status_code == 400


def test_the_what_if_panel_reports_on_the_staged_cells(page_client, builtin):
    from tests.monitoring.test_what_if import record

    record("coderA", "dba", n=3)
    html = page_client.post("/permissions/invoke/what-if/", invoke_form(allow={"coderA:dba": False})).content.decode()
    assert "Staged changes" in html
    assert "3 would now be denied" in html
    assert "schema_query" in html
    empty = page_client.post("/permissions/invoke/what-if/", invoke_form()).content.decode()
    assert "No staged changes" in empty


def test_constraints_editor_checks_bounds_and_saves(page_client, builtin, shop):
    form = {
        "version": "0",
        "timeout_s": "0",
        "max_retries": "3",
        "file_scope": ".",
        "token_budget": "50000",
        "max_concurrent_instances": "4",
    }
    refused = page_client.post("/constraints/coderA/", form)
    assert refused.status_code == 400
    assert "between 1 and 3600 s" in refused.content.decode()
    form["timeout_s"] = "120"
    assert page_client.post("/constraints/coderA/", form).status_code == 302
    assert RoleConstraint.objects.get(project=None, role__role="coderA").timeout_s == 120
    project_form = {"version": "0", "token_budget": "9000"}
    stale = page_client.post("/constraints/coderA/?project=shop", project_form)
    assert stale.status_code == 409
    assert "timeout_s" in stale.content.decode()  # the global save moved it
    project_form["version"] = str(document_version("constraints:coderA", shop))
    response = page_client.post("/constraints/coderA/?project=shop", project_form)
    assert response.status_code == 302
    row = RoleConstraint.objects.get(project=shop)
    assert row.token_budget == 9000
    assert row.timeout_s is None


def test_creating_a_custom_role_from_the_page(page_client, builtin):
    form = {
        "role": "codeReviewer",
        "display_name": "Code Reviewer",
        "emoji": "🔍",
        "responsibilities": "Review code\nAsk for tests",
        "can_invoke": ["dba"],
        "can_be_invoked_by": ["main"],
        "tool_file_read": "allow",
        "tool_network": "confirm",
        "constraint_timeout_s": "90",
        "copy_prompts_from": "coderA",
        "capabilities": ["code_review"],
    }
    response = page_client.post("/roles/new/", form)
    assert response.status_code == 302
    assert response["Location"] == "/roles/codeReviewer/"
    role = AgentRole.objects.get(role="codeReviewer")
    assert role.responsibilities == ["Review code", "Ask for tests"]
    assert not role.is_builtin
    assert ToolPermission.objects.get(project=None, role=role, tool="network").mode == "confirm"
    assert RoleConstraint.objects.get(project=None, role=role).timeout_s == 90
    assert CapabilityCard.objects.get(capability_id="code_review").owner_roles.filter(role="codeReviewer").exists()
    html = page_client.get("/permissions/invoke/").content.decode()
    assert 'value="codeReviewer:dba" checked' in html


def test_the_role_form_keeps_input_and_names_the_problem(page_client, builtin):
    response = page_client.post("/roles/new/", {"role": "Bad", "display_name": "Kept name"})
    html = response.content.decode()
    assert response.status_code == 400
    assert "starting with a lowercase letter" in html
    assert "Kept name" in html


def test_role_and_capability_switches(page_client, builtin, shop):
    page = page_client.get("/roles/devops/").content.decode()
    version = re.search(
        r'action="/roles/devops/switch/" class="inline">\s*'
        r'<input type="hidden" name="csrfmiddlewaretoken" value="[^"]+">'
        r'<input type="hidden" name="version" value="(\d+)"',
        page,
    )
    assert version, "the role page offers the switch with its version"
    assert page_client.post("/roles/devops/switch/", {"enabled": "off", "version": version.group(1)}).status_code == 302
    assert not AgentRole.objects.get(role="devops").enabled
    stale = page_client.post("/roles/devops/switch/", {"enabled": "on", "version": version.group(1)}, follow=True)
    assert "changed" in stale.content.decode()
    assert not AgentRole.objects.get(role="devops").enabled
    switched = page_client.post(
        "/capabilities/deployment_config/switch/",
        {"enabled": "off", "version": "0", "project": "shop", "next": "/projects/shop/"},
    )
    assert switched.status_code == 302
    assert switched["Location"] == "/projects/shop/"
    assert ProjectCapabilityOverride.objects.get(project=shop).enabled is False
    evil = page_client.post(
        "/roles/dba/switch/", {"enabled": "off", "version": "0", "project": "shop", "next": "https://evil.example/"}
    )
    assert evil["Location"] == "/roles/dba/"
    assert ProjectRoleOverride.objects.get(project=shop).enabled is False
    assert (
        page_client.post("/roles/dba/switch/", {"enabled": "inherit", "version": "0"}, follow=True).status_code == 200
    )


def test_built_in_roles_offer_no_delete_and_refuse_it(page_client, builtin):
    assert "Delete this custom role" not in page_client.get("/roles/dba/").content.decode()
    response = page_client.post("/roles/dba/delete/", {"version": "0"}, follow=True)
    assert "can be disabled but not deleted" in response.content.decode()
    assert AgentRole.objects.filter(role="dba").exists()


def test_projects_page_creates_and_edits_projects(page_client, builtin):
    assert "No projects yet" in page_client.get("/projects/").content.decode()
    bad = page_client.post("/projects/", {"slug": "Shop!", "name": ""})
    assert bad.status_code == 400
    assert "slug" in bad.content.decode()
    created = page_client.post("/projects/", {"slug": "shop", "name": "Shop", "working_directory": "/srv/shop"})
    assert created.status_code == 302
    assert created["Location"] == "/projects/shop/"
    html = page_client.get("/projects/shop/").content.decode()
    assert "Roles in this project" in html
    assert "deployment_config" in html
    edit = page_client.post("/projects/shop/", {"version": "0", "name": "Shop", "tech_stack": "Vue"})
    assert edit.status_code == 409  # creating the project already moved its version
    version = re.search(r'name="version" value="(\d+)" id="project-version"', html).group(1)
    assert (
        page_client.post("/projects/shop/", {"version": version, "name": "Shop", "tech_stack": "Vue"}).status_code
        == 302
    )
    assert Project.objects.get(slug="shop").tech_stack == "Vue"


def test_audit_page_lists_filters_and_escapes(page_client, builtin):
    page_client.post("/permissions/invoke/", invoke_form(allow={"pm:dba": True}, note="<script>alert(1)</script>"))
    html = page_client.get("/config/changes/?config_type=permission").content.decode()
    assert "invoke permission pm → dba" in html
    assert "&lt;script&gt;" in html
    assert "<script>alert(1)" not in html
    assert (
        "builtin" not in page_client.get("/config/changes/?config_type=permission").content.decode().split("<tbody>")[1]
    )
    assert "must be one of" in page_client.get("/config/changes/?config_type=bogus").content.decode()


def test_an_uploaded_file_previewed_then_applied_from_the_textarea_is_taken(page_client, builtin, api):
    # The preview puts the file's text in the textarea; a browser submits it with CRLF.
    import yaml
    from django.core.files.uploadedfile import SimpleUploadedFile

    document = yaml.safe_load(api.get("/api/v1/config/export").content)
    document["invoke_matrix"]["pm"]["dba"] = True
    text = yaml.safe_dump(document, allow_unicode=True)
    version = current_version()
    upload = SimpleUploadedFile("team.yaml", text.encode(), content_type="application/yaml")
    preview = page_client.post("/config/transfer/", {"document": upload, "action": "preview"})
    assert preview.status_code == 200
    digest = re.search(r'name="digest" value="([0-9a-f]{64})"', preview.content.decode()).group(1)
    applied = page_client.post(
        "/config/transfer/",
        {"text": text.replace("\n", "\r\n"), "action": "apply", "expected_version": str(version), "digest": digest},
    )
    assert applied.status_code == 302, applied.content.decode()[:2000]
    assert current_version() == version + 1
    assert "Imported 1 change as config version" in page_client.get("/config/transfer/").content.decode()


def test_import_page_previews_then_applies_exactly_the_preview(page_client, builtin, api):
    import yaml

    document = yaml.safe_load(api.get("/api/v1/config/export").content)
    document["invoke_matrix"]["pm"]["dba"] = True
    text = yaml.safe_dump(document, allow_unicode=True)
    version = current_version()
    preview = page_client.post("/config/transfer/", {"text": text, "action": "preview"})
    html = preview.content.decode()
    assert preview.status_code == 200
    assert "invoke permission pm → dba" in html
    assert "Apply 1 change" in html
    assert current_version() == version
    digest = re.search(r'name="digest" value="([0-9a-f]{64})"', html).group(1)
    edited = page_client.post(
        "/config/transfer/",
        {
            "text": text.replace("dba: true", "dba: false"),
            "action": "apply",
            "expected_version": str(version),
            "digest": digest,
        },
    )
    assert edited.status_code == 400
    assert "changed since the preview" in edited.content.decode()
    assert current_version() == version
    applied = page_client.post(
        "/config/transfer/",
        {"text": text, "action": "apply", "expected_version": str(version), "note": "from file", "digest": digest},
    )
    assert applied.status_code == 302
    assert current_version() == version + 1
    assert ConfigChange.objects.get(new_version=version + 1).note == "from file"
    again = page_client.post(
        "/config/transfer/", {"text": text, "action": "apply", "expected_version": str(version), "digest": digest}
    )
    assert again.status_code == 409
    broken = page_client.post(
        "/config/transfer/", {"text": "format: teamclaw-config/1\nroles: 3\n", "action": "preview"}
    )
    assert broken.status_code == 400
    assert "/roles" in broken.content.decode()
    bomb = page_client.post(
        "/config/transfer/", {"text": "a: !!python/object/apply:os.system [ls]", "action": "preview"}
    )
    assert bomb.status_code == 400
    assert "is not accepted" in bomb.content.decode()
    assert json.loads(api.get("/api/v1/config/schema").content)["title"]


def test_the_editor_marks_roles_disabled_in_the_scope_it_shows(page_client, builtin, shop):
    ProjectRoleOverride.objects.create(project=shop, role=AgentRole.objects.get(role="dba"), enabled=False)
    project_html = page_client.get("/permissions/invoke/?project=shop").content.decode()
    assert "disabled here" in project_html
    assert "<s>Database Administrator</s>" in project_html  # the name, the slug in its title (issue 32)
    global_html = page_client.get("/permissions/invoke/").content.decode()
    assert "disabled" not in global_html.split("<tbody>")[1].split("</tbody>")[0]
    assert "<s>dba</s>" not in global_html


def project_card_row(html: str, capability_id: str) -> str:
    """The project page's table row of one capability."""
    rows = html.split('id="project-capabilities"')[1].split("</table>")[0].split("<tr")
    return next(row for row in rows if f"<td>{capability_id}</td>" in row)


def test_the_project_page_offers_the_switch_for_each_capabilitys_effective_state(page_client, builtin, shop):
    CapabilityCard.objects.filter(capability_id="schema_design").update(enabled=False)
    ProjectCapabilityOverride.objects.create(
        project=shop, card=CapabilityCard.objects.get(capability_id="code_review"), enabled=False
    )
    html = page_client.get("/projects/shop/").content.decode()
    on = project_card_row(html, "deployment_config")
    assert "Turn off here" in on
    assert "Turn on here" not in on
    assert "Reset to global" not in on
    off = project_card_row(html, "schema_design")
    assert "Turn on here" in off
    assert "Turn off here" not in off
    assert "Reset to global" not in off
    overridden = project_card_row(html, "code_review")
    assert "Turn on here" in overridden
    assert "Reset to global" in overridden


def test_turning_a_capability_off_from_the_project_page_is_applied_audited_and_confirmed(page_client, builtin, shop):
    html = page_client.get("/projects/shop/").content.decode()
    version = re.search(r'name="version" value="(\d+)"', project_card_row(html, "deployment_config")).group(1)
    before = ConfigChange.objects.count()
    response = page_client.post(
        "/capabilities/deployment_config/switch/",
        {"enabled": "off", "version": version, "project": "shop", "next": "/projects/shop/"},
        follow=True,
    )
    assert response.redirect_chain[-1][0] == "/projects/shop/"
    assert ProjectCapabilityOverride.objects.get(project=shop, card__capability_id="deployment_config").enabled is False
    assert ConfigChange.objects.count() == before + 1
    page = response.content.decode()
    assert "deployment_config is now disabled in project Shop" in page
    assert "Turn on here" in project_card_row(page, "deployment_config")


def test_a_switch_that_changes_nothing_says_so(page_client, builtin, shop):
    response = page_client.post(
        "/capabilities/deployment_config/switch/",
        {"enabled": "on", "version": "0", "project": "shop", "next": "/projects/shop/"},
        follow=True,
    )
    assert "Nothing changed: deployment_config is already enabled in project Shop." in response.content.decode()


def test_the_role_switch_tells_what_it_did_and_refuses_inherit_globally(page_client, api, builtin, shop):
    version = api.get("/api/v1/roles/pm?project=shop").json()["version"]
    response = page_client.post(
        "/roles/pm/switch/", {"enabled": "off", "version": version, "project": "shop"}, follow=True
    )
    assert response.redirect_chain[-1][0] == "/roles/pm/"
    assert "Role pm is now disabled in project Shop (config version" in response.content.decode()
    version = api.get("/api/v1/roles/pm?project=shop").json()["version"]
    again = page_client.post(
        "/roles/pm/switch/", {"enabled": "off", "version": version, "project": "shop"}, follow=True
    )
    assert "Nothing changed: role pm is already disabled in project Shop." in again.content.decode()
    before = ConfigChange.objects.count()
    refused = page_client.post("/roles/pm/switch/", {"enabled": "inherit", "version": "0"}, follow=True)
    assert "enabled: must be on, off or (for a project) inherit" in refused.content.decode()
    assert ConfigChange.objects.count() == before


def test_the_import_form_refuses_an_unknown_format_and_keeps_the_text(page_client, builtin):
    """Issue 32: the import page binds ``ConfigImportForm`` (page input through Django
    forms): a format it does not offer is a 400 naming ``format``, the pasted text kept,
    nothing imported."""
    from capabilities.config import current_version

    before = current_version()
    text = "format: teamclaw-config/1\nscope: global\n"
    response = page_client.post("/config/transfer/", {"text": text, "format": "toml", "action": "preview"})
    html = response.content.decode()
    assert response.status_code == 400
    assert "<code>format</code>" in html and text.splitlines()[0] in html
    assert current_version() == before


def test_a_new_role_with_an_unknown_tool_mode_is_refused_naming_the_field(page_client, builtin):
    """Issue 32: the new-role page binds ``RoleNewForm``: a tool mode that is not allow,
    confirm or deny is a 400 naming ``tool_<tool>`` (it was dropped silently before), and
    what was typed is shown again; no role is created."""
    from capabilities.models import AgentRole
    from teamclaw.runtime.config import TOOLS

    tool = TOOLS[0]
    response = page_client.post(
        "/roles/new/",
        {"role": "auditor", "display_name": "Auditor 审计", "can_invoke": ["pm"], f"tool_{tool}": "sometimes"},
    )
    html = response.content.decode()
    assert response.status_code == 400
    assert f"<code>tool_{tool}</code>" in html
    assert 'value="Auditor 审计"' in html
    assert not AgentRole.objects.filter(role="auditor").exists()
