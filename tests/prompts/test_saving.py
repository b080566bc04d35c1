"""Saving prompt versions through the API (PRD §4.5 版本管理, US-03): every save is a new
version, SemVer-bumped from the highest, exactly one active, audited as a config change."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from capabilities.config import add_listener, remove_listener
from capabilities.models import AgentRole, ConfigChange
from prompts.models import PromptTemplate, PromptVersion
from tests.prompts.conftest import versions_url


def save(api, content, role="pm", template_type="persona", **body):
    return api.post(versions_url(role, template_type), {"content": content, **body}, format="json")


def active_versions(role="pm", template_type="persona", project=None):
    return list(
        PromptVersion.objects.filter(
            template__role__role=role, template__template_type=template_type, template__project=project, is_active=True
        ).values_list("version", flat=True)
    )


def test_a_save_creates_a_patch_version_and_makes_it_the_only_active_one(api, builtin):
    before = PromptVersion.objects.get(template__role__role="pm", template__template_type="persona", is_active=True)
    response = save(api, "Sharp product thinker.\n", note="shorter persona")
    assert response.status_code == 201, response.json()
    body = response.json()
    assert (body["version"], body["is_active"], body["note"], body["created_by"]) == (
        "1.0.1",
        True,
        "shorter persona",
        "operator",
    )
    assert active_versions() == ["1.0.1"]
    before.refresh_from_db()
    assert before.content != "Sharp product thinker.\n"
    assert not before.is_active  # old versions are never edited


@pytest.mark.parametrize(("bump", "expected"), [("patch", "1.0.1"), ("minor", "1.1.0"), ("major", "2.0.0")])
def test_the_operator_picks_the_bump(api, builtin, bump, expected):
    assert save(api, f"Persona for a {bump} bump", bump=bump).json()["version"] == expected


def test_bumps_from_a_prerelease_follow_semver(api, builtin):
    assert save(api, "draft one", bump="prerelease").json()["version"] == "1.0.1-rc.1"
    assert save(api, "draft two", bump="prerelease").json()["version"] == "1.0.1-rc.2"
    assert save(api, "released", bump="patch").json()["version"] == "1.0.1"
    assert save(api, "next minor", version="1.1.0-beta.1").json()["version"] == "1.1.0-beta.1"
    assert save(api, "minor release", bump="minor").json()["version"] == "1.1.0"
    history = [v["version"] for v in APIClient.get(api, versions_url()).json()["results"]]
    assert history == ["1.1.0", "1.1.0-beta.1", "1.0.1", "1.0.1-rc.2", "1.0.1-rc.1", "1.0.0"]


def test_an_explicit_version_not_above_the_highest_is_refused_and_nothing_is_written(api, builtin):
    save(api, "first change", bump="minor")
    count = PromptVersion.objects.count()
    response = save(api, "second change", version="1.0.5")
    assert response.status_code == 400
    assert response.json()["errors"] == {
        "version": ["version 1.0.5 must be greater than the highest existing version 1.1.0"]
    }
    assert PromptVersion.objects.count() == count
    assert active_versions() == ["1.1.0"]
    bad = save(api, "second change", version="v2")
    assert bad.status_code == 400
    assert "not a semantic version" in bad.json()["errors"]["version"][0]


def test_saving_the_active_content_again_is_refused_as_nothing_to_save(api, builtin):
    active = PromptVersion.objects.get(template__role__role="pm", template__template_type="persona", is_active=True)
    response = save(api, active.content)
    assert response.status_code == 400
    assert "nothing to save" in response.json()["errors"]["content"][0]


def test_a_save_based_on_a_version_that_is_no_longer_active_is_a_conflict(api, builtin):
    assert save(api, "Alice's edit", base_version="1.0.0").status_code == 201
    response = save(api, "Bob's edit", base_version="1.0.0")
    assert response.status_code == 409
    assert response.json()["errors"]["base_version"][0].startswith("the active version is now 1.0.1, not 1.0.0")
    assert (
        PromptVersion.objects.get(is_active=True, template__role__role="pm", template__template_type="persona").content
        == "Alice's edit"
    )


def test_variables_are_what_was_sent_and_none_when_omitted(api, builtin):
    # issue 31: an omitted ``variables`` no longer inherits the active version's declarations
    body = save(api, "You serve {{ project_name }}.", role="coderA", template_type="system_prompt").json()
    assert body["variables"] == []
    variables = [{"name": "audience", "description": "Who reads it", "required": True}]
    body = save(
        api, "Write for {{ audience }}.", role="coderA", template_type="system_prompt", variables=variables
    ).json()
    assert body["variables"] == [{"name": "audience", "description": "Who reads it", "required": True}]


def test_undeclared_variables_are_listed_when_saving_a_draft(api, builtin):
    body = save(api, "Ship {{ product }} to {{ market }} for {{ project_name }}.", activate=False).json()
    assert body["undeclared_variables"] == ["market", "product"]  # project_name is a standard variable
    assert "'market', 'product'" in body["warnings"][0]


@pytest.mark.parametrize(
    ("body", "field", "reason"),
    [
        ({"variables": "audience"}, "variables", "variables must be a list"),
        ({"variables": [{"description": "no name"}]}, "variables", "variables[0] needs a name"),
        ({"variables": [{"name": "1st"}]}, "variables", "'1st' is not a valid variable name"),
        ({"variables": [{"name": "a"}, {"name": "a"}]}, "variables", "variables[1]: 'a' is declared twice"),
        ({"variables": [{"name": "a", "required": "yes"}]}, "variables", "variables[0].required must be true or false"),
        ({"variables": [{"name": "a", "type": "str"}]}, "variables", "variables[0] has unknown keys: type"),
        ({"language": "English!"}, "language", "language must be a language code"),
        ({"bump": "huge"}, "bump", '"huge" is not a valid choice.'),
        ({"bmup": "major"}, "bmup", "unknown field"),
        ({"project": "nowhere"}, "project", "project 'nowhere' does not exist"),
        ({"note": "n" * 501}, "note", "Ensure this field has no more than 500 characters."),
    ],
)
def test_bad_input_is_a_400_naming_the_field_and_nothing_is_saved(api, builtin, body, field, reason):
    count, changes = PromptVersion.objects.count(), ConfigChange.objects.count()
    response = save(api, "A new persona.", **body)
    assert response.status_code == 400, response.json()
    assert reason in response.json()["errors"][field][0]
    assert (PromptVersion.objects.count(), ConfigChange.objects.count()) == (count, changes)


def test_content_over_the_size_limit_is_refused(api, builtin):
    response = save(api, "x" * 50_001)
    assert response.status_code == 400
    assert response.json()["errors"]["content"] == ["Ensure this field has no more than 50000 characters."]


def test_a_syntax_error_is_refused_with_its_line(api, builtin):
    response = save(api, "Hello\n{% if project_name %}unclosed")
    assert response.status_code == 400
    assert response.json()["errors"]["content"][0].startswith("line 2: syntax error")


def test_unknown_role_or_template_type_is_a_404(api, builtin):
    assert save(api, "x", role="ghost").status_code == 404
    response = save(api, "x", template_type="mood")
    assert response.status_code == 404
    assert "template type 'mood' does not exist" in response.json()["detail"]


def test_each_save_is_audited_and_publishes_a_config_change_event_after_commit(
    api, builtin, django_capture_on_commit_callbacks
):
    events = []
    add_listener(events.append)
    try:
        with django_capture_on_commit_callbacks(execute=True):
            response = save(api, "New persona", note="tighter")
    finally:
        remove_listener(events.append)
    change = ConfigChange.objects.filter(config_type="prompt").get()
    assert change.actor.username == "operator"
    assert change.note == "tighter"
    assert change.role == "pm"
    assert change.changes == {"persona.active_version": {"old": "1.0.0", "new": "1.0.1"}}
    assert events == [
        {
            "config_type": "prompt",
            "role": "pm",
            "project_id": None,
            "old_version": str(change.old_version),
            "new_version": str(change.new_version),
            "changed_fields": ["persona.active_version", "persona.content"],
        }
    ]
    assert response.json()["config_version"] == change.new_version


def test_a_project_override_is_its_own_versioned_layer(api, builtin, shop):
    response = save(api, "Mention {{ tech_stack }} in every answer.", project="shop")
    assert response.status_code == 201
    assert (response.json()["version"], response.json()["project"]) == ("1.0.0", "shop")
    assert save(api, "Mention {{ tech_stack }} twice.", project="shop").json()["version"] == "1.0.1"
    assert active_versions(project=shop) == ["1.0.1"]
    assert active_versions() == ["1.0.0"]
    change = ConfigChange.objects.filter(config_type="prompt").first()
    assert change.project == shop
    assert change.event()["project_id"] == "shop"
    overview = APIClient.get(api, "/api/v1/prompts/pm?project=shop").json()
    persona = next(t for t in overview["templates"] if t["template_type"] == "persona")
    assert persona["active"]["version"] == "1.0.0"
    assert persona["project_override"]["version"] == "1.0.1"


def test_a_draft_is_saved_inactive_and_activated_later(api, builtin):
    draft = save(api, "Draft persona", activate=False).json()
    assert (draft["version"], draft["is_active"]) == ("1.0.1", False)
    assert active_versions() == ["1.0.0"]
    response = api.post("/api/v1/prompts/pm/persona/activate", {"version": "1.0.1"}, format="json")
    assert response.status_code == 200
    assert response.json()["is_active"]
    assert active_versions() == ["1.0.1"]
    again = api.post("/api/v1/prompts/pm/persona/activate", {"version": "1.0.0"}, format="json")
    assert again.status_code == 409
    assert again.json()["errors"]["version"] == [
        "version 1.0.0 is older than the active 1.0.1; roll back to it instead"
    ]


def test_the_overview_lists_the_six_types_with_their_active_version(api, builtin):
    body = api.get("/api/v1/prompts/dba").json()
    assert [t["template_type"] for t in body["templates"]] == [
        "system_prompt",
        "persona",
        "context_template",
        "output_format",
        "tool_instruction",
        "guardrails",
    ]
    assert all(t["active"]["version"] == "1.0.0" and t["versions"] == 1 for t in body["templates"])
    assert PromptTemplate.objects.filter(role__role="dba").count() == 6
    listing = api.get("/api/v1/prompts").json()
    assert listing["count"] == AgentRole.objects.count()
    assert listing["roles"][0]["templates"]["persona"]["version"] == "1.0.0"
