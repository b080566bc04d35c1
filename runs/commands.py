"""Commands for a running task from any process (docs/architecture.md §3; README "Scaling out").

An operator's instruction, a manual snapshot or a cancel is for a task, wherever it runs: in
this process's runtime (the embedded default: applied at once) or in another worker (written
as a ``runs.RuntimeCommand``; its owner takes it on its next poll, at most 250 ms, or at
once when Redis wakes it, and writes the answer this process waits for).
"""

from __future__ import annotations

import time
from typing import Any

from django.utils import timezone

from monitoring.models import Task
from runs.dispatch import Dispatcher, publish_wake
from runs.host import current_host
from runs.models import RuntimeCommand
from teamclaw.errors import DomainError

ANSWER_TIMEOUT_S = 10.0
"""How long a command waits for the task's worker to answer."""
ANSWER_POLL_S = 0.05


class CommandRefused(DomainError):
    """The task's worker refused the command or none answered; ``status`` is the HTTP status
    that fits (409: the task or context is no longer running; 503: no worker answered)."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message, status=status)


async def _apply(dispatcher: Dispatcher, kind: str, task_id: str, payload: dict[str, Any]) -> Any:
    return dispatcher.apply(kind, task_id, payload)


def send_command(task_id: str, kind: str, payload: dict[str, Any], timeout_s: float = ANSWER_TIMEOUT_S) -> Any:
    """Apply command ``kind`` (``instruction``, ``snapshot``, ``cancel``) with ``payload`` to
    running task ``task_id``, wherever it runs; returns the runtime's answer once the record
    holds what it changed.

    Raises CommandRefused: 409 when the task (or the context named) is not running, 503 when
    the task's worker did not answer within ``timeout_s`` seconds.
    """
    host = current_host()
    dispatcher = host.dispatcher if host is not None else None
    owner = Task.objects.filter(pk=task_id).values_list("owner", flat=True).first()
    if host is not None and dispatcher is not None and owner == dispatcher.id:
        result, error = host.call(_apply(dispatcher, kind, task_id, payload), timeout=timeout_s)
        host.recorder.flush(timeout_s)
        if error is not None:
            raise CommandRefused(error["detail"], error["status"])
        return result
    command = RuntimeCommand.objects.create(task_id=task_id, kind=kind, payload=payload)
    publish_wake("command", task_id)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        time.sleep(ANSWER_POLL_S)
        command.refresh_from_db(fields=["status", "result", "error", "taken_by"])
        if command.status == "done":
            return command.result
        if command.status == "failed":
            error = command.error or {}
            raise CommandRefused(error.get("detail", "the worker refused it"), int(error.get("status", 409)))
    # Nobody took it: withdraw it, so it is not applied later behind the operator's back.
    if RuntimeCommand.objects.filter(pk=command.pk, taken_by="").update(
        status="failed",
        error={"status": 503, "detail": "no worker answered"},
        done_at=timezone.now(),
    ):
        raise CommandRefused(f"the worker running task {task_id} did not answer within {timeout_s:g} s", 503)
    raise CommandRefused(f"the worker running task {task_id} took the command but did not answer in time", 503)
