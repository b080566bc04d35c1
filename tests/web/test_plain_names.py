"""Names an operator sets that lists show (a role's display name, emoji and description, a
project's name, a capability card's name, in the API, the pages and a configuration import)
refuse control and bidirectional control characters with a 400 naming the field, as a task's
title does (teamclaw.plain_text)."""

from __future__ import annotations

import pytest
import yaml

from capabilities.models import AgentRole, CapabilityCard, Project, Skill
from tests.factories import PLUGIN
from tests.skills.support import upload
from tests.team.test_config_transfer import export, post

RLO = "\u202e"
DISGUISED = [f"Scribe{RLO}fdp.exe", "Scribe\u2066x\u2069", "Scribe\u200f", "Scribe\x1b[31m"]


@pytest.mark.parametrize("name", DISGUISED)
def test_a_new_role_with_a_disguised_display_name_is_refused(api, builtin, name):
    response = api.post("/api/v1/roles", {"role": "scribe", "display_name": name}, format="json")
    assert response.status_code == 400
    assert "invisible control character" in response.json()["errors"]["display_name"][0]
    assert not AgentRole.objects.filter(role="scribe").exists()


@pytest.mark.parametrize("field", ["display_name", "emoji", "description"])
def test_editing_a_role_with_a_disguised_text_is_refused(api, builtin, field):
    version = api.get("/api/v1/roles/pm").json()["version"]
    response = api.patch("/api/v1/roles/pm", {"version": version, field: f"x{RLO}y"}, format="json")
    assert response.status_code == 400
    assert set(response.json()["errors"]) == {field}


def test_a_project_with_a_disguised_name_is_refused(api, builtin):
    response = api.post("/api/v1/projects", {"slug": "shop", "name": f"Shop{RLO}"}, format="json")
    assert response.status_code == 400
    assert set(response.json()["errors"]) == {"name"}
    assert not Project.objects.filter(slug="shop").exists()


def test_a_card_with_a_disguised_name_is_refused(api, builtin):
    doc = api.get("/api/v1/capabilities/code_review").json()
    response = api.patch(
        "/api/v1/capabilities/code_review",
        {"document_version": doc["document_version"], "name": f"Review{RLO}"},
        format="json",
    )
    assert response.status_code == 400
    assert set(response.json()["errors"]) == {"name"}


def test_an_import_with_a_disguised_role_name_is_refused_naming_it(api, builtin):
    document = yaml.safe_load(export(api))
    document["roles"]["pm"]["display_name"] = f"PM{RLO}"
    document["roles"]["scribe"] = {"display_name": f"Scribe{RLO}"}
    response = post(api, yaml.safe_dump(document, allow_unicode=True), dry_run="false")
    assert response.status_code == 400
    assert {"/roles/pm/display_name", "/roles/scribe/display_name"} <= set(response.json()["errors"])
    assert AgentRole.objects.get(role="pm").display_name != f"PM{RLO}"


def test_the_role_form_refuses_a_disguised_display_name(page_client, builtin):
    response = page_client.post(
        "/roles/new/", {"role": "scribe", "display_name": f"Scribe{RLO}", "emoji": "", "description": ""}
    )
    assert response.status_code == 400
    assert "display_name" in response.content.decode()
    assert not AgentRole.objects.filter(role="scribe").exists()


def test_a_plugin_capability_with_a_disguised_name_or_description_is_refused(api, builtin, settings):
    settings.TEAMCLAW = {**settings.TEAMCLAW, "HTTP_EXECUTOR_ALLOWED_HOSTS": ["plugins.internal"]}
    card = {**PLUGIN, "name": f"Invoice{RLO}total", "description": "Sums\u2066 lines"}
    response = api.post("/api/v1/capabilities", card, format="json")
    assert response.status_code == 400, response.content
    errors = response.json()["errors"]
    assert {"name", "description"} <= set(errors)
    assert "invisible control character" in errors["name"][0]
    assert not CapabilityCard.objects.filter(capability_id=PLUGIN["id"]).exists()


def test_a_skill_index_with_disguised_names_is_refused_naming_each(api, builtin):
    text = (
        "skill:\n  id: disguised\n"
        f"  name: Helper{RLO}fdp.exe\n  version: 1.0.0\n  skillForm: SCENE\n"
        "  capabilities:\n    - name: lookup\n      type: EXPOSED\n"
        '      description: "Looks\\u200f up"\n'
    )
    response = upload(api, text)
    assert response.status_code == 400, response.content
    errors = response.json()["errors"]
    assert any("skill.name" in key for key in errors), errors
    assert any("capabilities[0].description" in key for key in errors), errors
    assert not Skill.objects.filter(skill_id="disguised").exists()
