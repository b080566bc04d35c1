"""The Content-Security-Policy (teamclaw.middleware) lets every page work with nothing inline:
the dashboard, the live page (its websocket included), a finished task's page and the other
pages load in Chromium without one CSP violation or script error."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from runs.tasks import start_task
from tests.helpers import wait_for_task


def watch(page) -> list[str]:
    """Collect CSP violations and script errors the page reports from now on."""
    problems: list[str] = []
    page.on(
        "console",
        lambda message: (
            problems.append(message.text)
            if message.type == "error" and ("Content Security Policy" in message.text or "Refused" in message.text)
            else None
        ),
    )
    page.on("pageerror", lambda error: problems.append(str(error)))
    page.add_init_script(
        "document.addEventListener('securitypolicyviolation', e => console.error("
        "'Refused (CSP): ' + e.violatedDirective + ' ' + e.blockedURI));"
    )
    return problems


def test_dashboard_live_page_and_a_task_page_load_with_no_csp_violation(asgi_page, asgi_url, runtime_host, staff_user):
    page = asgi_page
    problems = watch(page)
    response = page.goto(f"{asgi_url}/")
    assert "default-src 'self'" in response.headers["content-security-policy"]
    expect(page.locator("#roles .role-card").first).to_be_visible()

    page.goto(f"{asgi_url}/live/")
    expect(page.locator("[data-live-status]").first).to_have_text(re.compile("^live"), timeout=20_000)

    markdown = "# Shop\n\n- Pages must load fast.\n\n| a | b |\n|:--|--:|\n| 1 | 2 |\n"
    task = start_task(workflow="requirement_review", input_markdown=markdown, user=staff_user)
    wait_for_task(runtime_host, task.id)
    page.goto(f"{asgi_url}/tasks/{task.id}/")
    expect(page.locator('#task-header [data-field="task-status"]')).to_have_text("completed", timeout=60_000)
    expect(page.locator("[data-live-status]").first).to_have_text(re.compile("^live"), timeout=20_000)
    page.locator("#artifacts summary").first.click()
    assert problems == [], "\n".join(problems)


@pytest.mark.parametrize(
    "path",
    [
        "/roles/new/",
        "/skills/",
        "/capabilities/",
        "/alerts/",
        "/permissions/invoke/",
        "/prompts/",
        "/workflows/",
        "/stats/tokens/",
        "/api/v1/docs/",
        "/admin/",
    ],
)
def test_other_pages_load_with_no_csp_violation(asgi_page, asgi_url, path):
    page = asgi_page
    problems = watch(page)
    response = page.goto(f"{asgi_url}{path}")
    assert response.status == 200, path
    page.wait_for_load_state("networkidle")
    if path == "/api/v1/docs/":  # Swagger UI ran (its init script comes from ?script)
        expect(page.locator(".opblock").first).to_be_visible()
    assert problems == [], "\n".join(problems)


def test_token_charts_draw_under_the_csp(asgi_page, asgi_url, runtime_host, staff_user):
    """With usage recorded the page draws two charts: no CSP violation, and each chart is a
    loaded image that is not one dark box (pygal's inline <style> used to be blocked, leaving
    black rectangles)."""
    task = start_task(
        workflow="requirement_review", input_markdown="# Shop\n\n- Pages must load fast.\n", user=staff_user
    )
    wait_for_task(runtime_host, task.id)
    page = asgi_page
    problems = watch(page)
    page.goto(f"{asgi_url}/stats/tokens/?group_by=role")
    charts = page.locator("figure.chart img")
    expect(charts).to_have_count(2)
    for index in range(2):
        chart = charts.nth(index)
        assert chart.evaluate("img => img.complete && img.naturalWidth > 0")
        dark = chart.evaluate(
            """img => {
              const c = document.createElement('canvas');
              c.width = img.naturalWidth; c.height = img.naturalHeight;
              const g = c.getContext('2d'); g.drawImage(img, 0, 0);
              const d = g.getImageData(0, 0, c.width, c.height).data;
              let dark = 0;
              for (let i = 0; i < d.length; i += 4) {
                if (d[i] + d[i + 1] + d[i + 2] < 60 && d[i + 3] > 200) dark++;
              }
              return dark / (d.length / 4);
            }"""
        )
        assert dark < 0.5, f"chart {index} is {dark:.0%} dark"
    assert problems == [], "\n".join(problems)
