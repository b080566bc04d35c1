"""Commands for a running task from any process (docs/architecture.md §3; README "Scaling out").

An operator's instruction, a manual snapshot or a cancel is for a task, wherever it runs: in
this process's runtime (the embedded default: applied at once) or in another worker (written
as a ``runs.RuntimeCommand``; its owner takes it on its next poll, at most 250 ms, or at
once when Redis wakes it, and writes the answer this process waits for).
"""

from __future__ import annotations

import time
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import connections
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from monitoring.models import Task
from runs.dispatch import Dispatcher, publish_wake
from runs.host import current_host, get_host
from runs.models import RuntimeCommand
from runs.outside_calls import CALLS, CallOutcome, not_running
from runs.workers import workers_alive
from teamclaw.errors import DomainError
from teamclaw.labels import worded
from teamclaw.runtime import TaskNotRunning

ANSWER_TIMEOUT_S = 10.0
"""How long a command waits for a live worker to answer."""


def answer_timeout_s() -> float:
    """How long a command for a task waits by default: ``ANSWER_TIMEOUT_S`` after a lease
    (``LEASE_S``), so a command sent while its worker died is taken and answered by the
    worker that takes the task over (issue 28), never refused for that."""
    return ANSWER_TIMEOUT_S + float(settings.TEAMCLAW["LEASE_S"])


ANSWER_POLL_S = 0.05


class CommandRefused(DomainError):
    """The task's worker refused the command or none answered; ``status`` is the HTTP status
    that fits (409: the task or context is no longer running; 503: no worker answered), with
    the field ``errors`` and ``extra`` keys of the worker's answer."""

    def __init__(
        self,
        message: str,
        status: int,
        errors: dict[str, list[str]] | None = None,
        *,
        code: str | None = None,
        **extra: Any,
    ) -> None:
        if code is not None:
            extra["errorCode"] = code  # in the API body too, for programs (``no_worker``)
        super().__init__(message, errors=errors, status=status, code=code, extra=extra)


async def _apply(dispatcher: Dispatcher, kind: str, task_id: str, payload: dict[str, Any]) -> Any:
    return dispatcher.apply(kind, task_id, payload)


def send_command(task_id: str, kind: str, payload: dict[str, Any], timeout_s: float | None = None) -> Any:
    """Apply command ``kind`` (``instruction``, ``snapshot``, ``cancel``) with ``payload`` to
    running task ``task_id``, wherever it runs; returns the runtime's answer once the record
    holds what it changed.

    Raises CommandRefused: 409 when the task (or the context named) is not running or ends
    before a worker takes the command; 503 ``no_worker`` at once when no runtime worker is
    alive (``runs.workers.workers_alive``), or as soon as the last one stops beating while
    nobody took the command (checked every second); 503 when no worker answered within
    ``timeout_s`` s (``answer_timeout_s()`` when None: a lease and ten seconds).
    """
    timeout_s = answer_timeout_s() if timeout_s is None else timeout_s
    host = current_host()
    dispatcher = host.dispatcher if host is not None else None
    owner = Task.objects.filter(pk=task_id).values_list("owner", flat=True).first()
    if host is not None and dispatcher is not None and owner == dispatcher.id:
        result, error = host.call(_apply(dispatcher, kind, task_id, payload), timeout=timeout_s)
        host.recorder.flush(timeout_s)
        if error is not None:
            raise CommandRefused(error["detail"], error["status"])
        return result
    if task_id and not Task.objects.filter(pk=task_id, status__in=["queued", "running"]).exists():
        raise CommandRefused(worded(_("task %(task)s is not running"), task=task_id), 409)
    if not workers_alive():
        raise no_worker()
    command = RuntimeCommand.objects.create(task_id=task_id, kind=kind, payload=payload)
    publish_wake("command", task_id)
    deadline = time.monotonic() + timeout_s
    next_check = time.monotonic() + 1.0
    while time.monotonic() < deadline:
        time.sleep(ANSWER_POLL_S)
        command.refresh_from_db(fields=["status", "result", "error", "taken_by"])
        if not command.taken_by and time.monotonic() >= next_check:
            next_check = time.monotonic() + 1.0
            _check_still_wanted(command, task_id)
        if command.status == "done":
            return command.result
        if command.status == "failed":
            error = command.error or {}
            raise CommandRefused(
                error.get("detail", "the worker refused it"),
                int(error.get("status", 409)),
                error.get("errors") or None,
                **(error.get("extra") or {}),
            )
    # Nobody took it: withdraw it, so it is not applied later behind the operator's back.
    if RuntimeCommand.objects.filter(pk=command.pk, taken_by="").update(
        status="failed",
        error={"status": 503, "detail": "no worker answered"},
        done_at=timezone.now(),
    ):
        if task_id:
            raise CommandRefused(
                worded(
                    _("the worker running task %(task)s did not answer within %(seconds)s s"),
                    task=task_id,
                    seconds=f"{timeout_s:g}",
                ),
                503,
            )
        raise CommandRefused(
            worded(
                _(
                    "no runtime worker took the call within %(seconds)s s: is one running? "
                    "(python manage.py runtime_worker)"
                ),
                seconds=f"{timeout_s:g}",
            ),
            503,
        )
    who = f"the worker running task {task_id}" if task_id else "the runtime worker that took the call"
    raise CommandRefused(f"{who} took the command but did not answer in time", 503)


