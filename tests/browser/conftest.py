"""Playwright driving Debian's Chromium (/usr/bin/chromium; never `playwright install`).

Without Chromium the browser tests are skipped with the reason, except when
TEAMCLAW_REQUIRE_BROWSER=1 (CI sets it), where a missing browser is a failure.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator

import pytest

CHROMIUM = os.environ.get("TEAMCLAW_CHROMIUM", "/usr/bin/chromium")
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--no-first-run",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]

# Playwright's sync API keeps an event loop in this thread; the ORM calls the tests make
# between browser steps are ordinary synchronous calls.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


def pytest_collection_modifyitems(items):
    for item in items:
        if "tests/browser/" in str(item.fspath):
            item.add_marker(pytest.mark.browser)
    # The session's Playwright loop stays running in this thread once started; browser tests go
    # last so async tests (pytest-asyncio needs no running loop) never run after them.
    items.sort(key=lambda item: "tests/browser/" in str(item.fspath))


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    """One Chromium per test module: Playwright's sync API keeps an event loop running in this
    thread while it is open, which must be closed again before asyncio tests run."""
    if not (os.path.exists(CHROMIUM) or shutil.which("chromium")):
        if os.environ.get("TEAMCLAW_REQUIRE_BROWSER") == "1":
            pytest.fail(f"Chromium not found at {CHROMIUM}; install Debian's chromium package")
        pytest.skip(f"Chromium not found at {CHROMIUM} (apt-get install -y chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        yield browser
        browser.close()


@pytest.fixture
def page(browser):
    context = browser.new_context()
    page = context.new_page()
    page.set_default_timeout(20_000)
    yield page
    context.close()


@pytest.fixture
def logged_in_page(page, live_server, staff_user):
    from tests.conftest import PASSWORD

    page.goto(f"{live_server.url}/login/")
    page.fill("#id_username", staff_user.username)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"{live_server.url}/")
    return page
