"""Agent instances: a role's runtime worker with its own mailbox (PRD §2.1 AgentInstance)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from enum import StrEnum

from teamclaw.runtime.mailbox import Mailbox


class InstanceStatus(StrEnum):
    """An instance is ``idle`` or ``busy`` (handling a message) until ``terminated``."""

    IDLE = "idle"
    BUSY = "busy"
    TERMINATED = "terminated"


@dataclass(slots=True, eq=False)
class AgentInstance:
    """A running agent of ``role``.

    ``load`` (queued + in flight) drives ``least_busy``; ``healthy`` turns False after the
    heartbeat timeout (PRD §4.2, 90 s) and back on the next heartbeat. ``waiting_on`` holds
    the instances this one's current execution is waiting for (deadlock detection).
    """

    instance_id: str
    role: str
    mailbox: Mailbox
    created_at: float
    last_heartbeat: float
    status: InstanceStatus = InstanceStatus.IDLE
    healthy: bool = True
    auto_heartbeat: bool = True
    busy_with: str | None = None
    waiting_on: set[str] = field(default_factory=set)
    processed: int = 0
    worker: asyncio.Task[None] | None = None
    executing: str | None = None
    """The correlation id of the invoke attempt whose executor is running right now, if any."""
    serving_entry: bool = False
    """True while the message it handles is an entry (an invoke from outside the team,
    ``routing.is_entry``): it may hold the instance for a whole task."""
    waiting_operator: int = 0
    """How many of its calls wait for an operator right now (PRD §4.6 ``waiting_user``)."""
    slot: int | None = None
    """The index of the role's instance slot it holds (``teamclaw.runtime.slots``); None
    when it holds none (spawned outside the limit, or it gave its slot up)."""
    slot_given_up: bool = False
    """True once it gave its slot up while an operator held it (not counted against the
    limit, PRD §4.6 ``waiting_user``); with shared slots it is retired once idle again."""
    scope: str = ""
    """Where it counts against its role's ``max_concurrent_instances`` (PRD §4.7) and which
    calls it serves (``teamclaw.runtime.scopes``): ``task:<id>`` (one task's own instances,
    retired when the task ends), ``project:<slug>`` (a project that shares its instances),
    or ``""`` (the calls from outside any task)."""

    @property
    def load(self) -> int:
        """Queued + in-flight messages (what ``least_busy`` compares)."""
        return len(self.mailbox) + (1 if self.busy_with else 0)

    @property
    def alive(self) -> bool:
        """True until terminated."""
        return self.status != InstanceStatus.TERMINATED

    @property
    def idle(self) -> bool:
        """Alive, handling nothing and with an empty mailbox."""
        return self.alive and self.busy_with is None and not len(self.mailbox)
