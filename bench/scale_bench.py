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
  API and run by one, then two ``runtime_worker`` processes (``TEAMCLAW_RUNTIME=remote`` web),
  queued first, then run: the steady rate between the first and the last completed (the
  queueing and the workers' start-up left out), and ``reviews_ratio_workers2_vs_1``.
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
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from bench_servers import PYTHON, ROOT, free_port, manage, prepared_token


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


def api(port: int, token: str, path: str, body: dict[str, object] | None = None) -> dict[str, object]:
    """``GET`` (or ``POST`` ``body``) ``/api/v1/<path>``; the JSON answer."""
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/api/v1/{path}",
        data=json.dumps(body).encode() if body is not None else None,
        headers={"Authorization": f"Token {token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        answer: dict[str, object] = json.loads(response.read())
        return answer


def tasks_with(port: int, token: str, status: str) -> int:
    """How many tasks have ``status`` (the tasks list's ``count``)."""
    return int(str(api(port, token, f"tasks?status={status}&page_size=1")["count"]))


def reviews(env: dict[str, str], port: int, token: str, workers: int, count: int, concurrency: int = 4) -> float:
    """Offline reviews per second run by ``workers`` runtime_worker processes (each running
    ``concurrency`` tasks at once at most). The ``count``
    reviews are queued through the API first (8 clients at once, no worker running), then the
    workers start; the figure is the steady rate between the first and the last review that
    completed (``finished_at`` in the database), so neither the queueing nor the workers'
    start-up (seconds of CPU each) is in it. Raises SystemExit when a review does not
    complete within 600 s or fails."""
    done_before = tasks_with(port, token, "completed")

    def queue(n: int) -> str:
        body = {"workflow": "requirement_review", "input_markdown": f"# Shop {n}\n\nUsers buy books."}
        return str(api(port, token, "tasks", body)["task_id"])

    with ThreadPoolExecutor(8) as pool:
        ids = list(pool.map(queue, range(count)))
    processes = [
        subprocess.Popen(
            [PYTHON, "manage.py", "runtime_worker", "--concurrency", str(concurrency)],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for _ in range(workers)
    ]
    try:
        started = time.monotonic()
        while tasks_with(port, token, "completed") - done_before < count:
            if failed := tasks_with(port, token, "failed"):
                raise SystemExit(f"{failed} review(s) failed")
            if time.monotonic() - started > 600:
                raise SystemExit("the reviews did not complete within 600 s")
            time.sleep(0.2)
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            process.wait(30)
    span = (
        "from django.db.models import Max, Min; from monitoring.models import Task;"
        f"s = Task.objects.filter(id__in={ids!r}).aggregate(first=Min('finished_at'), last=Max('finished_at'));"
        "print((s['last'] - s['first']).total_seconds())"
    )
    seconds = float(manage(env, "shell", "-c", span).strip().splitlines()[-1])
    return (count - 1) / seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="length of each invoke run (s)")
    parser.add_argument("--reviews", type=int, default=200, help="reviews per worker figure")
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

    def stop_servers() -> None:
        """Stop every web process started so far. An embedded one runs a runtime that claims
        queued tasks, so none may be left when the workers' figures are taken; an idle one
        still polls the database."""
        for process in started:
            process.terminate()
        for process in started:
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
        started.clear()

    try:
        for label, backlog in (("default", None), ("1024", 1024)):
            port = web(env, backlog)
            print(f"connect_200_resets_backlog_{label} {asyncio.run(burst(port, 200))}", flush=True)
            stop_servers()
        for count in (1, 2):
            ports = [web(env, 1024) for _ in range(count)]
            asyncio.run(invokes(ports, token, 8, 3))  # warm up: start-up work, caches, connections
            rate, p99 = asyncio.run(invokes(ports, token, 64, args.seconds))
            print(f"http_invokes_per_s_web{count} {rate:.0f}", flush=True)
            print(f"http_invokes_p99_ms_web{count} {p99:.0f}", flush=True)
            stop_servers()
        remote = {**env, "TEAMCLAW_RUNTIME": "remote"}
        port = web(remote, 1024)
        rates = {}
        for count in (1, 2):
            rates[count] = reviews(remote, port, token, count, args.reviews)
            print(f"reviews_per_s_workers{count} {rates[count]:.2f}", flush=True)
        print(f"reviews_ratio_workers2_vs_1 {rates[2] / rates[1]:.2f}", flush=True)
    finally:
        stop_servers()  # never leave a server behind, even when a figure failed


if __name__ == "__main__":
    main()
