"""A Chinese operator's demo run in Chromium, shared by the browser tests that start from it."""

from __future__ import annotations

import re
from typing import Any

from playwright.sync_api import expect

from monitoring.models import Task


def start_chinese_demo(browser: Any, asgi_url: str, staff_user: Any, settings: Any) -> tuple[Any, Any, Task]:
    """``(context, page, task)``: ``staff_user`` signed in at 1366x768, the language switched
    to Chinese, ▶ the demo pressed and its task page open (the task may still be running; the
    caller closes the context)."""
    from tests.conftest import PASSWORD

    settings.TEAMCLAW = {**settings.TEAMCLAW, "DEMO_THINK_MS": 0}
    context = browser.new_context(locale="zh-CN", viewport={"width": 1366, "height": 768})
    page = context.new_page()
    page.set_default_timeout(20_000)
    page.goto(f"{asgi_url}/login/")
    page.fill("#id_username", staff_user.username)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"{asgi_url}/")
    page.select_option("#language-switcher", "zh-hans")
    expect(page.locator("html")).to_have_attribute("lang", "zh-hans")
    page.click("#run-demo")
    page.wait_for_url(re.compile(r"/tasks/\w+/$"))
    return context, page, Task.objects.get()
