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


class DaphneThread:
    """Daphne serving the project's ASGI application (HTTP and websockets) on a free port,
    in a thread of the test process, so tests share its runtime host and test database.

    pytest-django's ``live_server`` is WSGI (no websockets) and channels'
    ChannelsLiveServerTestCase runs daphne in another process (its own runtime), so the
    live-page tests start daphne here. Twisted's reactor runs once per process: one server
    per test session.
    """

    def __init__(self) -> None:
        import threading

        self.ready = threading.Event()
        self.port: int | None = None
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, name="daphne-tests", daemon=True)

    def _run(self) -> None:
        try:
            from daphne.endpoints import build_endpoint_description_strings
            from daphne.server import Server
            from twisted.internet import reactor

            from teamclaw.asgi import application

            self.server = Server(
                application=application,
                endpoints=build_endpoint_description_strings(host="127.0.0.1", port=0),
                signal_handlers=False,
                verbosity=0,
            )

            def poll() -> None:
                if self.server.listening_addresses:
                    self.port = self.server.listening_addresses[0][1]
                    self.ready.set()
                else:
                    reactor.callLater(0.05, poll)

            reactor.callLater(0.05, poll)
            self.server.run()
        except BaseException as exc:  # reported to the fixture
            self.error = exc
            self.ready.set()

    def start(self) -> DaphneThread:
        self.thread.start()
        if not self.ready.wait(30) or self.error is not None:
            raise RuntimeError("daphne did not start") from self.error
        return self

    def stop(self) -> None:
        from twisted.internet import reactor

        reactor.callFromThread(reactor.stop)
        self.thread.join(10)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


@pytest.fixture(scope="session")
def asgi_server(django_db_setup, django_db_blocker) -> Iterator[DaphneThread]:
    """One daphne server for the session (see DaphneThread)."""
    server = DaphneThread().start()
    yield server
    server.stop()


@pytest.fixture
def asgi_url(asgi_server, transactional_db) -> str:
    """The daphne server's URL; the test's data is committed so the server sees it."""
    return asgi_server.url


@pytest.fixture
def asgi_page(page, asgi_url, staff_user):
    """A page logged in as the staff operator on the daphne server."""
    from tests.conftest import PASSWORD

    page.goto(f"{asgi_url}/login/")
    page.fill("#id_username", staff_user.username)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"{asgi_url}/")
    return page
