"""One way to decide fragment or page (``web.htmx.fragment_or_page``), and ``Vary: HX-Request``
on every answer that depends on it, so no cache or browser history serves a fragment for the
page (issue 32)."""

from __future__ import annotations

import json

import pytest
from django.utils import timezone

from monitoring.models import Artifact, Task


@pytest.fixture
def reviewed(db) -> Task:
    task = Task.objects.create(id="t-htmx", kind="task", workflow="requirement_review", status="completed")
    outcome = {"phase": "draft", "revision": 1, "clean": False}
    Artifact.objects.create(task=task, name="outcome.json", content=json.dumps(outcome), created_at=timezone.now())
    return task


PAGES = [
    # (url, what only the fragment starts with)
    ("/alerts/", '<table class="alerts"'),
    ("/prompts/pm/preview/", '<p class="muted small">Config version'),
    ("/tasks/t-htmx/?part=outcome", '<section class="card outcome'),
    ("/tasks/t-htmx/?part=phase", '<span class="badge phase"'),
    ("/tasks/t-htmx/trace/", '<div id="trace-tree"'),
]


@pytest.mark.parametrize(("url", "fragment_start"), PAGES)
def test_an_htmx_request_gets_the_fragment_a_navigation_the_page_and_both_vary(
    page_client, builtin, reviewed, url, fragment_start
):
    page = page_client.get(url)
    fragment = page_client.get(url, HTTP_HX_REQUEST="true")
    boosted = page_client.get(url, HTTP_HX_REQUEST="true", HTTP_HX_BOOSTED="true")
    assert page.status_code == fragment.status_code == boosted.status_code == 200
    assert "<html" in page.content.decode() and "<html" in boosted.content.decode()
    body = fragment.content.decode()
    assert "<html" not in body and body.lstrip().startswith(fragment_start), body[:200]
    for response in (page, fragment, boosted):
        assert "HX-Request" in response["Vary"], (url, response["Vary"])


def test_a_part_the_page_does_not_have_gets_the_whole_page(page_client, builtin, reviewed):
    response = page_client.get("/tasks/t-htmx/?part=nope", HTTP_HX_REQUEST="true")
    assert "<html" in response.content.decode() and "HX-Request" in response["Vary"]


def test_a_page_that_answers_htmx_alike_does_not_vary_on_it(page_client, builtin, reviewed):
    assert "HX-Request" not in page_client.get("/tasks/").get("Vary", "")
