"""The runtime workers of a deployment as an operator sees them (dashboard, ``GET
/api/v1/workers``): which are alive, what each runs (docs/architecture.md §3)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db.models import Count, Q
from django.utils import timezone

from monitoring.models import Task
from runs.models import InstanceSlot, RuntimeWorker

RECENT_STOPPED = 10
"""Stopped or silent workers listed after the live ones."""
HOST_FIELDS = ("id", "hostname", "pid")
"""What of a worker's row identifies its host (its ``id`` is ``<hostname>-<pid>-<hex>``):
for staff only (issue 31, ``sees_worker_hosts``)."""


def sees_worker_hosts(user: Any) -> bool:
    """Whether ``user`` may see which host and process runs what (``HOST_FIELDS``, a task's or
    an instance's ``worker``): active staff and superusers, who operate the deployment. Others
    see the workers' state and load, not where they run."""
    if not getattr(user, "is_authenticated", False) or not user.is_active:
        return False
    return bool(user.is_staff or user.is_superuser)


def worker_for(user: Any, worker_id: str) -> str | None:
    """``worker_id`` (a task's ``owner``, an instance's worker) as ``user`` may see it: itself
    for ``sees_worker_hosts``, else None; None for no worker either way."""
    return (worker_id or None) if sees_worker_hosts(user) else None


def silence_limit_s() -> float:
    """How long a worker may stay silent and still count as alive (s): every worker beats
    every ``WORKER_HEARTBEAT_S`` (3 s), busy or idle; twice that plus a lease (16 s by
    default), so a worker killed with ``kill -9`` is listed ``silent`` about when its tasks
    are taken over."""
    return 2 * float(settings.TEAMCLAW["WORKER_HEARTBEAT_S"]) + settings.TEAMCLAW["LEASE_S"]


def workers_alive() -> bool:
    """True when some process that takes calls and commands (the embedded server's runtime
    or a ``runtime_worker``) has beaten within ``silence_limit_s``: without one, an outside
    call or a command could only wait for nobody (answered ``no_worker`` at once instead)."""
    cutoff = timezone.now() - timedelta(seconds=silence_limit_s())
    return RuntimeWorker.objects.filter(
        kind__in=("embedded", "worker"), stopped_at__isnull=True, heartbeat_at__gte=cutoff
    ).exists()


def retire_dead_workers() -> list[str]:
    """Mark ``stopped`` each worker silent past ``silence_limit_s`` whose tasks have all
    moved to another worker (none queued or running is still its own): it is gone, and the
    workers list stops showing it as ``silent`` for ever (issue 28). Returns their ids. A
    plain read first, so a beat that finds none takes no write lock."""
    cutoff = timezone.now() - timedelta(seconds=silence_limit_s())
    holding = Task.objects.filter(status__in=("queued", "running")).exclude(owner="").values("owner")
    dead = list(
        RuntimeWorker.objects.filter(stopped_at__isnull=True, heartbeat_at__lt=cutoff)
        .exclude(pk__in=holding)
        .values_list("pk", flat=True)
    )
    if dead:
        RuntimeWorker.objects.filter(pk__in=dead, stopped_at__isnull=True, heartbeat_at__lt=cutoff).update(
            stopped_at=timezone.now()
        )
    return dead


def held_slots() -> dict[str, dict[str, int]]:
    """The instance slots each worker holds under a lease still running (``runs.InstanceSlot``,
    PRD §4.7 instances per role across workers): ``{worker id: {role: slots}}``."""
    rows = (
        InstanceSlot.objects.exclude(owner="")
        .filter(lease_expires_at__gte=timezone.now())
        .values_list("owner", "role")
        .annotate(n=Count("pk"))
        .values_list("owner", "role", "n")
        .order_by("owner", "role")
    )
    held: dict[str, dict[str, int]] = {}
    for owner, role, n in rows:
        held.setdefault(owner, {})[role] = n
    return held


def worker_rows() -> list[dict[str, Any]]:
    """Live workers first, then up to ``RECENT_STOPPED`` stopped or silent ones:
    ``{id, kind, hostname, pid, concurrency, started_at, heartbeat_at, stopped_at, state,
    running, slots}`` (for a user, ``worker_rows_for``) with ``state`` ``alive``, ``silent``
    (no heartbeat for ``silence_limit_s``: it probably died; its tasks move once their leases
    expire) or ``stopped``, and ``slots`` the instance slots it holds per role (``held_slots``)."""
    cutoff = timezone.now() - timedelta(seconds=silence_limit_s())
    slots = held_slots()
    running = dict(
        Task.objects.filter(status="running")
        .exclude(owner="")
        .values_list("owner")
        .annotate(n=Count("pk"))
        .values_list("owner", "n")
    )
    alive = Q(stopped_at__isnull=True, heartbeat_at__gte=cutoff)
    rows = list(RuntimeWorker.objects.filter(alive).order_by("started_at"))
    rows += list(RuntimeWorker.objects.exclude(alive).order_by("-heartbeat_at")[:RECENT_STOPPED])
    out = []
    for row in rows:
        state = "stopped" if row.stopped_at else ("alive" if row.heartbeat_at >= cutoff else "silent")
        out.append(
            {
                "id": row.id,
                "kind": row.kind,
                "hostname": row.hostname,
                "pid": row.pid,
                "concurrency": row.concurrency,
                "started_at": row.started_at,
                "heartbeat_at": row.heartbeat_at,
                "stopped_at": row.stopped_at,
                "state": state,
                "running": running.get(row.id, 0),
                "slots": slots.get(row.id, {}),
            }
        )
    return out


def worker_rows_for(user: Any) -> list[dict[str, Any]]:
    """``worker_rows`` as ``user`` may see them: without ``HOST_FIELDS`` unless
    ``sees_worker_hosts(user)``."""
    rows = worker_rows()
    if sees_worker_hosts(user):
        return rows
    return [{key: value for key, value in row.items() if key not in HOST_FIELDS} for row in rows]
