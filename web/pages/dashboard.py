"""The dashboard: the team, the executors, recent tasks."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db.models import Q
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone

from capabilities.executors import model_status, role_executor
from capabilities.models import AgentRole, CapabilityCard
from monitoring.access import visible_tasks
from monitoring.models import AgentInstance
from monitoring.outcome import verdicts, waiting_for_operator
from runs.host import executor_problems
from runs.workers import worker_rows_for
from team.snapshot import build_snapshot


def dashboard(request: HttpRequest) -> HttpResponse:
    """The team with its capabilities and the executor each role uses, the runtime workers,
    active instances and recent tasks."""
    snapshot = build_snapshot()
    roles = [(role, role_executor(snapshot, role.role)) for role in AgentRole.objects.prefetch_related("capabilities")]
    # An instance whose worker died (kill -9) is never recorded terminated, nor unhealthy: past
    # the heartbeat timeout (PRD §4.2, 90 s) without a beat and still recorded healthy, it is
    # not listed as active, only counted. One its live runtime flagged unhealthy (the same
    # timeout) stays listed, as unavailable.
    reporting = timezone.now() - timedelta(seconds=settings.TEAMCLAW["HEARTBEAT_TIMEOUT_S"])
    unfinished = AgentInstance.objects.exclude(status="terminated")
    silent = Q(last_heartbeat__lt=reporting, healthy=True)
    instances = unfinished.exclude(silent)
    silent_instances = unfinished.filter(silent).count()
    tasks = list(visible_tasks(request.user).filter(kind="task").select_related("project")[:10])
    entry_points = CapabilityCard.objects.filter(
        capability_type="ENTRY", enabled=True, skill__status="ACTIVATED"
    ).select_related("skill")  # seed 003: ENTRY capabilities are the user-facing entry points
    return render(
        request,
        "monitoring/dashboard.html",
        {
            "nav": "dashboard",
            "roles": roles,
            "instances": instances,
            "silent_instances": silent_instances,
            "tasks": tasks,
            "verdicts": verdicts([t.id for t in tasks]),
            "waiting": waiting_for_operator([t.id for t in tasks]),
            "model": model_status(),
            "executor_problems": executor_problems(),
            "entry_points": entry_points,
            "workers": worker_rows_for(request.user),
        },
    )
