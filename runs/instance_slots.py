"""Instance slots in the database: the role concurrency limit held across runtime workers
(PRD §4.7 约束: 4 instances per role; issue 13; docs/architecture.md §3) in the shared
counting scopes (``teamclaw.runtime.scopes``: a project's with the per-project option, the
calls' from outside any task). ``role`` below is the scope's slot key (``role`` or
``role@slug``); a task's own scope, the default, takes no row.

Every runtime worker (the embedded server, each ``runtime_worker``, a terminal's
``run_workflow``) gives its runtime a ``DatabaseSlots``. A role with ``max_concurrent_instances``
N has the rows ``InstanceSlot(role, index)`` for index 0 .. N-1 (created on first use). Before
the runtime spawns an instance of the role it takes a row:

- **Taking.** A plain read of the free rows (``owner`` blank, or ``lease_expires_at`` passed:
  their worker stopped), then ``SELECT ... FOR UPDATE SKIP LOCKED`` on PostgreSQL and a
  compare-and-swap ``UPDATE`` on (owner, lease) as read, the same claim as a task's
  (``runs.dispatch.claim_tasks``): two workers never hold the same row.
- **Entries.** An instance spawned for an entry to a role that may invoke itself takes only
  the rows below ``limit - 1``, and one spawned for a call inside a task tries the last row
  first (``teamclaw.runtime.slots.SlotUse``): the last row stays for the calls inside
  tasks, so over every worker together at most ``limit - 1`` instances hold entries
  (``teamclaw.runtime.slots``).
- **Holding.** The row is leased like a task (``LEASE_S``, 10 s) and renewed by the worker's
  heartbeat (``Dispatcher.heartbeat``, every ``WORKER_HEARTBEAT_S`` while it holds a slot), so
  the slots of a worker that died free themselves when their lease expires. A worker that
  finds a row of its own taken over (it was paused past the lease) terminates that instance.
- **Giving back.** Terminating an instance frees its row; a worker stopping frees all of
  its rows. Idle instances are not retired on a timer: when a call finds no free row and no
  instance of its worker may take it, so that it waits (``InstanceWorkers.place``), its
  worker stamps ``wanted_at`` on the role's rows held elsewhere (``want_slot``, again at
  each retry) and clears the stamps once its waiting calls got a slot or gave up
  (``stop_wanting_slot``). Each holder, on its next renewal (which reports each stamp
  once), retires the instance of a wanted row once it is idle with no context open in a
  running task; if none of the role's wanted instances is, it hands over one that is idle
  with its contexts all ``ready`` (they end ``completed``; ``InstanceWorkers.settle_slots``).
  A worker alone never retires anything for that. A role whose limit was lowered: each
  renewal retires the idle instances in rows at or past the new limit
  (``Runtime.role_limits``), busy ones once they are done.

All database work runs on one thread of its own, in order (a release before the next take).
A database that does not answer grants no slot (the call waits, then times out) and is
logged; it never fails an invoke with anything but the PRD's ``timeout``.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db import DatabaseError, transaction
from django.db.models import Q
from django.utils import timezone

from runs.connection_closing import ConnectionClosingExecutor
from runs.models import InstanceSlot
from teamclaw.runtime.slots import SlotUse, slot_order

log = logging.getLogger(__name__)


@dataclass(slots=True)
class SlotRenewal:
    """What a renewal found: ``lost`` instances whose row another worker took over, and
    ``wanted`` instances whose row another worker waits for (instance ids)."""

    lost: list[str] = field(default_factory=list)
    wanted: list[str] = field(default_factory=list)


def free_slots() -> Q:
    """Rows a worker may take: nobody holds them, or their holder's lease expired."""
    return Q(owner="") | Q(lease_expires_at__lt=timezone.now())


