"""Runtime benchmark: TeamClaw invoke vs autogen-core send_message vs a bare asyncio queue.

Run with ``make bench`` (or ``.venv/bin/python bench/runtime_bench.py [--n N] [--profile]``).
Prints one ``name value`` line per figure. Everything runs in one process and one event
loop, against a throw-away SQLite database in a temporary data folder:

- ``teamclaw_invoke_per_s``: N sequential invokes ``coderA -> dba schema_query`` through the
  full path (effective invoke matrix, input and output schema validation, routing, mailbox,
  the offline executor with token accounting and budget checks, contexts) with the recorder
  writing every message, context and snapshot to the database, and the dba's instance slots
  taken in the database as the embedded server takes them; the clock stops when the
  recorder has committed it all. The dba answers with a fixed-shape result, like the
  autogen agent and the bare queue below.
- ``teamclaw_p50_us_conc64`` / ``teamclaw_p99_us_conc64``: per-invoke latency with 64
  concurrent callers (same path), and their throughput.
- ``teamclaw_open_p50_us`` / ``teamclaw_open_p99_us`` (and ``autogen_open_*``): latency with
  64 callers under an offered load of ``--open-rate`` invokes/s in all (default 2,000/s,
  below both runtimes' capacity here), each caller sending on its own fixed schedule and
  each latency counted from the moment the schedule said to send (so a late send counts as
  late). The closed-loop figures above keep 64 calls always in flight, so their mean latency
  is 64 / throughput by Little's law (3 ms would need over 21,000 invokes/s); these say
  what one invoke costs a caller when the runtime is busy but not saturated.
- ``teamclaw_spawn_in_slot_p50_us``: taking an instance slot row in the database and
  spawning in it (then retiring the instance, which frees the row): what the first call of a
  role pays once per instance for the role limit across runtime workers (issue 13).
- ``autogen_send_message_per_s``: autogen-core's ``SingleThreadedAgentRuntime.send_message``
  request/response to an agent returning the same result.
- ``bare_asyncio_invoke_per_s``: an asyncio queue + future doing the same request/response.
- ``recorded_messages`` / ``emitted_messages`` / ``lost_messages``: what reached the database.

The TeamClaw figures are measured once per recorder (``--recorder``, default both): ``thread.*``
with the writer thread in this process, ``process.*`` with the recorder process
(``monitoring.recorder_process``: this process only pickles the events, a child writes them);
each ratio is against the same autogen-core run. The runtime has the server's knowledge
retriever; the benchmark's database holds no knowledge source, so after its first look (a
database query on a worker thread) the retriever answers on the loop that there is nothing
to search, and no retrieval is recorded, as in a team without documents
(``knowledge.retrieval``); ``--no-knowledge`` leaves the retriever out.

Targets (issue 3, issue 13 item 5): teamclaw >= 2x autogen with recording flushed, p99 <= 3 ms
at 64 callers, nothing lost (both the closed-loop and the open-loop p99 are printed). The
process runs under the server's collector policy
(``teamclaw.heap.settle_heap``) unless ``--default-gc``.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import logging
import os
import pstats
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from autogen_core import AgentId, MessageContext, RoutedAgent, SingleThreadedAgentRuntime, message_handler

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


@dataclass
class SchemaQuery:
    table: str


@dataclass
class Columns:
    columns: list[str]


class Dba(RoutedAgent):
    """The autogen-core agent answering like TeamClaw's dba (no validation, no recording)."""

    def __init__(self) -> None:
        super().__init__("dba")

    @message_handler
    async def on_query(self, message: SchemaQuery, ctx: MessageContext) -> Columns:
        return Columns([f"{message.table}.id"])  # same answer as TeamClaw's dba in this benchmark


def setup_django(data_dir: str) -> None:
    os.environ["TEAMCLAW_DATA_DIR"] = data_dir
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "teamclaw.settings")
    for name in ("DATABASE_URL", "REDIS_URL"):
        os.environ.pop(name, None)
    import django
    from django.core.management import call_command

    django.setup()
    # autogen-core logs every message at INFO; the comparison is about the runtimes, not logging.
    for name in ("autogen_core", "autogen_core.events", "autogen_core.trace"):
        logging.getLogger(name).setLevel(logging.WARNING)
    call_command("migrate", verbosity=0)
    call_command("load_builtin", verbosity=0)


async def schema_query_answer(call) -> dict:
    table = call.params["table"]
    return {"table": table, "columns": [{"name": f"{table}.id", "type": "integer", "nullable": False}]}


