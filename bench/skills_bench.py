"""Skills benchmarks (seed 003): prints figures, asserts nothing.

    .venv/bin/python bench/skills_bench.py [--calls 20000]

1. reading + validating a large skill-index.yaml (200 capabilities, 8 params each);
2. ``capability_metrics`` over N recorded invoke request/response pairs (SQLite);
3. the ``provider`` executor's overhead per invoke against a plain ``offline`` card, and a
   call that fails over once, on an in-memory runtime (no database);
4. validating a 100-step workflow against the registry.

Runs in a throw-away data directory (its own SQLite file), never the real one.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def setup_django() -> None:
    os.environ["TEAMCLAW_DATA_DIR"] = tempfile.mkdtemp(prefix="teamclaw-bench-")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "teamclaw.settings")
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)
    call_command("load_builtin", verbosity=0)


def timed(fn, repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        out.append((time.perf_counter() - start) * 1000)
    return out


def report(label: str, samples_ms: list[float], unit: str = "ms") -> None:
    print(f"{label:<58} median {statistics.median(samples_ms):9.3f} {unit}   min {min(samples_ms):9.3f} {unit}")


def big_skill(capabilities: int = 200, params: int = 8) -> str:
    lines = ["skill:", "  id: big-skill", "  name: Big", "  version: 1.0.0", "  capabilities:"]
    for c in range(capabilities):
        lines += [
            f"    - name: cap{c}",
            "      type: EXPOSED",
            f"      description: capability {c}",
            "      inputParameters:",
        ]
        lines += [f"        - {{name: p{p}, type: string, required: {str(p % 2 == 0).lower()}}}" for p in range(params)]
        lines += ["      outputParameters:", "        - {name: out, type: string}"]
    return "\n".join(lines) + "\n"


def bench_parse() -> None:
    from capabilities.skill_index import capability_cards, read_skill_index

    text = big_skill()
    print(f"skill-index.yaml: {len(text.encode()):,} bytes, 200 capabilities")
    report("read + validate + derive cards", timed(lambda: capability_cards(read_skill_index(text)), 5))


def bench_metrics(calls: int) -> None:
    from monitoring.metrics import capability_metrics
    from monitoring.models import Message, Task

    Task.objects.create(id="bench", kind="invoke")
    rows = []
    base = 1_700_000_000_000
    for i in range(calls):
        corr = f"c{i}:1"
        common = {"task_id": "bench", "capability_id": "bench_cap", "correlation_id": corr, "priority": "normal"}
        rows.append(
            Message(
                id=f"q{i}",
                seq=2 * i,
                type="invoke_request",
                timestamp_ms=base + i * 10,
                ttl_ms=60000,
                status="delivered",
                payload={},
                **common,
            )
        )
        ok = i % 20
        rows.append(
            Message(
                id=f"r{i}",
                seq=2 * i + 1,
                type="invoke_response" if ok else "invoke_error",
                timestamp_ms=base + i * 10 + (i % 97),
                ttl_ms=0,
                status="delivered",
                payload={} if ok else {"error": {"code": "timeout"}},
                **common,
            )
        )
    Message.objects.bulk_create(rows, batch_size=2000)
    samples = timed(lambda: capability_metrics("bench_cap"), 5)
    report(f"capability_metrics over {calls:,} invokes (all time)", samples)
    samples = timed(lambda: capability_metrics("bench_cap", since_ms=base + (calls - 6000) * 10), 5)
    report("capability_metrics, last 1 minute window (6,000 invokes)", samples)
    print(f"  -> {capability_metrics('bench_cap', since_ms=base)['successRate']} success rate (expected 0.95)")


async def _invokes(runtime, address: str, n: int) -> list[float]:
    from teamclaw.runtime import InvokeRequest

    out = []
    for _ in range(n):
        start = time.perf_counter()
        result = await runtime.invoke(InvokeRequest(address, {"q": "x"}), from_role="a")
        out.append((time.perf_counter() - start) * 1000)
        assert result.success, result.error
    return out


def bench_provider(n: int = 2000) -> None:
    from teamclaw.runtime import (
        AgentFailure,
        CardSpec,
        ConfigSnapshot,
        ErrorCode,
        ExecutorRegistry,
        OfflineExecutor,
        RoleSpec,
        Runtime,
    )
    from teamclaw.runtime.executors.provider import ProviderExecutor

    class Down:
        kind = "down"

        async def execute(self, call):
            raise AgentFailure(ErrorCode.UNAVAILABLE, "down")

    schema_in = {"type": "object", "properties": {"q": {"type": "string"}}}
    schema_out = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}

    def card(cid, executor, impls=None):
        config = {"implementations": impls} if impls else {}
        return CardSpec(
            cid,
            cid,
            cid,
            "execution",
            schema_in,
            schema_out,
            "1.0.0",
            ("b",),
            executor=executor,
            executor_config=config,
            skill_id="bench",
            address=f"cap://bench/{cid}",
        )

    impl = [{"provider": "P1", "priority": 100, "executor": "offline"}]
    failing = [{"provider": "F", "priority": 100, "executor": "down"}, {"provider": "P", "priority": 1}]
    snapshot = ConfigSnapshot.build(
        version=1,
        roles=[RoleSpec("a", "A"), RoleSpec("b", "B")],
        cards=[card("plain", "offline"), card("prov", "provider", impl), card("fail", "provider", failing)],
        invoke_allowed=[("a", "b")],
        tool_modes={},
    )
    provider = ProviderExecutor(cooldown_s=0)
    registry = ExecutorRegistry({"offline": OfflineExecutor(charge_tokens=False), "provider": provider, "down": Down()})

    async def main():
        runtime = Runtime(snapshot=snapshot, executors=registry, backoff_base_s=0)
        await _invokes(runtime, "cap://bench/plain", 200)  # warm up
        plain = await _invokes(runtime, "cap://bench/plain", n)
        prov = await _invokes(runtime, "cap://bench/prov", n)
        fail = await _invokes(runtime, "cap://bench/fail", n // 4)
        await runtime.stop()
        return plain, prov, fail

    plain, prov, fail = asyncio.run(main())
    report(f"invoke, offline card ({n:,} sequential)", plain)
    report("invoke, provider card (1 implementation)", prov)
    report("invoke, provider card failing over once (alert raised)", fail)
    print(f"  -> provider overhead {statistics.median(prov) - statistics.median(plain):+.3f} ms per invoke")


def bench_workflow() -> None:
    from capabilities.lifecycle import activate_skill, discover_skill, install_skill
    from capabilities.workflow_spec import read_workflow
    from team.snapshot import build_snapshot

    discover_skill(big_skill(10, 2))
    install_skill("big-skill", {})
    activate_skill("big-skill", "devops")
    steps = ["orchestration:", "  id: long-flow", "  name: Long", "  steps:"]
    for i in range(100):
        steps += [
            f"    - id: s{i}",
            f"      capability: cap://big-skill/cap{i % 10}",
            "      input:",
            "        p0: ${userInput.q}" if i == 0 else f"        p0: ${{s{i - 1}.out}}",
        ]
    text = "\n".join(steps) + "\n"
    snapshot = build_snapshot()
    report("validate a 100-step workflow", timed(lambda: read_workflow(text, snapshot), 5))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=20_000, help="recorded invokes for the metrics bench")
    args = parser.parse_args()
    setup_django()
    bench_parse()
    bench_metrics(args.calls)
    bench_provider()
    bench_workflow()


if __name__ == "__main__":
    main()
