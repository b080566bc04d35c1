"""Capability availability as the running runtime sees it (PRD §4.2 能力健康检查)."""

from __future__ import annotations

from typing import Any

from monitoring.host import get_host
from teamclaw.runtime.config import ConfigSnapshot


def capability_health(snapshot: ConfigSnapshot, capability_id: str) -> dict[str, Any]:
    """``{capability_id, status: available|unavailable, enabled, instances: [{instance_id,
    role, healthy, last_heartbeat}]}``: the runtime's heartbeats (90 s timeout) for the owner
    roles ``snapshot`` gives the card. Raises KeyError for an unknown capability.
    """
    host = get_host()
    runtime = host.runtime
    assert runtime is not None

    async def health() -> dict[str, Any]:
        return runtime.capability_health(snapshot, capability_id)

    return host.call(health(), timeout=30)
