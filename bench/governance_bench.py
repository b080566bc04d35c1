"""Governance benchmark (issue 5): what-if over recorded traffic, matrix saves, export/import.

Runs against a throw-away SQLite database in a temporary data folder and prints figures:

    .venv/bin/python bench/governance_bench.py [--messages 100000]

Figures are medians of repeated runs, in milliseconds, on whatever machine runs it.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def median_ms(fn, runs: int) -> float:
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=100_000, help="recorded invoke_request rows")
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()

    os.environ["TEAMCLAW_DATA_DIR"] = tempfile.mkdtemp(prefix="teamclaw-bench-")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "teamclaw.settings")
    os.environ["TEAMCLAW_RUNTIME_AUTOSTART"] = "0"
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from capabilities.matrices import INVOKE, matrix_document, save_matrix
    from capabilities.safe_yaml import load_document
    from monitoring.models import Message
    from monitoring.whatif import DAY_MS, invoke_what_if, tool_what_if
    from team.builtin import load_builtin
    from team.config_export import dump, export_document
    from team.config_import import import_config

    load_builtin()
    pairs = [("coderA", "dba", "schema_query"), ("main", "pm", "prd_writing"), ("pm", "designer", "ui_design")]
    pairs += [("coderB", "devops", "deployment_config"), ("coderB", "architect", "api_design")]
    now = int(time.time() * 1000)
    rng = random.Random(5)
    started = time.perf_counter()
    batch = []
    for i in range(args.messages):
        caller, callee, capability = rng.choice(pairs)
        batch.append(
            Message(
                id=f"b{i}",
                seq=i,
                type="invoke_request",
                from_role=caller,
                to_role=callee,
                capability_id=capability,
                task_id=f"t{i % 500}",
                payload={},
                priority="normal",
                ttl_ms=60_000,
                timestamp_ms=now - rng.randrange(10 * DAY_MS),
                status=rng.choice(["delivered"] * 9 + ["denied"]),
                reason="",
            )
        )
        if len(batch) == 5000:
            Message.objects.bulk_create(batch)
            batch = []
    Message.objects.bulk_create(batch)
    print(f"recorded {args.messages:,} invoke_request messages in {time.perf_counter() - started:.1f} s")

    staged = {("coderA", "dba"): False, ("pm", "dba"): True}
    staff = get_user_model().objects.create_user("bench-staff", is_staff=True)
    report = invoke_what_if(None, staged, 7, viewer=staff)
    took = median_ms(lambda: invoke_what_if(None, staged, 7, viewer=staff), args.runs)
    print(f"what-if, invoke matrix, 2 cells, 7 days: {took:.1f} ms (judged {report['considered']:,} invokes)")
    tools = {("dba", "database"): "confirm", ("devops", "deployment"): "deny"}
    took = median_ms(lambda: tool_what_if(None, tools, 7, viewer=staff), args.runs)
    print(f"what-if, tool matrix, 2 cells, 7 days: {took:.1f} ms")
    took = median_ms(lambda: invoke_what_if(None, staged, 90, viewer=staff), args.runs)
    print(f"what-if, invoke matrix, 90 days: {took:.1f} ms")

    print(f"invoke matrix document (GET): {median_ms(lambda: matrix_document(INVOKE), args.runs):.1f} ms")
    state = {"value": True}

    def toggle() -> None:
        state["value"] = not state["value"]
        version = matrix_document(INVOKE)["version"]
        save_matrix(INVOKE, project=None, version=version, matrix={"pm": {"dba": state["value"]}})

    print(f"matrix save (load + compare-and-swap + audit): {median_ms(toggle, args.runs):.1f} ms")

    text = dump(export_document(None, history=True), "yaml")
    print(
        f"export (global, YAML, with history): {median_ms(lambda: dump(export_document(None, True)), args.runs):.1f} ms"
        f", {len(text.encode()) / 1024:.0f} KiB"
    )
    print(f"safe load of that document: {median_ms(lambda: load_document(text, 'yaml'), args.runs):.1f} ms")
    data = load_document(text, "yaml")
    print(
        f"import dry run (validate + apply + roll back): "
        f"{median_ms(lambda: import_config(data, dry_run=True), args.runs):.1f} ms"
    )
    result = import_config(data, dry_run=False)
    print(f"re-import of the export: {len(result.changes)} changes, applied={result.applied}")


if __name__ == "__main__":
    main()