class CountingSink:
    """Counts distinct messages the runtime emitted (to compare with what was recorded)."""

    def __init__(self) -> None:
        self.ids: set[str] = set()

    def publish(self, event) -> None:
        if event.kind == "message":
            self.ids.add(event.message.id)


def child_cpu_s(recorder) -> float:
    """CPU seconds (user + system) the recorder's child process has used so far (Linux
    /proc), 0 for the thread recorder."""
    process = getattr(recorder, "process", None)
    if process is None:
        return 0.0
    fields = Path(f"/proc/{process.pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def open_loop(send, callers: int, rate_per_s: float, count: int) -> list[float]:
    """Latencies (s) of ``count`` awaited ``send()`` calls from ``callers`` callers offering
    ``rate_per_s`` calls/s in all: caller i sends at ``start + (i + k * callers) / rate``
    (k = 0, 1, ...), or at once when it is already late, and each latency runs from that
    planned time to the answer."""
    latencies: list[float] = []
    start = time.perf_counter() + 0.01

    async def caller(i: int) -> None:
        for k in range(max(1, count // callers)):
            planned = start + (i + k * callers) / rate_per_s
            delay = planned - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            await send()
            latencies.append(time.perf_counter() - planned)

    await asyncio.gather(*(caller(i) for i in range(callers)))
    latencies.sort()
    return latencies


def percentile(sorted_values: list[float], fraction: float) -> float:
    """The ``fraction`` (0..1) percentile of ascending ``sorted_values``."""
    return sorted_values[max(0, int(len(sorted_values) * fraction) - 1)]


def report(name: str, value: float) -> None:
    print(f"{name} {value:.1f}" if isinstance(value, float) else f"{name} {value}", flush=True)


async def teamclaw_figures(
    n: int, callers: int, profile: bool, mode: str, knowledge: bool, open_rate: float
) -> dict[str, float]:
    from django.conf import settings

    from monitoring.models import Message
    from monitoring.recorder_process import new_recorder
    from runs.dispatch import new_worker_id
    from runs.host import build_runtime
    from runs.instance_slots import DatabaseSlots
    from team.snapshot import build_snapshot
    from teamclaw.runtime import InvokeRequest, TaskStatus

    snapshot = await asyncio.to_thread(build_snapshot, None)
    await asyncio.to_thread(Message.objects.all().delete)  # each mode counts its own messages
    recorder = new_recorder(mode)
    recorder.start()
    counter = CountingSink()
    # Instance slots in the database, as the embedded server takes them (runs.instance_slots).
    slots = DatabaseSlots(new_worker_id(), lease_s=settings.TEAMCLAW["LEASE_S"], retry_s=0.25)
    overrides = {} if knowledge else {"knowledge_retriever": None}
    runtime = build_runtime(
        [recorder, counter], snapshot=snapshot, config_source=None, instance_slots=slots, **overrides
    )
    # The same answer the autogen agent and the bare queue give; it still runs through the
    # offline executor (estimated tokens charged against the task budget).
    offline = runtime.executors.get("offline")
    assert offline is not None
    offline.register("schema_query", schema_query_answer)
    request = InvokeRequest("schema_query", {"table": "users"}, target_role="dba")
    figures: dict[str, float] = {}
    try:
        task = await runtime.begin_task(entry_role="coderA", token_budget=10**9, description="benchmark")
        for _ in range(200):  # warm up: instance, validators, caches
            await runtime.invoke(request, from_role="coderA", task_id=task.task_id)
        await asyncio.to_thread(recorder.flush)

        profiler = cProfile.Profile() if profile else None
        if profiler:
            profiler.enable()
        started = time.perf_counter()
        cpu_started, child_started = time.process_time(), child_cpu_s(recorder)
        for _ in range(n):
            result = await runtime.invoke(request, from_role="coderA", task_id=task.task_id)
            if not result.success:
                raise SystemExit(f"invoke failed: {result.error}")
        invokes_done = time.perf_counter()
        await asyncio.to_thread(recorder.flush)
        elapsed = time.perf_counter() - started
        cpu, child_cpu = time.process_time() - cpu_started, child_cpu_s(recorder) - child_started
        if profiler:
            profiler.disable()
        figures["teamclaw_invoke_per_s"] = n / elapsed
        figures["teamclaw_invoke_per_s_excluding_final_flush"] = n / (invokes_done - started)
        # CPU time per invoke (less sensitive to other load on the machine than wall time):
        # the runtime's process, all its threads (the writer thread too in thread mode), and
        # the recorder's child process (process mode).
        figures["teamclaw_cpu_us_per_invoke"] = cpu / n * 1e6
        figures["recorder_child_cpu_us_per_invoke"] = child_cpu / n * 1e6

        latencies: list[float] = []

        async def caller(count: int) -> None:
            for _ in range(count):
                t0 = time.perf_counter()
                result = await runtime.invoke(request, from_role="coderA", task_id=task.task_id)
                latencies.append(time.perf_counter() - t0)
                if not result.success:
                    raise SystemExit(f"invoke failed: {result.error}")

        per_caller = max(1, n // callers)
        started = time.perf_counter()
        await asyncio.gather(*(caller(per_caller) for _ in range(callers)))
        await asyncio.to_thread(recorder.flush)
        elapsed = time.perf_counter() - started
        latencies.sort()
        figures["teamclaw_invoke_per_s_conc64"] = len(latencies) / elapsed
        figures["teamclaw_p50_us_conc64"] = statistics.median(latencies) * 1e6
        figures["teamclaw_p99_us_conc64"] = percentile(latencies, 0.99) * 1e6
        figures["teamclaw_instances_dba"] = float(len(runtime.pool.alive("dba")))

        async def send_one() -> None:
            result = await runtime.invoke(request, from_role="coderA", task_id=task.task_id)
            if not result.success:
                raise SystemExit(f"invoke failed: {result.error}")

        await asyncio.to_thread(recorder.flush)
        opened = await open_loop(send_one, callers, open_rate, max(callers, n // 4))
        await asyncio.to_thread(recorder.flush)
        figures["teamclaw_open_p50_us"] = statistics.median(opened) * 1e6
        figures["teamclaw_open_p99_us"] = percentile(opened, 0.99) * 1e6

        # What a spawn pays for its slot row (runs.instance_slots): take one, spawn, retire.
        spawn_times = []
        for _ in range(50):
            began = time.perf_counter()
            fresh = await runtime.spawn_in_slot("pm", 4)
            spawn_times.append(time.perf_counter() - began)
            assert fresh is not None
            runtime.terminate(fresh.instance_id, "benchmark")
        figures["teamclaw_spawn_in_slot_p50_us"] = statistics.median(spawn_times) * 1e6

        runtime.end_task(task.task_id, TaskStatus.COMPLETED)
        await asyncio.to_thread(recorder.flush)
        recorded = await asyncio.to_thread(Message.objects.count)
        figures["emitted_messages"] = float(len(counter.ids))
        figures["recorded_messages"] = float(recorded)
        figures["lost_messages"] = float(len(counter.ids) - recorded)
        figures["recorder_failed_batches"] = float(recorder.failed_batches)
        if profiler:
            stats = pstats.Stats(profiler)
            stats.sort_stats(os.environ.get("BENCH_PROFILE_SORT", "tottime"))
            print("# profile of the sequential run (top 25 by own time)")
            stats.print_stats(25)
    finally:
        await runtime.stop()
        await asyncio.to_thread(recorder.stop)
        await asyncio.to_thread(slots.close)
    return figures


async def autogen_figures(n: int, callers: int, open_rate: float) -> dict[str, float]:
    runtime = SingleThreadedAgentRuntime()
    await Dba.register(runtime, "dba", Dba)
    runtime.start()
    target = AgentId("dba", "default")
    for _ in range(200):
        await runtime.send_message(SchemaQuery("users"), target)
    started = time.perf_counter()
    cpu_started = time.process_time()
    for _ in range(n):
        await runtime.send_message(SchemaQuery("users"), target)
    sequential = n / (time.perf_counter() - started)
    cpu_us = (time.process_time() - cpu_started) / n * 1e6
    latencies: list[float] = []

    async def caller(count: int) -> None:
        for _ in range(count):
            t0 = time.perf_counter()
            await runtime.send_message(SchemaQuery("users"), target)
            latencies.append(time.perf_counter() - t0)

    started = time.perf_counter()
    await asyncio.gather(*(caller(max(1, n // callers)) for _ in range(callers)))
    concurrent = len(latencies) / (time.perf_counter() - started)
    latencies.sort()

    async def send_one() -> None:
        await runtime.send_message(SchemaQuery("users"), target)

    opened = await open_loop(send_one, callers, open_rate, max(callers, n // 4))
    await runtime.stop()
    return {
        "autogen_send_message_per_s": sequential,
        "autogen_cpu_us_per_send": cpu_us,
        "autogen_send_message_per_s_conc64": concurrent,
        "autogen_p99_us_conc64": percentile(latencies, 0.99) * 1e6,
        "autogen_open_p50_us": statistics.median(opened) * 1e6,
        "autogen_open_p99_us": percentile(opened, 0.99) * 1e6,
    }


async def bare_figures(n: int) -> dict[str, float]:
    queue: asyncio.Queue[tuple[asyncio.Future[dict[str, list[str]]], dict[str, str]]] = asyncio.Queue()

    async def worker() -> None:
        while True:
            future, params = await queue.get()
            future.set_result({"columns": [f"{params['table']}.id"]})

    task = asyncio.create_task(worker())
    loop = asyncio.get_running_loop()
    started = time.perf_counter()
    for _ in range(n):
        future = loop.create_future()
        queue.put_nowait((future, {"table": "users"}))
        await future
    rate = n / (time.perf_counter() - started)
    task.cancel()
    return {"bare_asyncio_invoke_per_s": rate}


async def main(n: int, callers: int, profile: bool, modes: list[str], knowledge: bool, open_rate: float) -> None:
    figures: dict[str, float] = {}
    runs: dict[str, dict[str, float]] = {}
    for mode in modes:
        runs[mode] = await teamclaw_figures(n, callers, profile, mode, knowledge, open_rate)
    figures.update(await autogen_figures(n, callers, open_rate))
    figures.update(await bare_figures(n))
    report("invokes", n)
    report("knowledge_retrieval", "on" if knowledge else "off")
    report("open_rate_per_s", open_rate)
    for mode, own in runs.items():
        own["ratio_teamclaw_vs_autogen"] = own["teamclaw_invoke_per_s"] / figures["autogen_send_message_per_s"]
        own["ratio_teamclaw_vs_autogen_conc64"] = (
            own["teamclaw_invoke_per_s_conc64"] / figures["autogen_send_message_per_s_conc64"]
        )
        own["ratio_teamclaw_vs_bare_asyncio"] = own["teamclaw_invoke_per_s"] / figures["bare_asyncio_invoke_per_s"]
        # What the rates would be with the machine to themselves, by CPU time of the process
        # that runs the agents (the child's is on another core).
        own["ratio_teamclaw_vs_autogen_by_cpu"] = figures["autogen_cpu_us_per_send"] / own["teamclaw_cpu_us_per_invoke"]
        for name, value in own.items():
            report(f"{mode}.{name}", value)
    for name, value in figures.items():
        report(name, value)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20_000, help="invokes per measurement (default 20000)")
    parser.add_argument("--callers", type=int, default=64)
    parser.add_argument("--profile", action="store_true", help="print a cProfile of the sequential run")
    parser.add_argument(
        "--open-rate",
        type=float,
        default=2000.0,
        help="invokes/s offered in all by the callers of the open-loop latency figures (default 2000)",
    )
    parser.add_argument(
        "--gc-threshold",
        type=int,
        nargs=3,
        metavar=("G0", "G1", "G2"),
        help="gc.set_threshold for the run, after teamclaw.heap.settle_heap (the server's policy)",
    )
    parser.add_argument(
        "--default-gc",
        action="store_true",
        help="keep CPython's collector defaults instead of the server's policy (teamclaw.heap)",
    )
    parser.add_argument(
        "--switch-interval",
        type=float,
        default=None,
        help="sys.setswitchinterval (s) for the run: how long a thread keeps the GIL",
    )
    parser.add_argument(
        "--recorder",
        choices=["thread", "process", "both"],
        default="both",
        help="recorder mode(s) measured (TEAMCLAW_RECORDER; default both, thread first)",
    )
    parser.add_argument(
        "--no-knowledge",
        action="store_true",
        help="run without the knowledge retriever (its database query per capability call runs on a thread)",
    )
    args = parser.parse_args()
    if args.switch_interval:
        sys.setswitchinterval(args.switch_interval)
    with tempfile.TemporaryDirectory(prefix="teamclaw-bench-") as data_dir:
        setup_django(data_dir)
        if not args.default_gc:
            from teamclaw.heap import settle_heap

            settle_heap()  # what the server does when its runtime host starts
        if args.gc_threshold:
            import gc

            gc.set_threshold(*args.gc_threshold)
        modes = ["thread", "process"] if args.recorder == "both" else [args.recorder]
        asyncio.run(main(args.n, args.callers, args.profile, modes, not args.no_knowledge, args.open_rate))
