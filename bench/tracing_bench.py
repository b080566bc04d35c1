"""What the OpenTelemetry traces (``monitoring.tracing``) cost per invoke.

Run with ``.venv/bin/python bench/tracing_bench.py [--n N] [--rounds R]`` (also in ``make bench``).
Prints one ``name value`` line per figure. One process, one event loop; N sequential invokes
``a -> b echo`` through the runtime's full path (matrix, schemas, routing, mailbox, the
offline executor with its estimated tokens, contexts, snapshots), no database sink, so the
difference is the tracing alone:

- ``untraced_us_per_invoke``: no OTLP endpoint set, so no ``TraceSink`` at all (what every
  process without ``OTEL_EXPORTER_OTLP_ENDPOINT`` runs; the only check is at host start);
- ``traced_us_per_invoke``: a ``TraceSink`` built by ``start_tracing`` with its real
  ``BatchSpanProcessor`` and OTLP/HTTP protobuf exporter, posting to an OTLP receiver in
  another OS process (``tests/otlp_receiver.py``); ``tracing_overhead_us_per_invoke`` is the
  difference (median of R alternating rounds of each);
- ``spans_only_us_per_invoke``: the same ``TraceSink`` and batch processor with an exporter
  that discards the batches: building the spans, without encoding and posting them (the
  difference to ``traced_us_per_invoke`` is the export thread competing for the interpreter);
- ``spans_per_invoke``, ``spans_received`` / ``spans_expected`` / ``spans_lost``: every
  span reached the receiver once the sink was closed (the batch processor drops spans only
  when its queue of 2,048 is full);
- ``load_average_1m``: the machine's load when it finished (the per-invoke times scale with it).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

RECEIVER = """
import sys, time
from tests.otlp_receiver import OtlpReceiver
with OtlpReceiver() as receiver:
    print(receiver.url, flush=True)
    for line in sys.stdin:  # each line asks for the span count so far
        print(len(receiver.spans), flush=True)
"""


class DiscardingExporter:
    """A span exporter that drops every batch (to time span building alone)."""

    def export(self, spans) -> object:
        from opentelemetry.sdk.trace.export import SpanExportResult

        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        pass

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


def setup_django(data_dir: str) -> None:
    os.environ["TEAMCLAW_DATA_DIR"] = data_dir
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "teamclaw.settings")
    for name in ("DATABASE_URL", "REDIS_URL", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_SDK_DISABLED"):
        os.environ.pop(name, None)
    import django

    django.setup()


def report(name: str, value: float) -> None:
    print(f"{name} {value:.1f}" if isinstance(value, float) else f"{name} {value}", flush=True)


async def timed_invokes(sinks: list, n: int) -> float:
    """Seconds per invoke over ``n`` sequential invokes in one task (after a warm-up)."""
    from teamclaw.runtime import InvokeRequest, Runtime, TaskStatus
    from tests.factories import small_snapshot

    runtime = Runtime(snapshot=small_snapshot(), sinks=sinks)
    request = InvokeRequest("echo", {"text": "hello"}, target_role="b")
    try:
        task = await runtime.begin_task(entry_role="a", token_budget=10**9, description="benchmark")
        for _ in range(100):
            await runtime.invoke(request, from_role="a", task_id=task.task_id)
        started = time.perf_counter()
        for _ in range(n):
            result = await runtime.invoke(request, from_role="a", task_id=task.task_id)
            if not result.success:
                raise SystemExit(f"invoke failed: {result.error}")
        elapsed = time.perf_counter() - started
        runtime.end_task(task.task_id, TaskStatus.COMPLETED)
    finally:
        await runtime.stop()
    return elapsed / n


def main(n: int, rounds: int) -> None:
    with tempfile.TemporaryDirectory(prefix="teamclaw-tracing-bench-") as data_dir:
        setup_django(data_dir)
        from monitoring.tracing import start_tracing

        receiver = subprocess.Popen(
            [sys.executable, "-c", RECEIVER],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert receiver.stdin is not None and receiver.stdout is not None
        try:
            url = receiver.stdout.readline().strip()
            os.environ.pop("OTEL_EXPORTER_OTLP_ENDPOINT", None)
            if start_tracing("worker") is not None:
                raise SystemExit("tracing is on without an endpoint")
            os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"] = url
            untraced, traced, spans_only = [], [], []
            expected = 0
            for _ in range(rounds):
                untraced.append(asyncio.run(timed_invokes([], n)))
                sink = start_tracing("worker")
                assert sink is not None
                traced.append(asyncio.run(timed_invokes([sink], n)))
                sink.close()
                expected += n + 100 + 1  # one span per invoke (warm-up included) and the task's root
                building = start_tracing("worker", exporter=DiscardingExporter())  # type: ignore[arg-type]
                assert building is not None
                spans_only.append(asyncio.run(timed_invokes([building], n)))
                building.close()
            receiver.stdin.write("count\n")
            receiver.stdin.flush()
            received = int(receiver.stdout.readline())
        finally:
            receiver.terminate()
            receiver.wait(10)
    untraced_us = statistics.median(untraced) * 1e6
    traced_us = statistics.median(traced) * 1e6
    report("invokes_per_round", n)
    report("rounds", rounds)
    report("untraced_us_per_invoke", untraced_us)
    report("spans_only_us_per_invoke", statistics.median(spans_only) * 1e6)
    report("traced_us_per_invoke", traced_us)
    report("tracing_overhead_us_per_invoke", traced_us - untraced_us)
    report("tracing_overhead_percent", 100 * (traced_us - untraced_us) / untraced_us)
    report("spans_per_invoke", 1)
    report("spans_expected", expected)
    report("spans_received", received)
    report("spans_lost", expected - received)
    report("load_average_1m", os.getloadavg()[0])  # the figures above are only comparable at a like load


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=3000, help="invokes per round")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of each, alternating")
    args = parser.parse_args()
    main(args.n, args.rounds)
