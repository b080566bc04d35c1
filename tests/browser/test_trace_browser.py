"""Issue 30: from a finished review an operator finds out why an expert raised a finding in
two clicks: the task page's trace link, then the expert's review call, which shows the
finding's category, the document line it quotes and the problem. In English and Chinese."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import expect

from monitoring.models import Artifact
from runs.tasks import start_task
from tests.documents import CLINIC
from tests.helpers import wait_for_task

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.parametrize(("language", "trace_word"), [("en", "Trace"), ("zh-hans", "调用追踪")])
def test_two_clicks_from_the_task_to_why_an_expert_raised_a_finding(
    browser, asgi_url, staff_user, runtime_host, language, trace_word
):
    from tests.conftest import PASSWORD

    task = start_task(workflow="requirement_review", input_markdown=CLINIC, user=staff_user)
    wait_for_task(runtime_host, task.id)
    artifact = next(
        a for a in Artifact.objects.filter(task=task, name__startswith="review_") if json.loads(a.content)["issues"]
    )
    finding = json.loads(artifact.content)["issues"][0]
    line = CLINIC.splitlines()[finding["location"]["line"] - 1]
    expert = {"review_dev.json": "architect", "review_pm.json": "pm", "review_ai.json": "ai_expert"}.get(
        artifact.name, "domain_expert"
    )

    context = browser.new_context(locale=language, extra_http_headers={"Accept-Language": language})
    page = context.new_page()
    page.set_default_timeout(20_000)
    try:
        page.goto(f"{asgi_url}/login/")
        page.fill("#id_username", staff_user.username)
        page.fill("#id_password", PASSWORD)
        page.click("button[type=submit]")
        page.goto(f"{asgi_url}/tasks/{task.id}/")
        page.click("#trace-link")  # click 1
        expect(page.locator("h1")).to_contain_text(trace_word)
        call = page.locator(f"#node-{_review_call_id(task.id, expert)} > details > summary")
        call.click()  # click 2
        row = page.locator(f"#finding-{finding['id']}")
        expect(row).to_be_visible()
        expect(row).to_contain_text(line.strip()[:40])
        expect(row).to_contain_text(finding["problem"][:40])
        assert page.locator(".trace-agent").count() == task.contexts.count()
        page.screenshot(path=f"/tmp/trace-{language}.png", full_page=False)
    finally:
        context.close()


def _review_call_id(task_id: str, role: str) -> str:
    from monitoring.models import Message

    request = Message.objects.filter(
        task_id=task_id, type="invoke_request", to_role=role, payload__params__mode="review"
    ).first()
    return request.id
