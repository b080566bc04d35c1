"""A person watches the team live, approves a tool, and steps through a replay (issue #6).

Served by daphne (HTTP + websockets) in the test process; driven by Debian's Chromium.
"""

from __future__ import annotations

import re

from playwright.sync_api import expect

from monitoring.models import ExecutionContext, Task
from runs.tasks import start_task
from tests.helpers import wait_for_task
from tests.live_helpers import start_deploying_task, wait_for_confirmation


def wait_live(page) -> None:
    expect(page.locator("[data-live-status]").first).to_have_text(re.compile("^live"), timeout=20_000)


def test_the_live_page_follows_a_running_task_without_reload(asgi_page, asgi_url, runtime_host, staff_user):
    page = asgi_page
    page.goto(f"{asgi_url}/live/")
    wait_live(page)
    expect(page.locator("#context-cards")).to_contain_text("No agent has worked")
    page.evaluate("window.__sameDocument = true")

    task = start_task(
        workflow="requirement_review", input_markdown="# Shop\n\n- Pages must load fast.\n", user=staff_user
    )
    chip = page.locator(f"#task-{task.id}")
    expect(chip).to_be_visible(timeout=30_000)
    expect(chip.locator('[data-field="task-status"]')).to_have_text("completed", timeout=60_000)
    wait_for_task(runtime_host, task.id)
    for context in ExecutionContext.objects.filter(task=task):
        card = page.locator(f"#ctx-{context.id}")
        expect(card).to_be_visible()
        expect(card.locator('[data-field="status"]')).to_have_text("completed")
    expect(page.locator("#message-log-rows tr.msg").first).to_be_visible()
    expect(page.locator('#call-graph g.edge[data-from="main"][data-kind="invoke"]').first).to_be_attached(
        timeout=10_000
    )
    assert page.evaluate("window.__sameDocument") is True  # never reloaded

    pm = ExecutionContext.objects.filter(task=task, role="pm").first()
    page.locator(f"#ctx-{pm.id} [data-inspect]").click()
    inspector = page.locator("#inspector-panel")
    expect(inspector).to_contain_text("Generated artifacts")
    expect(inspector).to_contain_text("review_pm.json")


def test_an_operator_approves_a_tool_confirmation_on_the_live_page(asgi_page, asgi_url, runtime_host, staff_user):
    page = asgi_page
    page.goto(f"{asgi_url}/live/")
    wait_live(page)
    task = start_deploying_task(runtime_host, staff_user)
    confirmation = wait_for_confirmation(runtime_host, task.id)
    item = page.locator(f"#confirmation-{confirmation.id}")
    expect(item).to_contain_text("deployment", timeout=20_000)
    card = page.locator(f"#ctx-{confirmation.context_id}")
    expect(card.locator('[data-field="status"]')).to_have_text("waiting_user")
    item.get_by_role("button", name="Approve").click()
    expect(item.locator(".badge").first).to_have_text("approved")
    expect(page.locator(f'#task-{task.id} [data-field="task-status"]')).to_have_text("completed", timeout=30_000)
    expect(card.locator('[data-field="status"]')).to_have_text("completed")
    assert Task.objects.get(pk=task.id).status == "completed"


def test_stepping_through_a_replay(asgi_page, asgi_url, runtime_host, staff_user):
    task = start_task(workflow="generic", task_description="Plan the migration", user=staff_user)
    wait_for_task(runtime_host, task.id)
    main = ExecutionContext.objects.get(task=task, role="main")
    page = asgi_page
    page.goto(f"{asgi_url}/replay/{main.id}/?at=0")
    index = page.locator("#replay-index")
    expect(index).to_have_text("0")
    page.click('a[data-step="next"]')
    expect(index).to_have_text("1")
    expect(page).to_have_url(re.compile(r"\?at=1$"))
    page.keyboard.press("ArrowRight")
    expect(index).to_have_text("2")
    page.click('a[data-step="prev"]')
    expect(index).to_have_text("1")
    last = page.locator('a[data-step="last"]')
    last.click()
    newest = main.snapshots.order_by("-sequence").first()
    expect(page.locator("#replay-point")).to_contain_text(f"as of snapshot #{newest.sequence} ({newest.trigger})")
    expect(page.locator("#replay-point")).to_contain_text(f"{newest.state['status']} {newest.state['progress']}%")
    page.fill("[data-jump-number]", "0")
    page.click(".jump button")
    expect(index).to_have_text("0")
    page.select_option("select[name=a]", index=0)
    page.click(".compare button")
    expect(page.locator("#snapshot-diff")).to_contain_text("field")


def test_logging_out_in_another_tab_stops_the_live_page(asgi_page, asgi_url, runtime_host):
    page = asgi_page
    page.goto(f"{asgi_url}/live/")
    wait_live(page)
    other = page.context.new_page()  # same browser session
    other.goto(f"{asgi_url}/roles/")
    other.click("form.logout button[type=submit]")
    other.wait_for_url(re.compile(r"/(login/|logout/|$)"))
    expect(page.locator("[data-live-status]").first).to_have_text("signed out · reload to log in", timeout=10_000)
    page.reload()
    expect(page).to_have_url(re.compile(r"/login/\?next=/live/"))
