"""A person logs in, sees the team and runs the demo (Playwright + Debian Chromium)."""

from __future__ import annotations

import re

from playwright.sync_api import expect

from monitoring.models import Task


def test_login_is_required_and_the_dashboard_shows_the_team(page, live_server, builtin, staff_user):
    page.goto(f"{live_server.url}/roles/")
    expect(page).to_have_url(f"{live_server.url}/login/?next=/roles/")
    from tests.conftest import PASSWORD

    page.fill("#id_username", staff_user.username)
    page.fill("#id_password", "not it")
    page.click("button[type=submit]")
    expect(page.locator(".error")).to_contain_text("didn't match")
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    expect(page).to_have_url(f"{live_server.url}/roles/")
    page.goto(f"{live_server.url}/")
    roles = page.locator("#roles .role-card")
    expect(roles).to_have_count(11)
    expect(page.locator("#roles")).to_contain_text("Database Administrator")
    expect(page.locator("#roles")).to_contain_text("Schema query")  # cards by name


def test_run_demo_completes_and_the_task_page_updates_without_reload(asgi_page, asgi_url, runtime_host):
    page = asgi_page
    page.click("#run-demo")
    page.wait_for_url(f"{asgi_url}/tasks/**")
    expect(page.locator('#task-header [data-field="task-status"]')).to_have_text("completed", timeout=60_000)
    artifacts = page.locator("#artifacts summary")
    expect(artifacts.filter(has_text="requirement_final.md")).to_have_count(1)
    expect(artifacts.filter(has_text="consolidation_report.json")).to_have_count(1)
    expect(page.locator("#artifacts")).to_contain_text("Acceptance criteria")
    # the tokens arrive with the status, not only after a reload
    tokens = page.locator('#task-header [data-field="task-tokens"]')
    expect(tokens).to_have_count(1)
    expect(tokens).to_have_text(re.compile(r"^≈ [1-9][\d,]* tokens \(est\.\)$"))  # offline: an estimate, not a budget
    task = Task.objects.get()
    expect(tokens).to_have_text(f"≈ {task.tokens_used:,} tokens (est.)")
