"""Capability health as this process can know it (PRD §4.2 能力健康检查; seed 003
``HealthProvider``): from its own runtime when it runs agents (the embedded default, a
runtime worker), else from the runtime workers' rows in the database, without starting a
runtime here (``TEAMCLAW_RUNTIME=remote``: web processes hold no runtime state).
"""

from __future__ import annotations

from typing import Any

from django.conf import settings

from runs.health import capability_health, capability_status, workers_capability_status
from runs.host import get_host
from team.snapshot import build_snapshot


def capability_status_here(capability_id: str, timeout_s: float = 30) -> dict[str, Any] | None:
    """``runs.health.capability_status`` of ``capability_id`` (None for an unknown card), by
    this process's runtime or, in a web process without one, by the workers
    (``workers_capability_status``). Raises TimeoutError when the runtime does not answer
    within ``timeout_s`` (s)."""
    if settings.TEAMCLAW["RUNTIME"] == "remote":
        return workers_capability_status(capability_id)
    return capability_status(get_host(), capability_id, timeout_s=timeout_s)


def capability_health_here(project_id: str | None, capability_id: str) -> dict[str, Any]:
    """``runs.health.capability_health`` (``{capability_id, status: available|unavailable,
    enabled, instances}``, PRD §4.2) with ``project_id``'s configuration, by this process's
    runtime or by the workers. Raises KeyError for an unknown capability,
    Project.DoesNotExist for an unknown project."""
    snapshot = build_snapshot(project_id)
    if settings.TEAMCLAW["RUNTIME"] != "remote":
        return capability_health(get_host(), snapshot, capability_id)
    status = workers_capability_status(capability_id, snapshot)
    if status is None:
        raise KeyError(capability_id)
    return {
        "capability_id": capability_id,
        "status": "unavailable" if status["status"] == "UNHEALTHY" else "available",
        "enabled": snapshot.cards[capability_id].enabled,
        "instances": [
            {k: i[k] for k in ("instance_id", "role", "healthy", "last_heartbeat", "worker")}
            for i in status["instances"]
        ],
    }
