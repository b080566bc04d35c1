"""A person watches the team live, approves a tool, and steps through a replay (issue #6).

Served by daphne (HTTP + websockets) in the test process; driven by Debian's Chromium.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from django.conf import settings
from playwright.sync_api import expect

from monitoring.models import ExecutionContext, Message, Task
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
    expect(card.locator('[data-field="status"]')).to_have_text("waiting for you")  # waiting_user, worded
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
    expect(index).to_have_text("1")  # steps are numbered from 1 on the page
    page.click('a[data-step="next"]')
    expect(index).to_have_text("2")
    expect(page).to_have_url(re.compile(r"\?at=1$"))
    page.keyboard.press("ArrowRight")
    expect(index).to_have_text("3")
    page.click('a[data-step="prev"]')
    expect(index).to_have_text("2")
    last = page.locator('a[data-step="last"]')
    last.click()
    newest = main.snapshots.order_by("-sequence").first()
    expect(page.locator("#replay-point")).to_contain_text(f"as of snapshot #{newest.sequence} ({newest.trigger})")
    expect(page.locator("#replay-point")).to_contain_text(f"{newest.state['status']} {newest.state['progress']}%")
    page.fill("[data-jump-number]", "1")
    page.click(".jump button")
    expect(index).to_have_text("1")
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


def test_a_chinese_operator_gets_the_pushed_cards_in_chinese(asgi_page, asgi_url, runtime_host, staff_user):
    """Issue 17: after the switcher chose Chinese, what arrives over the socket (cards, task
    chip, message rows) is Chinese too, not the server's default language."""
    page = asgi_page
    page.goto(f"{asgi_url}/live/")
    page.select_option("#language-switcher", "zh-hans")  # submits itself (forms.js)
    expect(page.locator("html")).to_have_attribute("lang", "zh-hans")
    expect(page.locator("[data-live-status]").first).to_have_text(re.compile("^实时"), timeout=20_000)
    expect(page.locator("#context-cards")).to_contain_text("还没有智能体工作")
    task = start_task(workflow="generic", task_description="Plan the sprint", user=staff_user)
    expect(page.locator(f'#task-{task.id} [data-field="task-status"]')).to_have_text("已完成", timeout=60_000)
    wait_for_task(runtime_host, task.id)
    for context in ExecutionContext.objects.filter(task=task):
        card = page.locator(f"#ctx-{context.id}")
        expect(card.locator("[data-inspect]")).to_have_text("查看")
        expect(card.get_by_role("link", name="回放")).to_be_visible()
        expect(card.locator('[data-field="status"]')).to_have_text("已完成")  # the status, worded (issue 32)
    # the task group's count follows the cards pushed after the page was drawn (it said
    # "1 个智能体" above 6 cards)
    agents = ExecutionContext.objects.filter(task=task).count()
    assert agents > 1
    expect(page.locator(f'[data-task-group="{task.id}"] h3 .agent-count')).to_have_text(f"{agents} 个智能体")
    expect(page.locator("#message-log-rows")).to_contain_text("参数 {")
    expect(page.locator("#message-log-rows")).not_to_contain_text("params {")


def test_a_pushed_message_row_shows_the_time_in_the_browsers_zone(browser, asgi_url, runtime_host, staff_user):
    """Issue 17: the server runs in UTC, Chromium in Shanghai; a message row the socket pushes
    shows the recorded time + 8 h, as the page's own rows do (timezone.js's cookie)."""
    from tests.conftest import PASSWORD

    assert settings.TIME_ZONE == "UTC"
    context = browser.new_context(locale="en-US", timezone_id="Asia/Shanghai")
    page = context.new_page()
    page.set_default_timeout(20_000)
    page.goto(f"{asgi_url}/login/")  # timezone.js stores the zone on this page already
    page.fill("#id_username", staff_user.username)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"{asgi_url}/")
    page.goto(f"{asgi_url}/live/")
    wait_live(page)
    expect(page.locator("#message-log-rows")).to_contain_text("No messages yet")
    expect(page.locator("thead")).to_contain_text("Time (Asia/Shanghai)")

    task = start_task(workflow="generic", task_description="Plan the sprint", user=staff_user)
    expect(page.locator(f'#task-{task.id} [data-field="task-status"]')).to_have_text("completed", timeout=60_000)
    wait_for_task(runtime_host, task.id)
    messages = list(Message.objects.filter(task_id=task.id).order_by("seq"))
    assert messages
    for message in messages[:5]:
        at = datetime.fromtimestamp(message.timestamp_ms / 1000, tz=UTC)
        shanghai = at + timedelta(hours=8)
        shown = page.locator(f"#msg-{message.id} time")
        expect(shown).to_have_text(shanghai.strftime("%H:%M:%S.") + f"{at.microsecond // 1000:03d}")
        expect(shown).to_have_attribute("datetime", at.isoformat())
        expect(shown).to_have_attribute("title", shanghai.strftime("%Y-%m-%dT%H:%M:%S.%f+08:00"))
    context.close()
