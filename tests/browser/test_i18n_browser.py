"""A person switches the dashboard to Chinese and walks every page in both languages, in
Chromium with a Shanghai clock (Playwright; fonts-noto-cjk draws the Chinese). Screenshots
of the dashboard in each language go to ``data/`` (no assertions on pixels)."""

from __future__ import annotations

import re
from pathlib import Path

from django.conf import settings
from playwright.sync_api import expect

from tests.pages import page_path, page_patterns

CJK = re.compile(r"[\u4e00-\u9fff]")


def page_paths(card: str) -> list[str]:
    """Every page over the built-in team that a GET shows (no run, skill or project needed)."""
    values = {"role": "coderA", "capability_id": card, "which": "invoke", "template_type": "persona"}
    values["version"] = "1.0.0"
    paths = [page_path(pattern, values) for pattern in page_patterns()]
    return [path for path in paths if path is not None]


def walk(page, base: str, paths: list[str], lang: str) -> dict[str, str]:
    """Visit every path; returns ``{path: problem}`` for a page that is not a 200 in ``lang``
    (an htmx fragment has no ``<html>`` of its own, so only its status counts)."""
    problems = {}
    for path in paths:
        if page.request.get(f"{base}{path}").status == 405:  # a form's POST-only action
            continue
        response = page.goto(f"{base}{path}", wait_until="domcontentloaded")
        if response.status != 200:
            problems[path] = f"HTTP {response.status}"
        elif "<html" in response.text() and page.locator("html").get_attribute("lang") != lang:
            problems[path] = f"lang {page.locator('html').get_attribute('lang')}"
    return problems


def test_switch_to_chinese_on_the_dashboard_and_walk_every_page(browser, live_server, builtin, staff_user):
    from capabilities.models import CapabilityCard
    from tests.conftest import PASSWORD

    context = browser.new_context(locale="en-US", timezone_id="Asia/Shanghai")
    page = context.new_page()
    page.set_default_timeout(20_000)
    errors: list[str] = []
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    base = live_server.url
    page.goto(f"{base}/login/")
    page.fill("#id_username", staff_user.username)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"{base}/")
    expect(page.locator("html")).to_have_attribute("lang", "en")
    expect(page.locator("h1")).to_have_text("Your agent team")
    # timezone.js stored the browser's zone: from the next page on, times are Shanghai's
    page.reload()
    expect(page.locator("#time-zone")).to_have_text("Asia/Shanghai")
    shots = Path(settings.DATA_DIR)
    page.screenshot(path=str(shots / "i18n-dashboard-en.png"), full_page=True)

    page.select_option("#language-switcher", "zh-hans")  # submits itself (forms.js)
    expect(page.locator("html")).to_have_attribute("lang", "zh-hans")
    expect(page).to_have_url(f"{base}/")
    expect(page.locator("h1")).to_have_text("您的智能体团队")
    expect(page.locator("#run-demo")).to_have_text("▶ 运行演示")
    expect(page.locator(".topbar nav")).to_contain_text("仪表盘")
    page.screenshot(path=str(shots / "i18n-dashboard-zh-hans.png"), full_page=True)

    page.goto(f"{base}/live/")  # live.js takes its status words from the scripts' catalog
    expect(page.locator("[data-live-status]").first).to_have_text(CJK)

    card = CapabilityCard.objects.filter(skill__isnull=True).first().capability_id
    paths = page_paths(card)
    assert len(paths) > 20
    assert walk(page, base, paths, "zh-hans") == {}
    page.goto(f"{base}/roles/")
    page.select_option("#language-switcher", "en")
    expect(page.locator("h1")).to_have_text("Roles")
    assert walk(page, base, paths, "en") == {}
    assert [e for e in errors if "Content Security Policy" in e or "Refused" in e] == []
    context.close()
