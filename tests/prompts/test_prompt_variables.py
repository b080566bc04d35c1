"""Two prompt failure classes (issue 31, item 5).

A template that cannot render never reaches a model: every path renders through
``prompts.render.render``, which refuses a name the content uses that is neither declared nor
given before the template runs (so ``default()``, ``is none`` or ``{% set %}`` cannot hide a
misspelling), and names the close declared or given name ("did you mean"). The capability
invoke and a fork's ``prompt_versions`` then fail with that message, and the chat-completions
server on 127.0.0.1 (tests/model_server.py) receives nothing.

A version's declarations are its own: saved without ``variables`` it declares none (nothing is
inherited from the active version), a declared variable the content does not use is a warning
at save and never blocks a render, a required variable is enforced only where the content uses
it, and a rollback renders with the restored version's own declarations.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from monitoring.models import ExecutionContext
from prompts.models import PromptVersion
from prompts.render import PromptRenderError, render
from tests.documents import CLINIC
from tests.executors.test_review_on_a_model import ReviewBrain
from tests.helpers import wait_for_task
from tests.model_server import Completion, host_on_model

AUDIENCE = [{"name": "audience", "description": "Who reads the answer", "required": True}]
MISSPELT = "Write for {{ audeince | default('everyone') }}."
NEAR = "undefined variable 'audeince' (did you mean 'audience'?)"


def versions_url(role: str, template_type: str) -> str:
    return f"/api/v1/prompts/{role}/{template_type}/versions"


def save(api, content: str, role: str = "pm", template_type: str = "persona", **body: Any) -> dict[str, Any]:
    response = api.post(versions_url(role, template_type), {"content": content, **body}, format="json")
    assert response.status_code == 201, response.json()
    return response.json()


def render_api(api, role: str = "pm", **body: Any):
    return api.post(f"/api/v1/prompts/{role}/render", body, format="json")


# ---------------------------------------------------------------------------- the one render
@pytest.mark.parametrize(
    "content",
    [
        MISSPELT,
        "{% if audeince is none %}Write for everyone.{% endif %}",
        "{% set reader = audeince %}Write plainly.",
        "{% if false %}{{ audeince }}{% endif %}Write plainly.",
    ],
)
def test_a_misspelt_name_cannot_render_even_where_jinja_would_let_it_through(content):
    declared = [{"name": "audience", "default": "developers"}]
    with pytest.raises(PromptRenderError) as caught:
        render(content, declared, {"project_name": "Shop"})
    assert (caught.value.kind, caught.value.field, caught.value.line) == ("undefined", "audeince", 1)
    assert caught.value.reason == NEAR
    assert caught.value.suggestions == ["audience"]


def test_the_near_name_is_looked_for_among_the_given_values_too():
    with pytest.raises(PromptRenderError) as caught:
        render("Project {{ project_nmae }}", [], {"project_name": "Shop"})
    assert caught.value.reason == "undefined variable 'project_nmae' (did you mean 'project_name'?)"


def test_a_required_variable_the_content_does_not_use_is_not_enforced():
    assert render("Be brief.", AUDIENCE, {}) == "Be brief."
    with pytest.raises(PromptRenderError, match="missing required variable 'audience'"):
        render("Write for {{ audience }}.", AUDIENCE, {})


# ---------------------------------------------------------------------------- invoke, fork
class Answers:
    """A model that answers ``{}`` to everything (what it answers does not matter here)."""

    def __call__(self, body: dict[str, Any]) -> Completion:
        return Completion("{}")


def invoke(api) -> dict[str, Any]:
    body = {"capability_id": "schema_query", "from_role": "coderA", "target_role": "dba", "params": {"table": "users"}}
    response = api.post("/api/v1/capabilities/invoke", body, format="json")
    assert response.status_code == 200, response.content
    return response.json()


def test_an_invoke_whose_prompt_has_a_misspelt_name_fails_naming_it_and_never_calls_the_model(
    api, transactional_db, builtin, settings
):
    persona = PromptVersion.objects.get(
        template__role__role="dba", template__template_type="persona", template__project=None, is_active=True
    )
    # as a config import or a version from before the activation checks could leave it
    persona.content = MISSPELT
    persona.variables = [{"name": "audience", "description": "", "required": False, "default": "developers"}]
    persona.save()
    with host_on_model(settings, Answers(), MODEL_STREAM=False) as model:
        body = invoke(api)
        assert model.server.requests == []
        assert body["success"] is False
        assert body["error"]["code"] == "executor_error"
        assert NEAR in body["error"]["message"]
        assert "persona (global 1.0.0)" in body["error"]["message"]
        # the same invoke with the name spelt right does reach the model
        save(api, "Write for {{ audience }}.", role="dba", variables=persona.variables)
        invoke(api)
        assert model.server.requests
        assert "Write for developers." in model.server.requests[0]["messages"][0]["content"]


def test_a_fork_onto_a_draft_with_a_misspelt_name_fails_naming_it_and_never_calls_the_model(
    api, transactional_db, builtin, settings
):
    with host_on_model(settings, ReviewBrain(), MODEL_STREAM=False) as model:
        created = api.post("/api/v1/tasks", {"workflow": "requirement_review", "input_markdown": CLINIC}, format="json")
        source = wait_for_task(model.host, created.json()["task_id"])
        assert source.status == "completed", source.error
        # refused as the active version, kept as a draft (with the warning naming the near name)
        declared = [{"name": "audience", "default": "developers"}]
        refused = api.post(versions_url("pm", "persona"), {"content": MISSPELT, "variables": declared}, format="json")
        assert refused.status_code == 400
        draft = save(api, MISSPELT, variables=declared, activate=False)
        assert "'audeince' (did you mean 'audience'?)" in draft["warnings"][0]
        asked = len(model.server.requests)
        fork = api.post(
            f"/api/v1/tasks/{source.id}/fork",
            {"from_step": 0, "overrides": {"prompt_versions": {"pm/persona": draft["version"]}}},
            format="json",
        )
        assert fork.status_code == 201, fork.json()
        forked = wait_for_task(model.host, fork.json()["task_id"])
        # the review goes on without pm (seed 002), with a visible warning naming the near name
        assert forked.status == "completed", forked.error
        (warning,) = json.loads(forked.artifacts.get(name="outcome.json").content)["warnings"]
        assert warning.startswith("pm failed in the review round (executor_error: the prompt of pm cannot be")
        assert NEAR in warning
        errors = [
            e for c in ExecutionContext.objects.filter(task_id=forked.id, role="pm") for e in c.output_state["errors"]
        ]
        assert [e["code"] for e in errors] == ["executor_error"]
        assert not [body for body in model.server.requests[asked:] if "Write for" in body["messages"][0]["content"]]


# ---------------------------------------------------------------------------- declarations
def test_a_version_saved_without_variables_declares_none_and_the_role_still_renders(api, builtin):
    save(api, "Write for {{ audience }}.", variables=AUDIENCE)
    later = save(api, "Be brief.")
    assert later["variables"] == []
    response = render_api(api)
    assert response.status_code == 200, response.json()
    assert "Be brief." in response.json()["final"]


def test_a_declared_variable_the_content_does_not_use_is_a_warning_and_never_blocks_a_render(api, builtin):
    body = save(api, "Be brief.", variables=AUDIENCE)
    assert body["variables"] == AUDIENCE
    assert "declared but not used in the template: audience" in body["warnings"]
    response = render_api(api)
    assert response.status_code == 200, response.json()
    assert "Be brief." in response.json()["final"]


def test_a_rollback_renders_with_the_restored_versions_own_declarations(api, builtin):
    save(api, "Write for {{ audience }}.", variables=AUDIENCE)  # 1.0.1
    save(api, "Be brief.")  # 1.0.2: saved without variables
    save(api, "Be very brief.", variables=[{"name": "tone", "default": "dry"}])  # 1.0.3
    response = api.post("/api/v1/prompts/pm/persona/rollback", {"version": "1.0.2"}, format="json")
    assert response.status_code == 201, response.json()
    assert response.json()["variables"] == []
    assert render_api(api).status_code == 200
    response = api.post("/api/v1/prompts/pm/persona/rollback", {"version": "1.0.1"}, format="json")
    assert response.json()["variables"] == AUDIENCE
    missing = render_api(api)
    assert missing.status_code == 400
    assert missing.json()["errors"] == {"variables.audience": ["missing required variable 'audience'"]}
    assert "Write for CFOs." in render_api(api, variables={"audience": "CFOs"}).json()["final"]


def test_the_render_api_names_the_near_name(api, builtin):
    version = PromptVersion.objects.get(
        template__role__role="pm", template__template_type="persona", template__project=None, is_active=True
    )
    PromptVersion.objects.filter(pk=version.pk).update(
        content=MISSPELT, variables=[{"name": "audience", "default": "developers"}]
    )
    response = render_api(api)
    assert response.status_code == 400
    body = response.json()
    assert body["errors"] == {"variables.audeince": [NEAR]}
    assert body["detail"] == f"persona (global 1.0.0): line 1: {NEAR}"
    assert body["suggestions"] == {"audeince": ["audience"]}


def test_a_project_override_and_a_preview_name_the_near_name_too(api, builtin, shop):
    declared = [{"name": "audience", "default": "developers"}]
    draft = save(api, MISSPELT, project="shop", variables=declared, activate=False)
    version = PromptVersion.objects.get(template__project=shop, version=draft["version"])
    PromptVersion.objects.filter(pk=version.pk).update(is_active=True)  # as an import could leave it
    response = render_api(api, project="shop")
    assert response.status_code == 400
    assert response.json()["detail"] == f"persona (project {draft['version']}): line 1: {NEAR}"
    preview = api.post(
        "/api/v1/prompts/pm/persona/preview", {"content": MISSPELT, "variables": declared}, format="json"
    )
    assert preview.status_code == 400
    assert preview.json()["errors"] == {"variables.audeince": [NEAR]}
    assert preview.json()["suggestions"] == {"audeince": ["audience"]}


# ---------------------------------------------------------------------------- the editor page
def preview(page_client, content: str, variables: Any, language: str = "en") -> str:
    data = {"content": content, "variables": json.dumps(variables), "values": "{}"}
    response = page_client.post(
        "/prompts/pm/persona/edit/preview/", data, HTTP_HX_REQUEST="true", HTTP_ACCEPT_LANGUAGE=language
    )
    assert response.status_code == 200
    return response.content.decode()


def test_the_editor_shows_the_declarations_the_new_version_will_have_before_save(api, page_client, builtin):
    save(api, "Write for {{ audience }}.", variables=AUDIENCE)  # 1.0.1
    editor = page_client.get("/prompts/pm/persona/edit/").content.decode()
    assert "Pre-filled with the declarations of version 1.0.1." in editor
    assert "&quot;name&quot;: &quot;audience&quot;" in editor  # in the editable box
    html = preview(page_client, "Be brief.", AUDIENCE)
    assert 'id="preview-declarations"' in html
    assert "<code>audience</code> required, <strong>not used by the template</strong>" in html
    assert "Declared but not used in the template (a warning only: it never blocks a render): audience" in html
    assert "None: the template may use the always-available variables only." in preview(page_client, "Hi.", [])


def test_the_editors_declarations_and_warnings_are_in_chinese_too(api, page_client, builtin):
    save(api, "Write for {{ audience }}.", variables=AUDIENCE)
    html = preview(page_client, "Be brief {{ audeince }}.", AUDIENCE, language="zh-hans")
    assert "新版本的变量声明" in html and "模板未使用" in html
    assert (
        "已使用但既未声明也非始终可用（此版本无法激活）：&#x27;audeince&#x27;（您是否想用 &#x27;audience&#x27;？）"
        in html
    )
    assert "已声明但模板未使用（仅为警告：不会阻止渲染）：audience" in html
    data = {"content": "Be brief.", "variables": json.dumps(AUDIENCE), "base_version": "1.0.1", "action": "activate"}
    saved = page_client.post("/prompts/pm/persona/edit/", data, HTTP_ACCEPT_LANGUAGE="zh-hans", follow=True)
    assert "已声明但模板未使用（仅为警告：不会阻止渲染）：audience" in saved.content.decode()
    assert "Be brief." in render_api(api).json()["final"]  # the unused required variable blocks nothing
