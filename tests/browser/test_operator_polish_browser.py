"""A new operator's walk of the task page in Chinese at 1366x768 (issue 32, second walk):
"Inspect" brings the agent's detail into view, "（估算）" stays on one line, and answering an
open point leaves no Content-Security-Policy error in the console. Served by daphne, driven
by Debian's Chromium."""

from __future__ import annotations

from playwright.sync_api import expect

from tests.browser.demo_run import start_chinese_demo
from tests.browser.test_csp_browser import watch
from tests.helpers import wait_for_task

IN_VIEW = """() => {
  const box = document.getElementById("inspector").getBoundingClientRect();
  return box.height > 0 && box.top > -2 && box.top < window.innerHeight  // sub-pixel rounding above 0;
}"""
WRAPPED = """() => [...document.querySelectorAll('[data-field="tokens"] abbr')]
  .filter((el) => el.getClientRects().length > 1).map((el) => el.textContent)"""
"""The "(est.)" marks of the agent cards that break across lines (one box per line)."""


def test_the_task_page_inspects_in_view_keeps_estimates_whole_and_answers_without_csp_errors(
    browser, asgi_url, staff_user, runtime_host, settings
):
    _context, page, task = start_chinese_demo(browser, asgi_url, staff_user, settings)
    assert wait_for_task(runtime_host, task.id).status == "completed"
    page.reload()
    problems = watch(page)
    page.reload()
    outcome = page.locator("#task-outcome section.outcome")
    expect(outcome).to_be_visible(timeout=60_000)

    marks = page.locator('[data-field="tokens"] abbr')
    expect(marks.first).to_be_visible()
    assert page.evaluate(WRAPPED) == []

    page.evaluate("window.scrollTo(0, 0)")
    page.locator("button[data-inspect]").first.click()
    expect(page.locator("#inspector > *").first).to_be_visible()
    page.wait_for_function(IN_VIEW)
    assert page.evaluate("document.activeElement && document.activeElement.id") == "inspector"

    point = outcome.locator('li.open-point[data-answered="no"]').first
    point_id = point.get_attribute("id")
    point.locator("textarea").fill("只用本店近一年的订单记录。")
    point.locator("button[type=submit]").click()
    expect(outcome.locator(f"li#{point_id}")).to_have_attribute("data-answered", "yes")
    page.wait_for_timeout(3000)  # let a late swap, a socket fill or a reload report its violation
    assert problems == [], "\n".join(problems)
