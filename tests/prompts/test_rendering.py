"""Rendering and layering (PRD §4.5 模板变量插值, 项目级 Prompt 覆盖): variables, defaults,
missing and undefined names, and 最终 Prompt = 基础模板 + 项目覆盖 + 任务增强."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from monitoring.models import Task
from prompts.render import PromptRenderError, render, system_prompt
from team.snapshot import build_snapshot


def save(api, role, template_type, content, **body):
    response = api.post(f"/api/v1/prompts/{role}/{template_type}/versions", {"content": content, **body}, format="json")
    assert response.status_code == 201, response.json()
    return response.json()


def render_api(api, role="pm", **body):
    return api.post(f"/api/v1/prompts/{role}/render", body, format="json")


AUDIENCE = [{"name": "audience", "description": "Who reads the answer", "required": True}]


def test_the_prd_interpolation_example_renders():
    content = "你是 {{ project_name }} 项目的{{ role_display_name }}（{{ emoji }}）。\n技术栈：{{ tech_stack }}"
    values = {"project_name": "电商后台系统", "role_display_name": "前端开发", "emoji": "💻", "tech_stack": "React"}
    assert render(content, [], values) == "你是 电商后台系统 项目的前端开发（💻）。\n技术栈：React"


def test_declared_defaults_apply_and_given_values_win():
    variables = [{"name": "tone", "default": "dry"}, {"name": "items", "default": ["a", "b"]}]
    assert render("{{ tone }}: {{ items|join('+') }}", variables) == "dry: a+b"
    assert render("{{ tone }}", variables, {"tone": "warm"}) == "warm"
    assert render("{{ tone }}", variables, {"tone": None}) == "dry"  # None counts as not given


def test_a_missing_required_variable_is_an_error_naming_it():
    with pytest.raises(PromptRenderError) as caught:
        render("Write for {{ audience }}.", AUDIENCE, {})
    assert (caught.value.kind, caught.value.field, caught.value.reason) == (
        "missing",
        "audience",
        "missing required variable 'audience'",
    )


def test_an_undefined_name_is_an_error_naming_it_and_its_line():
    with pytest.raises(PromptRenderError) as caught:
        render("fine\n{{ mood|upper }}", [], {})
    assert (caught.value.kind, caught.value.field, caught.value.line) == ("undefined", "mood", 2)
    assert str(caught.value) == "line 2: undefined variable 'mood'"


def test_render_api_names_a_missing_required_variable_and_the_layer(api, builtin):
    save(api, "pm", "persona", "Write for {{ audience }}.", variables=AUDIENCE)
    response = render_api(api)
    assert response.status_code == 400
    body = response.json()
    assert body["errors"] == {"variables.audience": ["missing required variable 'audience'"]}
    assert body["detail"] == "persona (global 1.0.1): missing required variable 'audience'"
    assert (body["kind"], body["template_type"], body["layer"]) == ("missing", "persona", "global 1.0.1")
    ok = render_api(api, variables={"audience": "CFOs"})
    assert ok.status_code == 200
    assert "Write for CFOs." in ok.json()["final"]


def test_final_prompt_is_base_then_project_override_then_task_enhancement(api, builtin, shop):
    save(api, "pm", "persona", "BASE persona for {{ project_name }}.")
    save(api, "pm", "persona", "PROJECT rule: use {{ tech_stack }}.", project="shop")
    save(api, "pm", "guardrails", "PROJECT guardrail.", project="shop")
    body = render_api(
        api, project="shop", task_description="Write the PRD", prompt_enhancement="TASK: mention SEO."
    ).json()
    final = body["final"]
    assert final.index("BASE persona for Online shop.") < final.index("PROJECT rule: use Django + PostgreSQL.")
    assert final.index("PROJECT rule") < final.index("Current task: Write the PRD") < final.index("PROJECT guardrail.")
    assert final.endswith("TASK: mention SEO.")
    persona = next(layer for layer in body["layers"] if layer["template_type"] == "persona")
    assert persona == {
        "template_type": "persona",
        "base": {"version": "1.0.1", "text": "BASE persona for Online shop."},
        "project": {"version": "1.0.0", "text": "PROJECT rule: use Django + PostgreSQL."},
    }
    assert [layer["template_type"] for layer in body["layers"]] == [
        "system_prompt",
        "persona",
        "context_template",
        "output_format",
        "tool_instruction",
        "guardrails",
    ]
    assert body["task_enhancement"] == "TASK: mention SEO."
    assert body["project"] == "shop"
    global_only = render_api(api).json()["final"]
    assert "PROJECT" not in global_only
    assert "BASE persona for TeamClaw." in global_only


def test_render_with_a_task_uses_its_project_description_and_enhancement(api, builtin, shop):
    save(api, "pm", "persona", "Override for the shop.", project="shop")
    task = Task.objects.create(
        id="t-render",
        workflow="generic",
        description="Draft the checkout spec",
        project=shop,
        status="completed",
        prompt_enhancement="Use British English.",
    )
    body = render_api(api, task_id=task.id).json()
    assert body["project"] == "shop"
    assert "Current task: Draft the checkout spec" in body["final"]
    assert "Override for the shop." in body["final"]
    assert body["final"].endswith("Use British English.")
    explicit = render_api(api, task_id=task.id, prompt_enhancement="Use Spanish.").json()
    assert explicit["final"].endswith("Use Spanish.")


def test_render_refuses_an_unknown_task_or_a_task_of_another_project(api, builtin, shop):
    missing = render_api(api, task_id="nope")
    assert missing.status_code == 400
    assert missing.json()["errors"] == {"task_id": ["task 'nope' does not exist"]}
    from capabilities.models import Project

    other = Project.objects.create(slug="other", name="Other")
    Task.objects.create(id="t-shop", workflow="generic", project=shop, status="completed")
    clash = render_api(api, task_id="t-shop", project=other.slug)
    assert clash.status_code == 400
    assert clash.json()["errors"] == {"project": ["task 't-shop' belongs to project 'shop'"]}


def test_runtime_renderer_uses_the_pinned_snapshot_and_the_tasks_enhancement(api, builtin, shop):
    save(api, "dba", "persona", "Shop DBA: {{ tech_stack }}.", project="shop")
    snapshot = build_snapshot("shop")
    task = SimpleNamespace(description="Add an index", prompt_enhancement="Prefer partial indexes.")
    prompt = system_prompt(snapshot, "dba", task, {"extra_hint": "unused"})
    assert "Shop DBA: Django + PostgreSQL." in prompt
    assert "Current task: Add an index" in prompt
    assert prompt.endswith("Prefer partial indexes.")
    assert "schema_design" in prompt  # the capabilities standard variable


def test_preview_api_renders_unsaved_content_with_sample_values(api, builtin):
    body = api.post(
        "/api/v1/prompts/pm/persona/preview",
        {"content": "Hi {{ who }} from {{ project_name }}", "values": {"who": "Ann"}},
        format="json",
    ).json()
    assert body["text"] == "Hi Ann from TeamClaw"
    assert body["undeclared_variables"] == ["who"]
    missing = api.post("/api/v1/prompts/pm/persona/preview", {"content": "Hi {{ who }}"}, format="json")
    assert missing.status_code == 400
    assert missing.json()["errors"] == {"variables.who": ["undefined variable 'who'"]}


def test_values_must_be_plain_data_within_the_size_limit():
    with pytest.raises(PromptRenderError, match="variable 'big': a value would be larger than 100,000"):
        render("{{ big }}", [], {"big": "x" * 100_001})
