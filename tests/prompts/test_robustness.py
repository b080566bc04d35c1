"""Adversarial input and races against the prompt API: concurrent saves, bodies nested too
deep, NUL characters, malformed stored declarations, unknown projects."""

from __future__ import annotations

import threading

from django.db import close_old_connections
from rest_framework.test import APIClient

from capabilities.models import ConfigChange
from prompts.actions import PromptChangeError, save_version
from prompts.models import PromptTemplate, PromptVersion
from prompts.queries import get_role


def test_concurrent_saves_each_get_their_own_version_and_one_stays_active(transactional_db, builtin, staff_user):
    role = get_role("pm")
    results: list[str] = []
    errors: list[Exception] = []
    barrier = threading.Barrier(4)

    def worker(n: int) -> None:
        try:
            barrier.wait()
            results.append(
                save_version(
                    role=role, template_type="persona", content=f"Writer {n}", actor=staff_user
                ).version.version
            )
        except (PromptChangeError, Exception) as exc:  # a refused save must be a clean PromptChangeError
            errors.append(exc)
        finally:
            close_old_connections()

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert all(isinstance(e, PromptChangeError) and e.status == 409 for e in errors), errors
    assert sorted(results) == [f"1.0.{n}" for n in range(1, len(results) + 1)]
    assert len(results) >= 1
    template = PromptTemplate.objects.get(role__role="pm", template_type="persona", project=None)
    assert template.versions.filter(is_active=True).count() == 1
    assert template.versions.get(is_active=True).version == max(results, key=lambda v: int(v.rsplit(".", 1)[1]))
    assert ConfigChange.objects.filter(config_type="prompt").count() == len(results)


def test_a_body_nested_too_deeply_is_a_400_not_a_500(api, builtin):
    body = '{"variables": {"a": ' + "[" * 50_000 + "]" * 50_000 + "}}"
    for url in (
        "/api/v1/prompts/pm/render",
        "/api/v1/prompts/pm/persona/versions",
        "/api/v1/prompts/pm/persona/preview",
    ):
        response = api.post(url, body, content_type="application/json")
        assert response.status_code == 400, url
        assert "nests too deeply" in response.json()["detail"]


def test_values_nested_deeper_than_the_sandbox_allows_are_refused(api, builtin):
    deep: list = []
    for _ in range(40):
        deep = [deep]
    response = api.post("/api/v1/prompts/pm/render", {"variables": {"deep": deep}}, format="json")
    assert response.status_code == 400
    assert response.json()["errors"] == {"variables.deep": ["variable 'deep': values may nest at most 32 levels deep"]}


def test_nul_characters_in_content_are_refused_on_the_page_too(page_client, builtin):
    response = page_client.post(
        "/prompts/pm/persona/edit/", {"content": "bad\x00byte", "variables": "[]", "base_version": "1.0.0"}
    )
    assert response.status_code == 400
    assert "NUL character" in response.content.decode()
    assert APIClient().get("/api/v1/prompts").status_code == 401
    assert PromptVersion.objects.filter(template__role__role="pm", template__template_type="persona").count() == 1


def test_a_stored_version_with_a_malformed_declaration_renders_as_a_400(api, builtin):
    template = PromptTemplate.objects.get(role__role="pm", template_type="persona", project=None)
    template.versions.update(is_active=False)
    PromptVersion.objects.create(
        template=template, version="5.0.0", content="hi", variables=[{"nom": "x"}], is_active=True
    )
    response = api.post("/api/v1/prompts/pm/render", {}, format="json")
    assert response.status_code == 400
    assert "a declared variable has no name" in response.json()["detail"]


def test_an_unknown_project_in_a_query_is_a_404_and_in_a_body_a_400(api, builtin):
    assert api.get("/api/v1/prompts/pm?project=nowhere").status_code == 404
    assert api.get("/api/v1/prompts/pm/persona/versions?project=nowhere").status_code == 404
    body = api.post("/api/v1/prompts/pm/render", {"project": "nowhere"}, format="json")
    assert body.status_code == 400
    assert body.json()["errors"] == {"project": ["project 'nowhere' does not exist"]}
