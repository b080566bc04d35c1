"""Waiting for the runtime in tests: poll the database after flushing the recorder."""

from __future__ import annotations

import time

from monitoring.models import Task


def wait_for_task(host, task_id: str, timeout: float = 60) -> Task:
    """Return the task once it is no longer running (recorder flushed), or fail the test."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        host.recorder.flush()
        task = Task.objects.get(pk=task_id)
        if task.status != "running":
            return task
        time.sleep(0.05)
    raise AssertionError(f"task {task_id} still running after {timeout} s")
