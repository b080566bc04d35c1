"""SQLite file handles of the web process under a burst of invokes (issue 17): prints figures,
asserts nothing.

``.venv/bin/python bench/sqlite_handles_bench.py [--concurrent N] [--bursts B] [--clients C] [--settle S]``
on a throw-away SQLite database, with one real daphne process serving as ``make run`` does
(``TEAMCLAW_RUNTIME_AUTOSTART=1``, ``backlog=1024``, the offline brain). Linux only (it counts
``/proc/<pid>/fd``).

For each of ``B`` bursts of ``N`` concurrent ``POST /api/v1/capabilities/invoke`` (coderA ->
dba ``schema_query``, a connection each, all sent at once):

- ``invokes_per_s_burst<b>``: invokes answered 200 per second of the burst;
- ``sqlite_fds_peak_burst<b>``: the most descriptors to the database (and its ``-wal`` /
  ``-shm``) the process held while the burst ran (sampled every 20 ms);
- ``sqlite_fds_after_burst<b>``: right after its last answer;

with ``--clients C``, then ``invokes_per_s_clients<C>`` and ``sqlite_fds_peak_clients<C>``: ``C``
clients each sending one invoke after the other for ``--seconds``;

then ``sqlite_fds_before`` (before the first burst) and ``sqlite_fds_after_<t>s``, 1 s, 5 s
and ``S`` seconds after the last burst with the server idle.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from bench_servers import PYTHON, ROOT, free_port, prepared_token


def sqlite_fds(pid: int, database: Path) -> int:
    """Descriptors of process ``pid`` open on ``database`` or its ``-wal`` / ``-shm`` files."""
    count = 0
    for entry in Path(f"/proc/{pid}/fd").iterdir():
        try:
            if os.readlink(entry).startswith(str(database)):
                count += 1
        except OSError:  # closed meanwhile
            pass
    return count


async def invoke(port: int, token: str) -> bool:
    """One invoke on a connection of its own; True when it answered 200 with ``success``."""
    body = json.dumps({"capability_id": "schema_query", "from_role": "coderA", "params": {"table": "users"}}).encode()
    request = (
        f"POST /api/v1/capabilities/invoke HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Token {token}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    ).encode() + body
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(request)
    await writer.drain()
    answer = await reader.read()
    writer.close()
    return answer.startswith(b"HTTP/1.1 200") and b'"success":true' in answer.replace(b" ", b"")


async def burst(port: int, token: str, concurrent: int) -> tuple[int, float]:
    """Send ``concurrent`` invokes at once; (answered 200, seconds until the last answer)."""
    started = time.perf_counter()
    answers = await asyncio.gather(*(invoke(port, token) for _ in range(concurrent)), return_exceptions=True)
    return sum(answer is True for answer in answers), time.perf_counter() - started


async def steady(port: int, token: str, clients: int, seconds: float) -> float:
    """Invokes per second from ``clients`` clients sending one after the other for ``seconds``."""
    stop = time.monotonic() + seconds
    answered = 0

    async def client() -> None:
        nonlocal answered
        while time.monotonic() < stop:
            ok = await invoke(port, token)
            answered += ok

    started = time.perf_counter()
    await asyncio.gather(*(client() for _ in range(clients)))
    return answered / (time.perf_counter() - started)


class PeakSampler:
    """Samples ``sqlite_fds`` every 20 ms on a thread of its own; ``peak`` is the highest seen."""

    def __init__(self, pid: int, database: Path) -> None:
        self.pid, self.database, self.peak = pid, database, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.02):
            self.peak = max(self.peak, sqlite_fds(self.pid, self.database))

    def __enter__(self) -> PeakSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--concurrent", type=int, default=300, help="invokes sent at once per burst")
    parser.add_argument("--bursts", type=int, default=2, help="how many bursts, one after the other")
    parser.add_argument("--settle", type=float, default=30.0, help="seconds idle before the last count")
    parser.add_argument("--port", type=int, default=0, help="the server's port (a free one by default)")
    parser.add_argument("--clients", type=int, default=0, help="then this many steady clients (0: none)")
    parser.add_argument("--seconds", type=float, default=15.0, help="how long the steady clients send")
    args = parser.parse_args()
    if not Path("/proc/self/fd").is_dir():
        raise SystemExit("this benchmark counts /proc/<pid>/fd: Linux only")
    data = Path(tempfile.mkdtemp(prefix="teamclaw-handles-"))
    database = data / "teamclaw.sqlite3"  # the data folder's own database, as `make run` uses (no DATABASE_URL)
    env = {
        key: value for key, value in os.environ.items() if not key.startswith(("TEAMCLAW_", "OPENAI_", "DATABASE_URL"))
    }
    env.update(
        TEAMCLAW_DATA_DIR=str(data),
        TEAMCLAW_EXECUTOR="offline",
        PYTHONUNBUFFERED="1",
    )
    token = prepared_token(env)
    port = args.port or free_port()
    endpoint = f"tcp:port={port}:interface=127.0.0.1:backlog=1024"  # as `make run` serves
    server = subprocess.Popen(
        [PYTHON, "-m", "daphne", "-e", endpoint, "teamclaw.asgi:application"],
        cwd=ROOT,
        env={**env, "TEAMCLAW_RUNTIME_AUTOSTART": "1"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise SystemExit(f"no server on port {port}") from None
                time.sleep(0.2)
        time.sleep(2)  # the runtime worker's first polls
        print(f"sqlite_fds_before {sqlite_fds(server.pid, database)}", flush=True)
        for number in range(1, args.bursts + 1):
            with PeakSampler(server.pid, database) as sampler:
                answered, seconds = asyncio.run(burst(port, token, args.concurrent))
            if answered != args.concurrent:
                print(f"answered_200_burst{number} {answered} of {args.concurrent}", flush=True)
            print(f"invokes_per_s_burst{number} {answered / seconds:.1f}", flush=True)
            print(f"sqlite_fds_peak_burst{number} {sampler.peak}", flush=True)
            print(f"sqlite_fds_after_burst{number} {sqlite_fds(server.pid, database)}", flush=True)
        if args.clients:
            with PeakSampler(server.pid, database) as sampler:
                rate = asyncio.run(steady(port, token, args.clients, args.seconds))
            print(f"invokes_per_s_clients{args.clients} {rate:.1f}", flush=True)
            print(f"sqlite_fds_peak_clients{args.clients} {sampler.peak}", flush=True)
        idle_since = time.monotonic()
        for after in sorted({*(s for s in (1.0, 5.0) if s < args.settle), args.settle}):
            time.sleep(max(0.0, idle_since + after - time.monotonic()))
            print(f"sqlite_fds_after_{after:g}s {sqlite_fds(server.pid, database)}", flush=True)
    finally:
        server.terminate()
        try:
            server.wait(30)
        except subprocess.TimeoutExpired:
            server.kill()
        shutil.rmtree(data, ignore_errors=True)


if __name__ == "__main__":
    main()
