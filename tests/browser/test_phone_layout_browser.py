"""A Chinese operator on a phone (390 px wide): the top bar's parts do not overlap, no label
wraps one character a line, and the dashboard, the task page and the diff do not scroll
sideways (the walk of 2026-12-06 found the page 440 px wide with "更多" over "退出登录")."""

from __future__ import annotations

from playwright.sync_api import expect

from tests.browser.demo_run import start_chinese_demo
from tests.helpers import wait_for_task

PHONE = {"width": 390, "height": 844}
OVERLAPS = """() => {
  const parts = [...document.querySelectorAll(
    ".topbar .brand, .topbar .nav-links, .topbar .nav-more > summary, .topbar .logout, .topbar .language")]
    .map((el) => [el.className || el.tagName, el.getBoundingClientRect()])
    .filter(([, r]) => r.width > 0 && r.height > 0);
  const hits = [];
  for (let i = 0; i < parts.length; i++) for (let j = i + 1; j < parts.length; j++) {
    const [a, r] = parts[i], [b, s] = parts[j];
    if (r.left < s.right - 1 && s.left < r.right - 1 && r.top < s.bottom - 1 && s.top < r.bottom - 1
        && !(a === "nav-links" && b === "nav-more") ) hits.push(a + " × " + b);
  }
  return hits;
}"""
TALL_LABELS = """() => [
  ...document.querySelectorAll(".topbar label, .topbar summary, .topbar button, .topbar #time-zone")]
  .filter((el) => {
    const r = el.getBoundingClientRect();
    const line = parseFloat(getComputedStyle(el).lineHeight) || 20;
    return r.width > 0 && r.height > line * 1.6; })
  .map((el) => el.textContent.trim())"""


def test_the_top_bar_and_pages_fit_a_phone_in_chinese(browser, asgi_url, staff_user, runtime_host, settings):
    context, page, task = start_chinese_demo(browser, asgi_url, staff_user, settings)
    wait_for_task(runtime_host, task.id)
    page.set_viewport_size(PHONE)
    for path in ("/", f"/tasks/{task.id}/", f"/tasks/{task.id}/diff/"):
        page.goto(f"{asgi_url}{path}")
        expect(page.locator("html")).to_have_attribute("lang", "zh-hans")
        assert page.evaluate(OVERLAPS) == [], f"top bar parts overlap on {path}"
        assert page.evaluate(TALL_LABELS) == [], f"a top-bar label wraps on {path}"
        scroll, inner = page.evaluate("() => [document.documentElement.scrollWidth, window.innerWidth]")
        assert scroll <= inner, f"{path} scrolls sideways on a phone ({scroll} > {inner})"
    # every page is still reachable: the "More" menu opens inside the screen
    page.goto(f"{asgi_url}/")
    page.locator(".topbar .nav-more summary").click()
    menu = page.locator(".topbar .nav-more-links")
    expect(menu).to_be_visible()
    box = menu.bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"] + 1
    context.close()
