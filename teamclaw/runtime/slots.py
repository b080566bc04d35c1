"""Instance slots: the role concurrency limit shared by every runtime of a deployment
(PRD §4.7 约束: 4 instances per role; issue 13), in a shared counting scope
(``teamclaw.runtime.scopes``: a project's, or the calls' from outside any task). A task's
own scope, the default, takes no slot here: the runtime running the task counts it.

Before a runtime spawns an instance of a role it takes one of the role's
``max_concurrent_instances`` slots; the instance holds it until it is terminated. Where the
slots live is the ``InstanceSlots`` given to the ``Runtime``:

- ``LocalSlots`` (the default, a runtime on its own): every slot is granted at once, so the
  limit is what the runtime counts of its own instances (``routing.InstancePool.choose``),
  exactly as before slots existed, with no suspension on the spawn path.
- a shared store (``runs.instance_slots.DatabaseSlots``: a row per role and slot index,
  leased like a task) bounds the instances of a role over every runtime worker. When none
  is free the call goes to a local instance of the role if there is one (its mailbox, as
  when the local limit is reached), else waits for a slot until its timeout
  (``worker.InstanceWorkers.place``).

A role that may invoke itself (main's ``question_aggregation`` inside every interview) keeps
its last slot (index ``limit - 1``) for the calls made inside tasks: an instance spawned for
an entry (a call from outside the team, which holds its instance for a whole task) takes
only the slots below it (``SlotUse.ENTRY``), an instance spawned for a call inside a task
takes the last slot first (``SlotUse.HELPER``), and an instance in the last slot is never
given an entry (``routing.InstancePool._choose_self_invoking``). So entries hold at most
``limit - 1`` instances over every worker together, and a task's call to its own role
always finds the last slot free or held by a helper, which finishes without waiting on a
task and, once idle, hands the slot over when another runtime wants it
(``InstanceWorkers.hand_over``).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Protocol


class SlotUse(StrEnum):
    """What a slot is taken for (module docstring): ``any`` (the lowest free slot),
    ``entry`` (an entry to a role that may invoke itself: the slots below ``limit - 1``,
    lowest first) or ``helper`` (a call inside a task to such a role: the last slot first,
    then downwards, so the slots entries may take stay free for them)."""

    ANY = "any"
    ENTRY = "entry"
    HELPER = "helper"


def slot_order(limit: int, use: SlotUse) -> list[int]:
    """The slot indexes ``use`` may take, in the order they are tried (see ``SlotUse``)."""
    if use == SlotUse.ENTRY and limit > 1:
        return list(range(limit - 1))
    if use == SlotUse.HELPER:
        return list(range(limit - 1, -1, -1))
    return list(range(limit))


class InstanceSlots(Protocol):
    """Where a runtime takes and gives back the slots of its instances."""

    @property
    def shared(self) -> bool:
        """True when other runtimes take slots from the same store (then idle instances give
        their slot up when another runtime wants it: ``InstanceWorkers.settle_slots``)."""

    @property
    def retry_s(self) -> float:
        """Seconds between two attempts to take a slot while a call waits for one."""

    async def acquire(self, role: str, limit: int, instance_id: str, *, use: SlotUse = SlotUse.ANY) -> int | None:
        """Take one of ``role``'s ``limit`` slots for the instance ``instance_id`` (not
        spawned yet): the slot's index (0 .. limit-1), or None when every one ``use`` may
        take is held (``slot_order``: an entry to a role that may invoke itself may not take
        the last one; a helper of such a role tries the last one first). Taking nothing tells
        nobody: a call that then waits says so with ``want``.
        Never raises: a store that cannot answer grants nothing (None)."""

    def release(self, instance_id: str) -> None:
        """Give back the slot of ``instance_id`` (no-op when it holds none); never blocks."""

    async def want(self, role: str, limit: int, *, use: SlotUse = SlotUse.ANY) -> None:
        """Say that a call here waits for one of ``role``'s slots (none ``use`` may take is
        free and no instance here may take the call): the holders of those slots on other
        runtimes see it on their next renewal (``InstanceWorkers.settle_slots``). Called
        only by a call that really waits, again at each retry. Never raises."""

    def stop_wanting(self, role: str) -> None:
        """The calls here that waited for a slot of ``role`` got one or gave up: the role's
        slots are no longer wanted from here (a call still waiting says so again at its next
        retry). Never blocks."""


class LocalSlots:
    """Slots of a runtime that shares none: every request is granted (module docstring)."""

    shared = False
    retry_s = 0.25

    async def acquire(self, role: str, limit: int, instance_id: str, *, use: SlotUse = SlotUse.ANY) -> int | None:
        """Always slot 0: the runtime's own count of its instances is the limit."""
        return 0

    def release(self, instance_id: str) -> None:
        """Nothing to give back."""

    async def want(self, role: str, limit: int, *, use: SlotUse = SlotUse.ANY) -> None:
        """Nobody else to tell."""

    def stop_wanting(self, role: str) -> None:
        """Nobody else to tell."""
