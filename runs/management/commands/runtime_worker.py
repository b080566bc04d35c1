"""``python manage.py runtime_worker [--concurrency N]``: a process that runs agents.

It claims queued tasks and tasks whose worker stopped (their lease expired), runs them,
renews their leases, and answers the commands and confirmations meant for them
(``runs.dispatch``; README "Scaling out"). Any number may run against one PostgreSQL database
(with ``REDIS_URL`` they are woken at once; without it they poll every 250 ms). SIGTERM or
Ctrl-C stops it cleanly: it takes no more work, and the tasks still running here are given
up at once so another worker resumes them (no waiting for the lease).
"""

from __future__ import annotations

import signal
import threading
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from runs.host import RuntimeHost


class Command(BaseCommand):
    help = "Run agents: claim queued and orphaned tasks, resume them, answer their commands."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--concurrency",
            type=int,
            default=settings.TEAMCLAW["WORKER_CONCURRENCY"],
            help="tasks run at once at most (default TEAMCLAW_WORKER_CONCURRENCY, 16)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        concurrency = options["concurrency"]
        if not 1 <= concurrency <= 1000:
            raise CommandError("--concurrency must be between 1 and 1000")
        stop = threading.Event()

        def request_stop(signum: int, frame: Any) -> None:
            stop.set()

        signal.signal(signal.SIGTERM, request_stop)
        signal.signal(signal.SIGINT, request_stop)
        host = RuntimeHost(name="worker", worker="worker", concurrency=concurrency).start()
        assert host.dispatcher is not None
        self.stdout.write(f"Runtime worker {host.dispatcher.id} running up to {concurrency} tasks at once.")
        self.stdout.flush()
        try:
            stop.wait()
        finally:
            running = len(host.dispatcher.running)
            host.stop()
            self.stdout.write(
                f"Runtime worker stopped; {running} running task(s) given up for another worker to resume."
                if running
                else "Runtime worker stopped."
            )