def no_worker() -> CommandRefused:
    """The 503 for a call or command when no runtime worker is alive (``workers_alive``)."""
    return CommandRefused(
        "no runtime worker is running, so nothing can take this: start one "
        "(python manage.py runtime_worker) or run the embedded server (make run)",
        503,
        code="no_worker",
    )


def _check_still_wanted(command: RuntimeCommand, task_id: str) -> None:
    """While nobody took ``command``: withdraw it and raise when its task ended (409) or no
    worker is alive any more (503 ``no_worker``), so it is never applied later."""
    if task_id and not Task.objects.filter(pk=task_id, status__in=["queued", "running"]).exists():
        if _withdraw(command, 409, "the task ended"):
            raise CommandRefused(f"task {task_id} ended before its worker took the command", 409)
    elif not workers_alive() and _withdraw(command, 503, "no worker"):
        raise no_worker()


def _withdraw(command: RuntimeCommand, status: int, detail: str) -> bool:
    """Fail ``command`` if no worker took it meanwhile; True when it was withdrawn."""
    return bool(
        RuntimeCommand.objects.filter(pk=command.pk, taken_by="").update(
            status="failed", error={"status": status, "detail": detail}, done_at=timezone.now()
        )
    )


def call_wait_s(payload: dict[str, Any]) -> float:
    """How long an outside call may take (s): its timeout (60 s by default) for each of up to
    four attempts, plus 10 s; at most an hour."""
    return min(3600.0, float(payload.get("timeout") or 60) * 4 + 10)


async def call_anywhere(kind: str, payload: dict[str, Any]) -> CallOutcome:
    """Run an outside ``invoke`` or ``hook`` (``runs.outside_calls``): on this process's
    runtime with the embedded default, else on a runtime worker (the owner of
    ``payload["task_id"]``, or any). Waits as long as the call may take: its timeout (60 s by
    default) for each of up to four attempts, plus 10 s."""
    if settings.TEAMCLAW["RUNTIME"] == "embedded":
        host = await sync_to_async(get_host)()
        assert host.runtime is not None
        # Give this request's database connection back before waiting on the runtime, which
        # may need one from the same pool (PostgreSQL) to load a snapshot: 64 waiting requests
        # holding all 20 of them starved it for 30 s.
        await sync_to_async(connections.close_all)()
        return await host.acall(CALLS[kind](host.runtime, payload))
    wait_s = call_wait_s(payload)
    task_id = payload.get("task_id")
    if task_id and not await Task.objects.filter(pk=task_id, status__in=["queued", "running"]).aexists():
        return None, not_running(TaskNotRunning(task_id))
    try:
        body = await sync_to_async(send_command)(payload.get("task_id") or "", kind, payload, wait_s)
    except CommandRefused as refused:
        return None, {
            "status": refused.status,
            "detail": refused.message,
            "errors": refused.errors,
            "extra": refused.extra,
        }
    return body, None
