"""A new operator reading Chinese goes from the demo through its outcome to answering an open
point, and meets no English on the way (issue 32, "done when"): the outcome says the findings
are expected and what to do next, the diff is side by side and fits a 1366 px screen, the
answer is saved and shown. Served by daphne (HTTP + websockets), driven by Debian's Chromium."""

from __future__ import annotations

import re

from playwright.sync_api import expect

from monitoring.models import OpenPointAnswer
from tests.browser.demo_run import start_chinese_demo
from tests.helpers import wait_for_task

FILE_NAMES = re.compile(r"[\w.-]+\.(?:md|json)\b", re.IGNORECASE)  # headers may be upper case (CSS)
IDENTIFIERS = {"ERP", "AI", "API", "UTC", "p95"}
"""Words of the demo's own Chinese document (its terms) and units: not the page's English."""
ENGLISH_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]*")


def english_words(text: str, *names: str) -> list[str]:
    """The English words of ``text`` besides file names, IDENTIFIERS and ``names`` (a user's)."""
    return [w for w in ENGLISH_WORD.findall(FILE_NAMES.sub(" ", text)) if w not in IDENTIFIERS | set(names)]


def test_a_chinese_operator_goes_from_the_demo_to_answering_an_open_point(
    browser, asgi_url, staff_user, runtime_host, settings
):
    context, page, task = start_chinese_demo(browser, asgi_url, staff_user, settings)
    outcome = page.locator("#task-outcome section.outcome")
    expect(outcome).to_be_visible(timeout=60_000)
    assert wait_for_task(runtime_host, task.id).status == "completed"
    expect(outcome).to_have_attribute("data-verdict", "findings")
    expect(outcome).to_contain_text("已完成，有发现项")
    expect(outcome).to_contain_text("首次评审出现这种结果是正常的")  # expected, not a failure
    expect(outcome).to_contain_text("下一步：")
    assert english_words(outcome.inner_text()) == []

    point_id = outcome.locator('li.open-point[data-answered="no"]').first.get_attribute("id")
    point = outcome.locator(f"li#{point_id}")
    question = point.locator(".question").inner_text()
    point.locator("textarea").fill("只用本店近一年的订单记录。")
    point.locator("button[type=submit]").click()
    answered = outcome.locator(f"li#{point_id}")
    expect(answered).to_have_attribute("data-answered", "yes")
    expect(answered).to_contain_text("只用本店近一年的订单记录。")
    expect(answered).to_contain_text(f"由 {staff_user.username} 回答")
    assert english_words(answered.inner_text(), staff_user.username) == []
    row = OpenPointAnswer.objects.get(task=task)
    assert row.answer == "只用本店近一年的订单记录。" and row.question in question and row.answered_by == staff_user

    outcome.get_by_role("link", name="评审改了什么（左右对照）").click()
    table = page.locator("table.diff")
    expect(table).to_be_visible()
    expect(table.locator("tr.diff-insert").first).to_be_visible()
    assert english_words(page.locator("main").inner_text()) == []
    # readable at 1366 px: the two sides wrap their lines instead of scrolling sideways
    assert page.evaluate("document.documentElement.scrollWidth") <= 1366
    context.close()