def take_slot(
    owner: str,
    role: str,
    limit: int,
    instance_id: str,
    lease_s: float,
    *,
    create: bool = True,
    use: SlotUse = SlotUse.ANY,
) -> int | None:
    """Take one of ``role``'s ``limit`` rows for ``instance_id`` as worker ``owner`` (module
    docstring): its index, or None when every row is held (a call that then waits stamps
    them: ``want_slot``). ``create`` False skips making sure the rows exist (this
    worker did already). ``use`` says which rows may be taken and in which order
    (``teamclaw.runtime.slots.slot_order``). Raises DatabaseError."""
    rows = InstanceSlot.objects.filter(role=role, index__lt=limit)
    if create and rows.count() < limit:
        InstanceSlot.objects.bulk_create(
            [InstanceSlot(role=role, index=index) for index in range(limit)], ignore_conflicts=True
        )
    order = slot_order(limit, use)
    if len(order) < limit:
        rows = rows.filter(index__in=order)
    # A plain read first: a full role takes no write lock until it says it waits.
    ordering = "-index" if use == SlotUse.HELPER else "index"
    candidates = list(rows.filter(free_slots()).order_by(ordering).values_list("pk", flat=True))
    if candidates:
        with transaction.atomic():
            locked = InstanceSlot.objects.select_for_update(skip_locked=True).filter(free_slots(), pk__in=candidates)
            for row in locked.order_by(ordering):
                now = timezone.now()
                # Compare and swap: nobody took this row between the read and the write.
                taken = InstanceSlot.objects.filter(
                    pk=row.pk, owner=row.owner, lease_expires_at=row.lease_expires_at
                ).update(
                    owner=owner,
                    instance_id=instance_id,
                    acquired_at=now,
                    lease_expires_at=now + timedelta(seconds=lease_s),
                    wanted_at=None,
                )
                if taken:
                    return row.index
    return None


def want_slot(owner: str, role: str, limit: int, *, use: SlotUse = SlotUse.ANY) -> int:
    """Stamp ``wanted_at`` on the rows of ``role`` that ``use`` may take and other workers
    hold: worker ``owner`` has a call waiting for one (module docstring). Returns how many
    rows were stamped. Raises DatabaseError."""
    rows = InstanceSlot.objects.filter(role=role, index__in=slot_order(limit, use))
    return rows.exclude(owner=owner).exclude(owner="").update(wanted_at=timezone.now())


def stop_wanting_slot(owner: str, role: str) -> int:
    """Clear the ``wanted_at`` stamps of ``role``'s rows held by other workers: the calls of
    ``owner`` that waited got a slot or gave up. Another worker's call still waiting stamps
    them again at its next retry. Returns how many rows were cleared. Raises DatabaseError."""
    rows = InstanceSlot.objects.filter(role=role, wanted_at__isnull=False)
    return rows.exclude(owner=owner).update(wanted_at=None)


