"""What DBOS Transact costs per durable step and per workflow (issue 28; docs/architecture.md §3).

Launches DBOS in this process on a system database (a SQLite file in a temporary folder, or
``--url postgresql://...``), from a thread running its own event loop as the runtime host's
(``runs.host.RuntimeHost``), and runs one async workflow of ``--steps`` trivial async steps,
``--workflows`` times, plus ``--workflows`` workflows at once through a queue. Prints one
``name value`` line each:

- ``dbos_launch_ms``: DBOS() + launch() on a fresh system database (migrations included);
- ``dbos_step_ms``: wall time per checkpointed step (one insert into ``operation_outputs``);
- ``dbos_workflow_ms``: wall time per workflow of zero steps started and awaited directly;
- ``dbos_queued_workflow_ms``: wall time per workflow enqueued on a queue (concurrency 8) and
  awaited, the queue's poll included;
- ``dbos_on_host_loop``: 1 when the queued workflows ran on the launching thread's loop;
- ``dbos_send_recv_ms``: median time from ``DBOSClient.send`` (its own connection, as another
  process's) to the waiting workflow's ``recv`` returning, over 10 messages;
- ``dbos_replays_by_position``: 1 when a forked workflow whose code now asks its steps in
  another order gets the recorded answers of the positions (docs/architecture.md §3).

The SQLite system database is opened as Django's is (WAL, ``synchronous=NORMAL``); ``--sqlite-default``
measures DBOS's own SQLite engine instead.

Usage: ``python bench/dbos_step_bench.py [--url URL] [--steps 200] [--workflows 20] [--sqlite-default]``.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from dbos import DBOS, DBOSClient, DBOSConfig

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

LOOPS: set[int] = set()


SQLITE_PRAGMAS = ("PRAGMA journal_mode=WAL", "PRAGMA synchronous=NORMAL", "PRAGMA busy_timeout=30000")


def sqlite_engine(url: str) -> Any:
    """A SQLAlchemy engine for a SQLite system database: WAL, ``synchronous=NORMAL``, a 30 s
    busy timeout and ``IMMEDIATE`` transactions (writers queue instead of failing)."""
    import sqlalchemy as sa

    engine = sa.create_engine(url, pool_size=20, max_overflow=0, pool_timeout=30)

    @sa.event.listens_for(engine, "connect")
    def _pragmas(connection: Any, _record: Any) -> None:
        connection.isolation_level = "IMMEDIATE"
        for pragma in SQLITE_PRAGMAS:
            connection.execute(pragma)
        connection.execute("PRAGMA foreign_keys=ON")

    return engine


def engine_config(executor_id: str, url: str) -> Any:
    """DBOS's configuration for the bench: executor ``executor_id``, the system database at
    ``url``, its own logs at WARNING and above."""
    config = {
        "name": "teamclaw",
        "system_database_url": url,
        "executor_id": executor_id,
        "dbos_system_schema": "dbos",
        "log_level": "WARNING",
        "application_version": "teamclaw",
    }
    if url.startswith("sqlite"):
        config["system_database_engine"] = sqlite_engine(url)
    return config


@DBOS.step()
async def noop_step(index: int) -> int:
    return index


@DBOS.workflow()
async def many_steps(count: int) -> int:
    total = 0
    for index in range(count):
        total += await noop_step(index)
    LOOPS.add(id(asyncio.get_running_loop()))
    return total


@DBOS.workflow()
async def receiver(count: int) -> list[float]:
    """Waits for ``count`` messages on topic ``command``; each carries its send time."""
    latencies = []
    for _ in range(count):
        sent = await DBOS.recv_async("command", timeout_seconds=30)
        latencies.append(time.perf_counter() - sent)
    return latencies


ORDER = ["a", "b"]


@DBOS.step()
async def echo(value: str) -> str:
    return value


@DBOS.workflow()
async def two_asks() -> list[str]:
    """Asks ``echo`` for ``ORDER[0]`` then ``ORDER[1]``, then for ``c``."""
    return [await echo(ORDER[0]), await echo(ORDER[1]), await echo("c")]


async def replays_by_position() -> float:
    """1 when a fork of ``two_asks`` from its third step, run with the first two asks in the
    other order, gets the answers recorded at those positions (``a`` for the ask of ``b``):
    DBOS matches a step by its position and name, not by its arguments."""
    ORDER[:] = ["a", "b"]
    first = await DBOS.start_workflow_async(two_asks)
    await first.get_result()
    ORDER[:] = ["b", "a"]
    try:
        steps = await DBOS.list_workflow_steps_async(first.workflow_id)
        third = [step["function_id"] for step in steps][2]
        fork = await DBOS.fork_workflow_async(first.workflow_id, third)
        return float(await fork.get_result() == ["a", "b", "c"])
    finally:
        ORDER[:] = ["a", "b"]


async def send_recv_ms(url: str, count: int) -> float:
    """Median latency (ms) of a message sent through a ``DBOSClient`` (a connection of its own,
    as another process's) to a workflow waiting in ``recv``."""
    handle = await DBOS.start_workflow_async(receiver, count)
    await asyncio.sleep(0.5)  # the receiver is waiting
    client = DBOSClient(system_database_url=url)
    try:
        for _ in range(count):
            await asyncio.to_thread(client.send, handle.workflow_id, time.perf_counter(), "command")
            await asyncio.sleep(0.2)
    finally:
        client.destroy()
    return statistics.median(await handle.get_result()) * 1000


async def measure(url: str, steps: int, workflows: int) -> dict[str, float]:
    out: dict[str, float] = {}
    started = time.perf_counter()
    await (await DBOS.start_workflow_async(many_steps, steps)).get_result()
    out["dbos_step_ms"] = (time.perf_counter() - started) * 1000 / max(steps, 1)
    started = time.perf_counter()
    for _ in range(workflows):
        await (await DBOS.start_workflow_async(many_steps, 0)).get_result()
    out["dbos_workflow_ms"] = (time.perf_counter() - started) * 1000 / workflows
    LOOPS.clear()
    queue = await DBOS.register_queue_async("bench_tasks", worker_concurrency=8, polling_interval_sec=0.05)
    started = time.perf_counter()
    handles = [await queue.enqueue_async(many_steps, 0) for _ in range(workflows)]
    for handle in handles:
        await handle.get_result()
    out["dbos_queued_workflow_ms"] = (time.perf_counter() - started) * 1000 / workflows
    out["dbos_on_host_loop"] = float(LOOPS == {id(asyncio.get_running_loop())})
    out["dbos_send_recv_ms"] = await send_recv_ms(url, 10)
    out["dbos_replays_by_position"] = await replays_by_position()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="")
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--workflows", type=int, default=20)
    parser.add_argument(
        "--sqlite-default", action="store_true", help="DBOS's own SQLite engine (rollback journal), not WAL"
    )
    args = parser.parse_args()
    folder = tempfile.mkdtemp(prefix="dbos-bench-")
    url = args.url or f"sqlite:///{Path(folder) / 'dbos.sqlite3'}"
    results: dict[str, Any] = {}
    loop = asyncio.new_event_loop()
    ready = threading.Event()

    def run_loop() -> None:
        asyncio.set_event_loop(loop)
        loop.call_soon(ready.set)
        loop.run_forever()

    threading.Thread(target=run_loop, daemon=True).start()
    ready.wait()

    async def launch() -> None:
        config: DBOSConfig = engine_config("bench", url)
        if args.sqlite_default:
            config = {"name": "teamclaw-bench", "system_database_url": url, "executor_id": "bench"}
        started = time.perf_counter()
        DBOS(config=config)
        # launch() blocks on the database: from the loop's thread, so DBOS adopts that loop
        DBOS.launch()
        results["dbos_launch_ms"] = (time.perf_counter() - started) * 1000

    asyncio.run_coroutine_threadsafe(launch(), loop).result(60)
    results.update(asyncio.run_coroutine_threadsafe(measure(url, args.steps, args.workflows), loop).result(600))
    DBOS.destroy()
    loop.call_soon_threadsafe(loop.stop)
    for name, value in results.items():
        print(f"{name} {value:.3f}")


if __name__ == "__main__":
    main()
