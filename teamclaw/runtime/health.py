"""Heartbeats and capability health (PRD §4.2 能力健康检查).

Instances beat every ``interval_s`` (30 s); one silent for more than ``timeout_s`` (90 s) is
unhealthy, so the capabilities it serves are ``unavailable`` until its next heartbeat.
The health loop also sweeps expired messages out of mailboxes and expires overdue tool
confirmations. Time comes from the runtime's clock, so tests never sleep.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from teamclaw.runtime.clock import Clock
from teamclaw.runtime.config import ConfigSnapshot
from teamclaw.runtime.emission import Emitter
from teamclaw.runtime.instance import AgentInstance
from teamclaw.runtime.routing import InstancePool

log = logging.getLogger(__name__)


class Heartbeats:
    """Instance health for one runtime; ``loop()`` is its background task."""

    def __init__(
        self,
        *,
        pool: InstancePool,
        emitter: Emitter,
        clock: Clock,
        interval_s: float,
        timeout_s: float,
        auto_heartbeat: bool,
        housekeeping: Callable[[], None],
    ) -> None:
        self.pool = pool
        self.emitter = emitter
        self.clock = clock
        self.interval_s = interval_s
        self.timeout_s = timeout_s
        self.auto_heartbeat = auto_heartbeat
        self._housekeeping = housekeeping

    async def loop(self) -> None:
        """Every ``interval_s``: beat for the instances that beat on their own, check health,
        then run the housekeeping step. Survives any failure of a step (logged)."""
        while True:
            await self.clock.sleep(self.interval_s)
            try:
                if self.auto_heartbeat:
                    for instance in list(self.pool):
                        if instance.alive and instance.auto_heartbeat:
                            self.heartbeat(instance.instance_id)
                self.check()
                self._housekeeping()
            except Exception:  # the loop must survive anything
                log.exception("health loop step failed")

    def heartbeat(self, instance_id: str) -> None:
        """Record a heartbeat; an unhealthy instance becomes available again.

        Each heartbeat is emitted as ``InstanceChanged``, so what the recorder keeps (last
        heartbeat, queued, handled) is at most one interval (30 s) old."""
        instance = self.pool.get(instance_id)
        if instance is None or not instance.alive:
            return
        instance.last_heartbeat = self.clock.now()
        recovered = not instance.healthy
        instance.healthy = True
        self.emitter.instance_changed(instance)
        if recovered:
            self.emitter.alert(
                "health",
                "info",
                f"{instance_id} is back; its capabilities are available",
                instance_id=instance_id,
                role=instance.role,
                status="available",
            )

    def check(self) -> list[AgentInstance]:
        """Mark instances silent for more than ``timeout_s`` unhealthy; returns them."""
        now = self.clock.now()
        changed = []
        for instance in self.pool:
            if instance.alive and instance.healthy and now - instance.last_heartbeat > self.timeout_s:
                instance.healthy = False
                changed.append(instance)
                self.emitter.instance_changed(instance)
                self.emitter.alert(
                    "health",
                    "critical",
                    f"{instance.instance_id} missed heartbeats for {self.timeout_s:g} s; "
                    "its capabilities are unavailable",
                    instance_id=instance.instance_id,
                    role=instance.role,
                    status="unavailable",
                )
        return changed

    def capability_health(self, snapshot: ConfigSnapshot, capability_id: str) -> dict[str, Any]:
        """``{capability_id, status: available|unavailable, enabled, instances: [...]}``.

        Available when an owner role has a healthy instance or may still spawn one;
        unavailable when every instance that could serve it missed its heartbeats. Raises
        KeyError for a capability ``snapshot`` does not have.
        """
        card = snapshot.cards.get(capability_id)
        if card is None:
            raise KeyError(capability_id)
        instances = [i for role in card.owner_roles for i in self.pool.alive(role)]
        spawnable = any(  # a call from outside any task, the one shared scope (``teamclaw.runtime.scopes``)
            len(self.pool.alive(role, "")) < snapshot.constraints_for(role).max_concurrent_instances
            for role in card.owner_roles
            if role in snapshot.roles
        )
        healthy = any(i.healthy for i in instances)
        available = card.enabled and (healthy or (not instances and spawnable))
        if instances and not healthy:
            available = False
        return {
            "capability_id": capability_id,
            "status": "available" if available else "unavailable",
            "enabled": card.enabled,
            "instances": [
                {"instance_id": i.instance_id, "role": i.role, "healthy": i.healthy, "last_heartbeat": i.last_heartbeat}
                for i in instances
            ],
        }
