"""Reviews at once on one runtime worker (issue 28 item 3): prints figures, asserts nothing.

``.venv/bin/python bench/concurrency_bench.py [--reviews N] [--step-ms L]`` on a throw-away
SQLite database, with one real ``runtime_worker`` process (``--concurrency N + 1``). Every
agent step of the offline requirement review (seed 002) waits ``L`` ms first (the review's
``think_time_ms``, the paced demo): a model of fixed latency, without the network. (The
issue asks for an OpenAI-compatible fake server; the offline executor's fixed wait stands in
for it here, so the figures measure the runtime's scheduling, not a model's text.)

- ``review_1_s``: wall time of one review alone (queued to completed), built-in limits.
- ``reviews_n_s``: wall time of ``N`` reviews queued at once (the first queued to the last
  completed), built-in limits; ``reviews_n_vs_1_ratio`` is the ratio (the target: <= 1.5).
- ``critical_path_s``: the review's chain of dependent steps times ``L``. The number of steps
  on it is measured, not assumed: one review alone with every role's
  ``max_concurrent_instances`` raised to 64 (nothing waits for an instance), at ``L`` and
  at ``2L``; the difference of the two wall times over ``L`` is the steps on the chain.
- ``review_vs_critical_path_ratio``: ``review_1_s`` over ``critical_path_s`` (the target:
  <= 1.2).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

DOCUMENT = "# Shop {n}\n\nUsers buy books with a card.\n\n## Delivery\n\nOrders ship within two days.\n"


def report(name: str, value: float) -> None:
    print(f"{name} {value:.3f}", flush=True)


def setup(data_dir: str) -> dict[str, str]:
    """Django on a new SQLite database in ``data_dir`` (migrated, built-in team); the
    environment a worker process gets."""
    os.environ["TEAMCLAW_DATA_DIR"] = data_dir
    os.environ["TEAMCLAW_RUNTIME"] = "remote"  # this process queues; the worker runs
    os.environ["TEAMCLAW_EXECUTOR"] = "offline"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "teamclaw.settings")
    for name in ("DATABASE_URL", "REDIS_URL"):
        os.environ.pop(name, None)
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)
    call_command("load_builtin", verbosity=0)
    return {key: value for key, value in os.environ.items()}


def set_limits(limit: int | None) -> None:
    """Every role's global ``max_concurrent_instances``: ``limit``, or the built-in value (None)."""
    from capabilities.models import AgentRole, RoleConstraint

    for role in AgentRole.objects.all():
        RoleConstraint.objects.update_or_create(project=None, role=role, defaults={"max_concurrent_instances": limit})


def run_reviews(env: dict[str, str], count: int, step_ms: int) -> float:
    """Wall time (s) of ``count`` reviews queued at once on a new worker, from the first
    queued to the last completed. Raises SystemExit when one fails or all take over 600 s."""
    from monitoring.models import Task
    from runs.tasks import start_task

    worker = subprocess.Popen(
        [sys.executable, "manage.py", "runtime_worker", "--concurrency", str(count + 1)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        from runs.models import RuntimeWorker

        deadline = time.monotonic() + 120
        while not RuntimeWorker.objects.filter(pid=worker.pid).exists():  # started up: not timed
            if time.monotonic() > deadline:
                raise SystemExit("the runtime worker did not start within 120 s")
            time.sleep(0.1)
        started = time.monotonic()
        ids = [
            start_task(workflow="requirement_review", input_markdown=DOCUMENT.format(n=n), think_time_ms=step_ms).id
            for n in range(count)
        ]
        while (done := Task.objects.filter(pk__in=ids, status="completed").count()) < count:
            if Task.objects.filter(pk__in=ids, status__in=["failed", "terminated"]).exists():
                raise SystemExit(f"a review failed: {list(Task.objects.filter(pk__in=ids).values('status', 'error'))}")
            if time.monotonic() - started > 600:
                raise SystemExit(f"{done} of {count} reviews completed within 600 s")
            time.sleep(0.05)
        return time.monotonic() - started
    finally:
        worker.terminate()
        worker.wait(30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reviews", type=int, default=20)
    parser.add_argument("--step-ms", type=int, default=300)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="teamclaw-concurrency-") as data_dir:
        env = setup(data_dir)
        set_limits(64)
        free_1 = run_reviews(env, 1, args.step_ms)
        free_2 = run_reviews(env, 1, 2 * args.step_ms)
        steps = (free_2 - free_1) / (args.step_ms / 1000)
        critical_path = steps * args.step_ms / 1000
        set_limits(None)
        one = run_reviews(env, 1, args.step_ms)
        many = run_reviews(env, args.reviews, args.step_ms)
    report("critical_path_steps", steps)
    report("critical_path_s", critical_path)
    report("review_1_s", one)
    report(f"reviews_{args.reviews}_s", many)
    report("reviews_n_vs_1_ratio", many / one)
    report("review_vs_critical_path_ratio", one / critical_path)


if __name__ == "__main__":
    main()
