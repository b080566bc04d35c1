"""Hostile templates are refused (PRD §4.5; issue #4): sandbox escapes published for Jinja2
in 2024-2025, dunder access, attr/format tricks, resource exhaustion. Each is refused with
a clear reason that leaks nothing, whether saved, previewed or already stored and rendered."""

from __future__ import annotations

import time

import pytest
from django.conf import settings

from prompts.models import PromptTemplate, PromptVersion
from prompts.render import MAX_RENDER_SECONDS, PromptRenderError, render
from tests.prompts.hostile import HOSTILE, LEAK_MARKERS


def assert_leaks_nothing(text: str) -> None:
    for marker in (*LEAK_MARKERS, str(settings.BASE_DIR), settings.SECRET_KEY):
        assert marker not in text, f"{marker!r} leaked in {text!r}"


@pytest.mark.parametrize(("case", "content", "kinds"), HOSTILE, ids=[case for case, _, _ in HOSTILE])
def test_the_sandbox_refuses_it_with_a_clear_safe_reason(case, content, kinds):
    started = time.perf_counter()
    with pytest.raises(PromptRenderError) as caught:
        render(content, [], {"x": "value"})
    elapsed = time.perf_counter() - started
    assert caught.value.kind in kinds, caught.value.message
    assert caught.value.reason
    assert len(caught.value.message) < 300
    assert_leaks_nothing(caught.value.message)
    # the time limit bounds every refusal (generous margin for a loaded machine)
    assert elapsed < MAX_RENDER_SECONDS + 2.0, f"{case} took {elapsed:.2f}s"


def test_globals_that_allow_accumulation_or_random_text_do_not_exist():
    for name in ("namespace", "cycler", "joiner", "lipsum", "dict"):
        with pytest.raises(PromptRenderError) as caught:
            render("{{ " + name + "() }}")
        assert caught.value.kind == "undefined"
        assert caught.value.field == name


def test_ordinary_templates_still_work():
    content = (
        "{% macro item(i) %}- {{ i|title }}{% endmacro %}"
        "{{ project_name|upper }} uses {{ tools|join(', ') }}.\n"
        "{% for c in capabilities|sort %}{{ item(c) }}\n{% endfor %}"
        "{{ '%s has %d tools'|format(project_name, tools|length) }}; {{ 'a,b'.split(',')|length }} parts; "
        "{{ settings.format }} {{ settings.get('depth', 2) * 10 }} {{ (2 ** 10) }} {{ 'x'.ljust(3, '.') }}"
    )
    values = {
        "project_name": "shop",
        "tools": ["file_read", "network"],
        "capabilities": ["b_cap", "a_cap"],
        "settings": {"format": "markdown"},
    }
    assert render(content, [], values) == (
        "SHOP uses file_read, network.\n- A_cap\n- B_cap\nshop has 2 tools; 2 parts; markdown 20 1024 x.."
    )


@pytest.mark.parametrize("view", ["save", "preview"])
def test_every_hostile_template_is_refused_by_the_api_with_a_400_and_nothing_is_saved(api, builtin, view):
    url = f"/api/v1/prompts/pm/persona/{'versions' if view == 'save' else 'preview'}"
    versions = PromptVersion.objects.count()
    failures = []
    for case, content, _kinds in HOSTILE:
        response = api.post(url, {"content": content}, format="json")
        body = response.content.decode()
        if response.status_code != 400 or "content" not in response.json().get("errors", {}):
            failures.append(f"{case}: {response.status_code} {body[:200]}")
            continue
        try:
            assert_leaks_nothing(body)
        except AssertionError as exc:
            failures.append(f"{case}: {exc}")
    assert not failures, "\n".join(failures)
    assert PromptVersion.objects.count() == versions


def test_a_stored_hostile_template_is_refused_when_rendered(api, builtin):
    """Data saved before a check existed (or written around the API) still cannot escape:
    the render endpoint answers 400 naming the layer, and leaks nothing."""
    template = PromptTemplate.objects.get(role__role="pm", template_type="persona", project=None)
    failures = []
    for index, (case, content, _kinds) in enumerate(HOSTILE):
        PromptVersion.objects.filter(template=template).update(is_active=False)
        PromptVersion.objects.create(template=template, version=f"9.0.{index}", content=content, is_active=True)
        response = api.post("/api/v1/prompts/pm/render", {}, format="json")
        body = response.content.decode()
        if response.status_code != 400 or response.json().get("template_type") != "persona":
            failures.append(f"{case}: {response.status_code} {body[:200]}")
            continue
        try:
            assert_leaks_nothing(body)
        except AssertionError as exc:
            failures.append(f"{case}: {exc}")
    assert not failures, "\n".join(failures)
