"""Issue 30: the live page is readable at 1366x768, in English and Chinese. The communication
log spans the page and breaks no token (each type, status and instance id on one line, as
measured by the browser), shows payload values inline, the call graph's words are legible,
and nothing moves once the page has loaded."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from monitoring.models import Message
from runs.tasks import start_task
from tests.documents import CLINIC
from tests.helpers import wait_for_task

pytestmark = pytest.mark.django_db(transaction=True)

LAYOUT_SHIFTS = """
window.__shifts = [];
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) {
    if (!entry.hadRecentInput) window.__shifts.push({value: entry.value, at: entry.startTime});
  }
}).observe({type: "layout-shift", buffered: true});
"""

# For each log cell that must stay on one line: how many lines its text takes (a Range over a
# wrapped text has one client rect per line), its text, and the table's and page's widths.
MEASURE = """
() => {
  const lines = (element) => {
    let count = 0;
    const walker = document.createTreeWalker(element, NodeFilter.SHOW_TEXT);
    while (walker.nextNode()) {
      const node = walker.currentNode;
      if (!node.textContent.trim()) continue;
      const range = document.createRange();
      range.selectNodeContents(node);
      const tops = new Set([...range.getClientRects()].map((r) => Math.round(r.top)));
      count = Math.max(count, tops.size);
    }
    return count;
  };
  const cells = [];
  for (const row of document.querySelectorAll("#message-log-rows tr.msg")) {
    // the columns: time, type, from, to, payload, delivery, task
    for (const [name, column] of [["type", 2], ["status", 6], ["task", 7]]) {
      const cell = row.querySelector(`td:nth-child(${column}) .badge, td:nth-child(${column}) a`);
      if (cell) cells.push({name, text: cell.textContent.trim(), lines: lines(cell)});
    }
    for (const [name, column] of [["from", 3], ["to", 4]]) {
      for (const part of row.querySelectorAll(`td:nth-child(${column}) div`)) {
        cells.push({name, text: part.textContent.trim(), lines: lines(part)});
      }
    }
  }
  const table = document.querySelector("table.message-log").getBoundingClientRect();
  const label = document.querySelector("#call-graph svg .node .label");
  const svg = document.querySelector("#call-graph svg");
  const scale = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
  return {
    cells,
    tableWidth: table.width,
    pageWidth: document.documentElement.clientWidth,
    scrollWidth: document.documentElement.scrollWidth,
    logScroll: [document.querySelector(".log-scroll").scrollWidth, document.querySelector(".log-scroll").clientWidth],
    labelPx: parseFloat(getComputedStyle(label).fontSize) * scale,
    wide: [...document.querySelectorAll("body *")]
      .filter((e) => e.getBoundingClientRect().right > document.documentElement.clientWidth + 1)
      .slice(-4)
      .map((e) => `${e.tagName}.${e.className} ${e.getBoundingClientRect().width}: ${e.textContent.slice(0, 60)}`),
  };
}
"""


@pytest.mark.parametrize("language", ["en", "zh-hans"])
def test_the_live_log_at_1366_breaks_no_token_and_spans_the_page(browser, asgi_url, staff_user, runtime_host, language):
    from tests.conftest import PASSWORD

    task = start_task(workflow="requirement_review", input_markdown=CLINIC, user=staff_user)
    wait_for_task(runtime_host, task.id)
    context = browser.new_context(
        viewport={"width": 1366, "height": 768}, locale=language, extra_http_headers={"Accept-Language": language}
    )
    context.add_init_script(LAYOUT_SHIFTS)
    page = context.new_page()
    page.set_default_timeout(20_000)
    try:
        page.goto(f"{asgi_url}/login/")
        page.fill("#id_username", staff_user.username)
        page.fill("#id_password", PASSWORD)
        page.click("button[type=submit]")
        page.goto(f"{asgi_url}/live/")
        expect(page.locator("#message-log-rows tr.msg").first).to_be_visible()
        loaded = page.evaluate("performance.now()")
        page.wait_for_timeout(3000)
        shown = page.evaluate(MEASURE)
        page.screenshot(path=f"/tmp/live-log-{language}.png", full_page=True)

        broken = [c for c in shown["cells"] if c["lines"] != 1]
        assert not broken, f"tokens broken across lines: {broken[:5]}"
        delivered = "已送达" if language == "zh-hans" else "delivered"
        answer = "应答" if language == "zh-hans" else "answer"  # the message type, worded (issue 32)
        assert {answer, delivered} <= {c["text"] for c in shown["cells"]}
        assert shown["tableWidth"] >= 0.9 * shown["pageWidth"], shown["tableWidth"]
        assert shown["scrollWidth"] <= shown["pageWidth"], shown["wide"]
        assert shown["logScroll"][0] <= shown["logScroll"][1]  # at 1366 px the log does not scroll in its box
        assert shown["labelPx"] >= 11, shown["labelPx"]  # the graph's role names, as drawn

        # values inline: the rounds the experts were asked for are in the log, not only "mode"
        payloads = page.locator('#message-log-rows tr.msg[data-type="invoke_request"] td:nth-child(5)')
        assert any("mode: evaluate" in text for text in payloads.all_inner_texts())
        shifts = page.evaluate("window.__shifts")
        late = sum(s["value"] for s in shifts if s["at"] > loaded)
        assert late < 0.01, f"the layout moved after load: {shifts}"
        requests = Message.objects.filter(task_id=task.id, type__in=("invoke_request", "hook_event")).count()
        counts = page.locator("#call-graph g.edge").evaluate_all("(es) => es.map((e) => +e.dataset.count)")
        assert sum(counts) == requests  # one task's calls, not every task's
    finally:
        context.close()