class DatabaseSlots:
    """The ``teamclaw.runtime.slots.InstanceSlots`` of runtime worker ``owner`` (its
    ``RuntimeWorker`` id): rows leased for ``lease_s`` seconds; a waiting call tries again
    every ``retry_s`` seconds. ``held`` maps each instance holding a row to its index."""

    shared = True

    def __init__(self, owner: str, *, lease_s: float, retry_s: float) -> None:
        self.owner = owner
        self.lease_s = lease_s
        self.retry_s = retry_s
        self.held: dict[str, int] = {}
        self._reported: dict[str, datetime] = {}  # instance id -> the wanted_at last reported
        self._created: set[tuple[str, int]] = set()
        self._lock = threading.Lock()
        # one thread, jobs in order; each job closes its connection (runs.connection_closing)
        self._thread = ConnectionClosingExecutor(max_workers=1, thread_name_prefix=f"teamclaw-slots-{owner[-8:]}")

    async def acquire(self, role: str, limit: int, instance_id: str, *, use: SlotUse = SlotUse.ANY) -> int | None:
        """Take a row for ``instance_id`` (``take_slot``, ``use`` as there) on the slots'
        thread: its index, or None when every row it may take is held or the database failed
        (logged)."""
        return await asyncio.get_running_loop().run_in_executor(self._thread, self._take, role, limit, instance_id, use)

    def _take(self, role: str, limit: int, instance_id: str, use: SlotUse = SlotUse.ANY) -> int | None:
        try:
            create = (role, limit) not in self._created
            index = take_slot(self.owner, role, limit, instance_id, self.lease_s, create=create, use=use)
            self._created.add((role, limit))
        except DatabaseError:
            log.warning("could not take an instance slot of %s; trying again", role, exc_info=True)
            return None
        if index is not None:
            with self._lock:
                self.held[instance_id] = index
        return index

    def release(self, instance_id: str) -> None:
        """Free the row of ``instance_id`` on the slots' thread, without waiting (a stopped
        host frees every row in ``release_all`` instead)."""
        with self._lock:
            if self.held.pop(instance_id, None) is None:
                return
        try:
            self._thread.submit(self._free, instance_id)
        except RuntimeError:
            pass  # the host is stopping: release_all frees it

    async def want(self, role: str, limit: int, *, use: SlotUse = SlotUse.ANY) -> None:
        """Stamp the rows a waiting call could take (``want_slot``) on the slots' thread; a
        database that fails is logged (the holders then just do not hear of it)."""
        await asyncio.get_running_loop().run_in_executor(self._thread, self._want, role, limit, use)

    def _want(self, role: str, limit: int, use: SlotUse) -> None:
        try:
            want_slot(self.owner, role, limit, use=use)
        except DatabaseError:
            log.warning("could not say that a call waits for a slot of %s", role, exc_info=True)

    def stop_wanting(self, role: str) -> None:
        """Clear the role's stamps (``stop_wanting_slot``) on the slots' thread, without waiting."""
        try:
            self._thread.submit(self._stop_wanting, role)
        except RuntimeError:
            pass  # the host is stopping: the stamps age out with the lease

    def _stop_wanting(self, role: str) -> None:
        try:
            stop_wanting_slot(self.owner, role)
        except DatabaseError:
            log.warning("could not clear the wanted stamps of %s; they age out", role, exc_info=True)

    def _free(self, instance_id: str) -> None:
        try:
            InstanceSlot.objects.filter(owner=self.owner, instance_id=instance_id).update(
                owner="", instance_id="", lease_expires_at=None, wanted_at=None
            )
        except DatabaseError:
            log.warning("could not free the slot of %s; it frees itself when its lease expires", instance_id)

    def renew(self) -> SlotRenewal:
        """Renew the leases of this worker's rows (on the dispatcher's heartbeat thread) and
        say which instances lost theirs and which are wanted elsewhere. Raises DatabaseError."""
        with self._lock:
            held = set(self.held)
        if not held:
            return SlotRenewal()
        now = timezone.now()
        mine = InstanceSlot.objects.filter(owner=self.owner)
        mine.update(lease_expires_at=now + timedelta(seconds=self.lease_s))
        rows = dict(mine.values_list("instance_id", "wanted_at"))
        recent = now - timedelta(seconds=self.lease_s)
        with self._lock:
            # A row missing because its instance gave it back meanwhile (``release``: it left
            # ``held`` first) was not lost: only those still held here and gone there were.
            lost = sorted(i for i in held - set(rows) if i in self.held)
            for instance_id in lost:
                self.held.pop(instance_id, None)
        # Each stamp is reported once: a call still waiting stamps again at each retry, so
        # a stamp left by one that got its slot or gave up moves nothing a second time.
        wanted = []
        for instance_id, wanted_at in rows.items():
            if instance_id in held and wanted_at and wanted_at >= recent:
                if self._reported.get(instance_id) != wanted_at:
                    wanted.append(instance_id)
                self._reported[instance_id] = wanted_at
        for instance_id in [i for i in self._reported if i not in rows or rows[i] is None]:
            del self._reported[instance_id]
        renewal = SlotRenewal(lost=lost, wanted=sorted(wanted))
        if renewal.lost:
            log.warning("instance slot(s) of %s were taken over by another worker", ", ".join(renewal.lost))
        return renewal

    def release_all(self) -> None:
        """Free every row of this worker (it stops: ``Dispatcher.release``)."""
        with self._lock:
            self.held.clear()
        InstanceSlot.objects.filter(owner=self.owner).update(
            owner="", instance_id="", lease_expires_at=None, wanted_at=None
        )

    def close(self) -> None:
        """Stop the slots' thread once its queued jobs ran (each closed its own connection)."""
        self._thread.shutdown(wait=True)
