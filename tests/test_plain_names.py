"""Names an operator sets that lists show (a role's display name, emoji and description, a
project's name, a capability card's name, in the API, the pages and a configuration import)
refuse control and bidirectional control characters with a 400 naming the field, as a task's
title does (teamclaw.plain_text)."""

from __future__ import annotations

import pytest
import yaml

from capabilities.models import AgentRole, Project
from tests.test_config_transfer import export, post

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
