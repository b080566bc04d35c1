"""A prompt change cannot break a run (issue 15, point 4): a version whose template cannot
render with its declared variables and the always-available ones is never made active, on
save, activate or rollback, through the API or the pages; a draft of it may still be saved;
a misspelt name gets "did you mean"; a declared but unused variable is warned about."""

from __future__ import annotations

from capabilities.models import ConfigChange
from prompts.actions import check_content
from prompts.models import PromptVersion
from prompts.render import ALWAYS_AVAILABLE, STANDARD_VARIABLES
from tests.prompts.conftest import versions_url

TONE = "Tone: {{ tone }}"


def active(role="pm", template_type="persona"):
    return PromptVersion.objects.get(
        template__role__role=role, template__template_type=template_type, template__project=None, is_active=True
    )


def save(api, content, **body):
    return api.post(versions_url(), {"content": content, **body}, format="json")


def old_broken_version(version="0.9.0"):
    """A version saved before activation was checked (or imported): it cannot render."""
    return PromptVersion.objects.create(template=active().template, version=version, content=TONE, variables=[])


def test_the_always_available_names_are_the_renderers():
    assert ALWAYS_AVAILABLE == (*STANDARD_VARIABLES, "range")


def test_save_and_activate_is_refused_for_an_undeclared_variable_and_nothing_is_written(api, builtin):
    before, versions, changes = active().version, PromptVersion.objects.count(), ConfigChange.objects.count()
    response = save(api, TONE)
    assert response.status_code == 400
    body = response.json()
    assert list(body["errors"]) == ["content"]
    reason = body["errors"]["content"][0]
    assert "cannot be activated: 'tone' is used but not declared" in reason
    assert "project_name, project_description" in reason and "range" in reason
    assert body["undeclared_variables"] == ["tone"]
    assert body["available_variables"] == list(ALWAYS_AVAILABLE)
    assert (active().version, PromptVersion.objects.count(), ConfigChange.objects.count()) == (
        before,
        versions,
        changes,
    )


def test_a_draft_of_it_is_still_saved_with_a_warning(api, builtin):
    response = save(api, TONE, activate=False)
    assert response.status_code == 201, response.json()
    body = response.json()
    assert (body["is_active"], body["undeclared_variables"]) == (False, ["tone"])
    assert "cannot be activated" in body["warnings"][0]
    assert active().version == "1.0.0"


def test_declaring_the_variable_with_a_default_makes_it_activatable(api, builtin):
    response = save(api, TONE, variables=[{"name": "tone", "default": "friendly"}])
    assert response.status_code == 201, response.json()
    assert active().content == TONE


def test_a_misspelt_variable_gets_did_you_mean(api, builtin):
    body = save(api, "For {{ projct_name }} in {{ tnoe }}", variables=[{"name": "tone", "default": "calm"}]).json()
    reason = body["errors"]["content"][0]
    assert "'projct_name' (did you mean 'project_name'?)" in reason
    assert "'tnoe' (did you mean 'tone'?)" in reason
    assert body["suggestions"] == {"projct_name": ["project_name"], "tnoe": ["tone"]}


def test_a_declared_but_unused_variable_is_warned_about(api, builtin):
    response = save(api, "No variables here.", variables=[{"name": "audience", "default": "devs"}])
    assert response.status_code == 201, response.json()
    assert "declared but not used in the template: audience" in response.json()["warnings"]


def test_a_template_that_fails_its_sample_render_is_refused(api, builtin):
    # declared but without a default, optional: nobody gives it at run time, so StrictUndefined fails
    response = save(api, TONE, variables=[{"name": "tone", "required": False}])
    assert response.status_code == 400
    assert "does not render with its declared variables" in response.json()["errors"]["content"][0]
    assert "undefined variable 'tone'" in response.json()["errors"]["content"][0]


def test_activating_a_draft_that_cannot_render_is_refused(api, builtin):
    assert save(api, TONE, activate=False).status_code == 201
    changes = ConfigChange.objects.count()
    response = api.post("/api/v1/prompts/pm/persona/activate", {"version": "1.0.1"}, format="json")
    assert response.status_code == 400
    assert "'tone' is used but not declared" in response.json()["errors"]["content"][0]
    assert (active().version, ConfigChange.objects.count()) == ("1.0.0", changes)


def test_rolling_back_to_a_version_that_cannot_render_is_refused(api, builtin):
    old_broken_version()
    response = api.post("/api/v1/prompts/pm/persona/rollback", {"version": "0.9.0"}, format="json")
    assert response.status_code == 400
    assert "'tone' is used but not declared" in response.json()["errors"]["content"][0]
    assert active().version == "1.0.0"
    assert PromptVersion.objects.filter(rollback_of="0.9.0").count() == 0


def edit(client, content, action="activate", variables="[]"):
    data = {"content": content, "variables": variables, "bump": "patch", "base_version": "1.0.0", "action": action}
    return client.post("/prompts/pm/persona/edit/", data)


def test_the_editor_shows_the_refusal_and_keeps_what_was_typed(page_client, builtin):
    response = edit(page_client, "Tone: {{ tnoe }}", variables='[{"name": "tone", "default": "calm"}]')
    html = response.content.decode()
    assert response.status_code == 400
    assert 'id="content-error"' in html
    assert "&#x27;tnoe&#x27; (did you mean &#x27;tone&#x27;?)" in html
    assert "Tone: {{ tnoe }}" in html  # the textarea keeps the content
    assert active().version == "1.0.0"


def test_the_editor_still_saves_it_as_a_draft(page_client, builtin):
    response = edit(page_client, TONE, action="draft")
    assert response.status_code == 302
    assert PromptVersion.objects.get(version="1.0.1", template=active().template).is_active is False
    page = page_client.get(response["Location"]).content.decode()
    assert "saved as a draft" in page
    assert "cannot be activated" in page


def test_the_activate_and_rollback_pages_show_the_refusal(page_client, builtin):
    assert edit(page_client, TONE, action="draft").status_code == 302
    refused = page_client.post("/prompts/pm/persona/activate/1.0.1/", {})
    assert refused.status_code == 400
    assert 'id="form-error"' in refused.content.decode()
    assert "is used but not declared" in refused.content.decode()
    old_broken_version()
    back = page_client.post("/prompts/pm/persona/rollback/0.9.0/", {"base_version": "1.0.0"})
    assert back.status_code == 400
    assert "is used but not declared" in back.content.decode()
    assert active().version == "1.0.0"


def test_every_built_in_version_passes_the_activation_check(builtin):
    refused = {}
    for version in PromptVersion.objects.select_related("template__role", "template__project"):
        check = check_content(version.content, version.variables, role=version.template.role, project=None)
        refusal = check.activation_refusal()
        if refusal is not None:
            refused[str(version)] = refusal.reason
    assert refused == {}


def test_an_already_active_version_is_still_a_409(api, builtin):
    response = api.post("/api/v1/prompts/pm/persona/activate", {"version": "1.0.0"}, format="json")
    assert response.status_code == 409


def test_a_blank_prompt_is_not_activated_but_may_be_kept_as_a_draft(api, builtin):
    before = active().version
    response = save(api, "  \n ")
    assert response.status_code == 400, response.content
    assert "may not be blank" in response.json()["errors"]["content"][0]
    assert active().version == before
    draft = save(api, "  \n ", activate=False)
    assert draft.status_code in (200, 201), draft.content
    assert active().version == before
