"""Issue 17: after a burst of concurrent invokes, a real server (daphne with the embedded
runtime, as ``make run`` serves it) on SQLite gives back the file descriptors of the
connections its threads opened, within seconds (docs/architecture.md §3 "SQLite file handles").

The cause it guards: SQLite keeps the descriptor of every connection closed in a process open
while another connection of that process holds a lock on the database file, and in WAL mode
a connection that has read holds its shared lock until it is closed. The runtime host's worker
threads, the recorder and the thread the A2A / MCP apps read the database on kept their
connection between jobs, so the descriptors of a burst (one connection per request's thread)
stayed open for minutes. Linux only: it counts ``/proc/<pid>/fd``."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import threading
import urllib.request
from pathlib import Path

import pytest
from django.db import connection
from rest_framework.authtoken.models import Token

from runs.host import WORKER_THREADS
from tests.processes import Server, process_env, wait_until

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        not sys.platform.startswith("linux"), reason="counts a process's descriptors in /proc (Linux only)"
    ),
]

BURST = 150
"""Invokes sent at once."""

IDLE_BOUND = (WORKER_THREADS + 1) * 2 + 1
"""Descriptors an idle server may still hold on the database: a connection (the database file
and its ``-wal``) for each of the host's worker threads and the recorder, should a poll or a
heartbeat be running just then, plus the one shared ``-shm``."""


def database_fds(pid: int, database: str) -> int:
    """Descriptors of process ``pid`` open on ``database`` or its ``-wal`` / ``-shm`` files."""
    count = 0
    for entry in Path(f"/proc/{pid}/fd").iterdir():
        try:
            count += os.readlink(entry).startswith(database)
        except OSError:  # closed meanwhile
            pass
    return count


async def burst(port: int, token: str, count: int) -> list[bytes]:
    """``count`` invokes (coderA -> dba ``schema_query``) sent at once, a connection each; the
    raw answers."""
    body = json.dumps({"capability_id": "schema_query", "from_role": "coderA", "params": {"table": "users"}}).encode()
    request = (
        f"POST /api/v1/capabilities/invoke HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Token {token}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    ).encode() + body

    async def one() -> bytes:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(request)
        await writer.drain()
        answer = await asyncio.wait_for(reader.read(), 120)
        writer.close()
        return answer

    return await asyncio.gather(*(one() for _ in range(count)))


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="no /proc/<pid>/fd to count descriptors in")
def test_a_burst_of_invokes_leaves_no_sqlite_descriptors_open(builtin, staff_user, tmp_path):
    if connection.vendor != "sqlite":
        pytest.skip("the descriptors counted are SQLite's (this run is on another database)")
    database = str(connection.settings_dict["NAME"])
    server = Server(process_env(), tmp_path / "server.log", Token.objects.create(user=staff_user).key)
    pid = server.process.pid
    peak = 0
    sampling = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not sampling.wait(0.02):
            peak = max(peak, database_fds(pid, database))

    sampler = threading.Thread(target=sample, daemon=True)
    try:
        # The mounted A2A and MCP apps read the database outside Django's request handler, on
        # asgiref's one shared thread: after the card's read that thread holds no connection either.
        with urllib.request.urlopen(f"http://127.0.0.1:{server.port}/.well-known/agent-card.json", timeout=30) as card:
            assert card.status == 200 and json.loads(card.read())["skills"]
        sampler.start()
        try:
            answers = asyncio.run(burst(server.port, server.token, BURST))
        finally:
            sampling.set()
            sampler.join()
        failed = [a[:300] for a in answers if not a.startswith(b"HTTP/1.1 200") or b'"success":true' not in a]
        assert not failed, (len(failed), failed[:3], server.output()[-3000:])
        # The burst really had the server hold many connections at once (else this proves nothing).
        assert peak > IDLE_BOUND, peak
        wait_until(
            lambda: database_fds(pid, database) <= IDLE_BOUND,
            15,
            lambda: (
                f"the server to give back its SQLite descriptors after {BURST} invokes (peak {peak}, "
                f"bound {IDLE_BOUND}, still {database_fds(pid, database)})"
            ),
            interval=0.2,
        )
    finally:
        server.stop()
