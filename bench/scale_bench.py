"""The web tier and workers under load: prints figures, asserts nothing (README "Scaling out").

``.venv/bin/python bench/scale_bench.py [--seconds S] [--reviews N]`` on a throw-away SQLite
database (or ``DATABASE_URL``), with real daphne and ``runtime_worker`` processes:

- ``connect_200_resets_backlog_default`` / ``connect_200_resets_backlog_1024``: of 200
  connections opened at once to one web process, how many were reset or refused, with
  Twisted's default listen backlog (50) and with ``backlog=1024`` (what ``make run`` uses).
- ``http_invokes_per_s_web1`` / ``_web2`` and ``..._p99_ms``: ``POST /api/v1/capabilities/invoke``
  (coderA -> dba ``schema_query``, a connection each) from 64 concurrent clients against one web process, and
  spread over two.
- ``reviews_per_s_workers1`` / ``_workers2``: offline requirement reviews queued through the
  API and run by one, then two ``runtime_worker`` processes (``TEAMCLAW_RUNTIME=remote`` web).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

from bench_servers import PYTHON, ROOT, free_port, prepared_token


def wait_port(port: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.2)
    raise SystemExit(f"no server on port {port}")


def start_web(env: dict[str, str], backlog: int | None) -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    endpoint = f"tcp:port={port}:interface=127.0.0.1" + (f":backlog={backlog}" if backlog else "")
    process = subprocess.Popen(
        [PYTHON, "-m", "daphne", "-e", endpoint, "teamclaw.asgi:application"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    wait_port(port)
    return process, port


async def burst(port: int, connections: int) -> int:
    """Open ``connections`` at once, each sending one GET; how many were reset or refused."""

    async def one() -> bool:
        try:
            reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), 30)
            writer.write(b"GET /login/ HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            await writer.drain()
            data = await asyncio.wait_for(reader.read(64), 60)
            writer.close()
            return data.startswith(b"HTTP/1.1")
        except (OSError, TimeoutError):
            return False

    results = await asyncio.gather(*(one() for _ in range(connections)))
    return results.count(False)


async def invokes(ports: list[int], token: str, clients: int, seconds: float) -> tuple[float, float]:
    """Invokes per second and p99 latency (ms) from ``clients`` clients, a connection per request."""
    body = json.dumps({"capability_id": "schema_query", "from_role": "coderA", "params": {"table": "users"}}).encode()
    latencies: list[float] = []
    stop = time.monotonic() + seconds

    async def client(n: int) -> None:
        port = ports[n % len(ports)]
        request = (
            f"POST /api/v1/capabilities/invoke HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Token {token}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
        ).encode() + body
        while time.monotonic() < stop:
            started = time.perf_counter()
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(request)
            await writer.drain()
            answer = await reader.read()
            writer.close()
            if not answer.startswith(b"HTTP/1.1 200"):
                raise SystemExit(f"unexpected answer: {answer[:300]!r}")
            latencies.append((time.perf_counter() - started) * 1000)

    await asyncio.gather(*(client(n) for n in range(clients)))
    return len(latencies) / seconds, statistics.quantiles(latencies, n=100)[98] if len(latencies) > 100 else 0.0


def reviews(env: dict[str, str], port: int, token: str, workers: int, count: int) -> float:
    """Reviews per second run by ``workers`` runtime_worker processes."""
    processes = [
        subprocess.Popen(
            [PYTHON, "manage.py", "runtime_worker", "--concurrency", "4"],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for _ in range(workers)
    ]
    try:
        time.sleep(3)  # let the workers start
        ids = []
        started = time.monotonic()
        for n in range(count):
            request = urllib.request.Request(
                f"http://127.0.0.1:{port}/api/v1/tasks",
                data=json.dumps(
                    {"workflow": "requirement_review", "input_markdown": f"# Shop {n}\n\nUsers buy books."}
                ).encode(),
                headers={"Authorization": f"Token {token}", "Content-Type": "application/json"},
            )
            with urllib.request.urlopen(request) as response:
                ids.append(json.loads(response.read())["task_id"])
        while True:
            left = 0
            for task_id in ids[-5:] + ids[:5]:
                request = urllib.request.Request(
                    f"http://127.0.0.1:{port}/api/v1/tasks/{task_id}", headers={"Authorization": f"Token {token}"}
                )
                with urllib.request.urlopen(request) as response:
                    left += json.loads(response.read())["status"] in ("queued", "running")
            if not left:
                break
            time.sleep(0.2)
        elapsed = time.monotonic() - started
    finally:
        for process in processes:
            process.terminate()
            process.wait(30)
    return count / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="length of each invoke run (s)")
    parser.add_argument("--reviews", type=int, default=40, help="reviews per worker figure")
    args = parser.parse_args()
    data = Path(tempfile.mkdtemp(prefix="teamclaw-scale-"))
    env = {**os.environ, "TEAMCLAW_DATA_DIR": str(data), "TEAMCLAW_EXECUTOR": "offline", "PYTHONUNBUFFERED": "1"}
    env.setdefault("DATABASE_URL", f"sqlite:///{data / 'bench.sqlite3'}")
    token = prepared_token(env)

    started: list[subprocess.Popen[bytes]] = []

    def web(environment: dict[str, str], backlog: int | None) -> int:
        process, port = start_web(environment, backlog)
        started.append(process)
        return port

    try:
        for label, backlog in (("default", None), ("1024", 1024)):
            port = web(env, backlog)
            print(f"connect_200_resets_backlog_{label} {asyncio.run(burst(port, 200))}", flush=True)
        ports = [web(env, 1024) for _ in range(2)]
        for count in (1, 2):
            rate, p99 = asyncio.run(invokes(ports[:count], token, 64, args.seconds))
            print(f"http_invokes_per_s_web{count} {rate:.0f}", flush=True)
            print(f"http_invokes_p99_ms_web{count} {p99:.0f}", flush=True)
        remote = {**env, "TEAMCLAW_RUNTIME": "remote"}
        port = web(remote, 1024)
        for count in (1, 2):
            print(f"reviews_per_s_workers{count} {reviews(remote, port, token, count, args.reviews):.2f}", flush=True)
    finally:
        for process in started:  # never leave a server behind, even when a figure failed
            process.terminate()
        for process in started:
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()


if __name__ == "__main__":
    main()
