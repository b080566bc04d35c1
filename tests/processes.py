"""Real OS processes for the tests that cross them: a server (daphne, the embedded runtime),
a ``runtime_worker``, a terminal's ``run_workflow``; on this test's own database."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import connection

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable


def database_url() -> str:
    """This test's database as a DATABASE_URL another process can open."""
    db = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{db['NAME']}"
    return f"postgres://{db.get('USER') or ''}@{db['HOST']}:{db['PORT']}/{db['NAME']}"


def process_env(**extra: str) -> dict[str, str]:
    """The environment of a child process: this test's database, its projects folder, fast
    leases (2 s, heartbeat 1 s), the offline brain."""
    env = {key: value for key, value in os.environ.items() if not key.startswith(("TEAMCLAW_", "OPENAI_"))}
    env.pop("REDIS_URL", None)
    env.update(
        DATABASE_URL=database_url(),
        TEAMCLAW_PROJECTS_ROOT=str(settings.TEAMCLAW["PROJECTS_ROOT"]),
        TEAMCLAW_LEASE_S="2",
        TEAMCLAW_WORKER_HEARTBEAT_S="1",
        TEAMCLAW_EXECUTOR="offline",
        PYTHONUNBUFFERED="1",
    )
    env.update(extra)
    return env


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_until(check: Callable[[], Any], timeout: float, what: str | Callable[[], str], interval: float = 0.1) -> Any:
    """Poll ``check`` until it returns something truthy; fail the test after ``timeout`` s
    saying ``what`` (or what ``what()`` says then)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"{what() if callable(what) else what}: not within {timeout} s")


def wait_while_progressing(
    check: Callable[[], Any],
    progress: Callable[[], Any],
    stall_s: float,
    what: str | Callable[[], str],
    interval: float = 0.2,
) -> Any:
    """Like ``wait_until``, but the deadline is ``stall_s`` s after ``progress()`` last changed
    (e.g. the number of tasks completed): a slow, loaded machine passes, a stuck system fails."""
    seen = progress()
    deadline = time.monotonic() + stall_s
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(interval)
        now = progress()
        if now != seen:
            seen, deadline = now, time.monotonic() + stall_s
    raise AssertionError(f"{what() if callable(what) else what}: no progress for {stall_s} s")


class Child:
    """A child process with its output in a log file (shown when a test fails)."""

    def __init__(self, args: list[str], env: dict[str, str], log: Path) -> None:
        self.log = log
        self.handle = log.open("wb")
        self.process = subprocess.Popen(args, cwd=ROOT, env=env, stdout=self.handle, stderr=subprocess.STDOUT)

    def output(self) -> str:
        if not self.handle.closed:
            self.handle.flush()
        return self.log.read_text(errors="replace")

    def kill(self) -> None:
        """``kill -9``: no clean-up of any kind."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(10)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.kill()
        self.handle.close()


def manage(*args: str, env: dict[str, str], log: Path) -> Child:
    return Child([PYTHON, "manage.py", *args], env, log)


class Server(Child):
    """``daphne teamclaw.asgi:application`` with the embedded runtime started at once, as
    ``make run`` serves it (``TEAMCLAW_RUNTIME_AUTOSTART=1``)."""

    def __init__(self, env: dict[str, str], log: Path, token: str) -> None:
        self.port = free_port()
        self.token = token
        env = {"TEAMCLAW_RUNTIME_AUTOSTART": "1", **env}
        super().__init__(
            [PYTHON, "-m", "daphne", "-b", "127.0.0.1", "-p", str(self.port), "teamclaw.asgi:application"], env, log
        )
        wait_until(self.answers, 60, f"the server on port {self.port} to answer\n{self.output()}")

    def answers(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                return True
        except OSError:
            return False

    def api(self, method: str, path: str, body: dict[str, Any] | None = None) -> tuple[int, Any]:
        """``(status, JSON body)`` of an API call with the staff token."""
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}/api/v1/{path}",
            method=method,
            data=json.dumps(body).encode() if body is not None else None,
            headers={"Authorization": f"Token {self.token}", "Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status, json.loads(response.read() or b"null")
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read() or b"null")
