"""This process's runtime worker: it claims tasks, holds their leases, resumes orphans and
answers commands (docs/architecture.md §3; README "Scaling out").

Every process that runs agents has one ``Dispatcher`` on its runtime host's loop: the embedded
server of ``make run``, each ``manage.py runtime_worker`` and a terminal's ``run_workflow``.

- **Claiming.** A task waiting for a worker is ``queued`` with a ``run_spec``. A task is owned
  by one worker at a time through ``Task.owner`` and ``Task.lease_expires_at``. A worker with a
  free slot (``--concurrency``) claims the oldest queued task, or a running one whose lease
  expired (its owner stopped), with ``SELECT ... FOR UPDATE SKIP LOCKED`` on PostgreSQL and a
  compare-and-swap ``UPDATE`` (owner, lease and attempt as read) on both, so two workers never
  take the same attempt. The heartbeat (every ``WORKER_HEARTBEAT_S``, 3 s) renews the leases
  (``LEASE_S``, 10 s).
- **Resuming.** A claimed task that ran before (``attempt`` > 1) resumes with the journal of
  its record (``runs.resume``): completed steps are answered from it, in-flight ones run
  again, its tool confirmations carry over. A task whose executors say they cannot resume
  ends ``failed`` with ``interrupted`` instead.
- **Commands.** ``runs.commands`` writes a ``RuntimeCommand`` for a task; the owner takes it on
  its next poll (every ``WORKER_POLL_MS``, at most 250 ms) and writes the answer; an outside
  invoke or hook without a task is taken by any worker with room. A tool
  confirmation decided on the record is applied to the waiting tool use on the same poll.
- **Wake-ups.** With ``REDIS_URL``, a new task is pushed on the list ``teamclaw:tasks`` and a
  command published on ``teamclaw:commands``; a worker blocked on either polls at once. The
  database stays the only truth; Redis only wakes.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import threading
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Protocol

import redis
import redis.asyncio as aioredis
from django.conf import settings
from django.db import DatabaseError, close_old_connections, transaction
from django.db.models import F, Q
from django.utils import timezone

from capabilities.config import current_version
from monitoring import live_items
from monitoring.live_events import LiveItem
from monitoring.live_sink import get_live_sink
from monitoring.models import Task, ToolConfirmation
from monitoring.recorder import RecorderSink
from runs.instance_slots import DatabaseSlots, SlotRenewal
from runs.models import RuntimeCommand, RuntimeWorker
from runs.outside_calls import CALLS
from runs.pinned_config import pinned_for
from runs.resume import journal_for
from runs.workers import retire_dead_workers
from teamclaw.runtime import ConfigSnapshot, InvokeResult, Runtime, TaskNotRunning
from teamclaw.runtime.context import FINAL_STATUSES
from teamclaw.runtime.overlay import ConfigOverlay
from teamclaw.runtime.resume import ResumeJournal


class WorkerHost(Protocol):
    """What the dispatcher needs of its runtime host (``runs.host.RuntimeHost``)."""

    @property
    def runtime(self) -> Runtime | None:
        """The runtime, once started."""

    @property
    def recorder(self) -> RecorderSink:
        """The database sink of the runtime's events."""

    def call_soon(self, fn: Any, *args: Any) -> None:
        """Run ``fn(*args)`` on the runtime loop, without waiting."""

    def start_blocking(self, fn: Callable[..., Any], *args: Any) -> None:
        """Run the blocking ``fn(*args)`` on one of the host's threads, without waiting."""

    def mute(self, task_id: str) -> None:
        """Record nothing more of task ``task_id`` (this process gave it up)."""

    def unmute(self, task_id: str) -> None:
        """Record task ``task_id`` again (this process claimed it anew)."""


log = logging.getLogger(__name__)

TASK_LIST = "teamclaw:tasks"
"""Redis list a new task's id is pushed on: one blocked worker wakes and claims."""
COMMAND_CHANNEL = "teamclaw:commands"
"""Redis channel a command's task id is published on: every worker polls its commands."""

CLAIMS_PER_POLL = 1
"""Tasks a worker claims per poll round."""
MAX_OUTSIDE_CALLS = 64
"""Outside invokes and hooks (``runs.outside_calls``) one worker runs at once."""

INTERRUPTED = {
    "code": "interrupted",
    "message": "its worker stopped while it ran, and its executors cannot resume a task",
    "details": {},
}


def new_worker_id() -> str:
    """A runtime worker's id: ``<hostname>-<pid>-<8 hex digits>``."""
    return f"{socket.gethostname()[:40]}-{os.getpid()}-{uuid.uuid4().hex[:8]}"


def lease_s() -> float:
    return float(settings.TEAMCLAW["LEASE_S"])


def poll_s() -> float:
    return settings.TEAMCLAW["WORKER_POLL_MS"] / 1000


@dataclass(slots=True)
class Claimed:
    """A task this worker now owns, with the journal when it resumes an earlier attempt."""

    task: Task
    journal: ResumeJournal | None
    pinned: ConfigSnapshot | None = None
    """The configuration the task started on, when it resumes (``runs.pinned_config``)."""


def claimable() -> Q:
    """Tasks a worker may take: queued with a run spec, or running with an expired lease."""
    now = timezone.now()
    return Q(kind="task", run_spec__isnull=False) & (
        Q(status="queued") | Q(status="running") & (Q(lease_expires_at__lt=now) | Q(lease_expires_at__isnull=True))
    )


def claim_tasks(worker_id: str, limit: int, only: Iterable[str] | None = None) -> list[Task]:
    """Take up to ``limit`` claimable tasks (oldest first; only the ids in ``only`` when given)
    for ``worker_id``: owner set, lease started, ``attempt`` + 1, status ``running``."""
    if limit <= 0:
        return []
    claimed: list[Task] = []
    rows = Task.objects.filter(claimable())
    if only is not None:
        rows = rows.filter(pk__in=list(only))
    # A plain read first: an idle poll takes no write lock (SQLite's transactions are IMMEDIATE).
    candidates = list(rows.order_by("created_at").values_list("pk", flat=True)[:limit])
    if not candidates:
        return []
    with transaction.atomic():
        locked = Task.objects.select_for_update(skip_locked=True).filter(claimable(), pk__in=candidates)
        for task in locked.order_by("created_at"):
            # Compare and swap: nobody took this attempt between the read and the write.
            taken = Task.objects.filter(
                pk=task.pk, owner=task.owner, attempt=task.attempt, lease_expires_at=task.lease_expires_at
            ).update(
                owner=worker_id,
                lease_expires_at=timezone.now() + timedelta(seconds=lease_s()),
                status="running",
                attempt=F("attempt") + 1,
            )
            if taken:
                claimed.append(Task.objects.get(pk=task.pk))
    return claimed


def live_context(runtime: Runtime, task_id: str, payload: dict[str, Any]) -> str:
    """The live context a command for ``payload["context_id"]`` goes to: that context, or when
    it is gone because the task was taken over (its earlier attempt's contexts ended
    ``terminated``), the one open context of ``payload["role"]`` in task ``task_id`` here (the
    resumed run's agent doing that work). Raises KeyError when there is none, or several."""
    context_id = str(payload["context_id"])
    contexts = runtime.book.contexts
    if context_id in contexts or not payload.get("role"):
        return context_id
    open_ones = [
        context.id
        for context in contexts.values()
        if context.task_id == task_id and context.role == payload["role"] and context.status not in FINAL_STATUSES
    ]
    if len(open_ones) != 1:
        raise KeyError(context_id)
    return open_ones[0]


def fail_interrupted(task: Task) -> None:
    """End ``task`` ``failed`` with ``interrupted`` (it cannot resume) and tell the live pages."""
    Task.objects.filter(pk=task.pk).update(
        status="failed", error=INTERRUPTED, finished_at=timezone.now(), owner="", lease_expires_at=None
    )
    task.refresh_from_db()
    get_live_sink().publish_items([LiveItem("task", f"task:{task.pk}", live_items.task_item(task))])


def publish_wake(kind: str, value: str) -> None:
    """Wake workers through Redis (nothing without ``REDIS_URL``): ``kind`` ``task`` pushes
    on the task list, ``command`` publishes on the command channel. Best effort: the database
    poll finds the work anyway."""
    url = settings.REDIS_URL
    if not url:
        return
    try:
        client = redis.Redis.from_url(url, socket_timeout=2, socket_connect_timeout=2)
        with client:
            if kind == "task":
                client.lpush(TASK_LIST, value)
            else:
                client.publish(COMMAND_CHANNEL, value)
    except redis.RedisError:
        log.warning("could not wake the workers through Redis; they find the %s on their next poll", kind)


class Dispatcher:
    """The runtime worker of one process (module docstring). ``kind`` is ``embedded``,
    ``worker`` or ``command``; ``concurrency`` bounds the tasks it runs at once; ``claim``
    False makes it run only the tasks handed to it (a terminal's run)."""

    def __init__(
        self, host: WorkerHost, kind: str, concurrency: int, *, claim: bool = True, worker_id: str | None = None
    ) -> None:
        self.host = host
        self.kind = kind
        self.concurrency = concurrency
        self.claim = claim
        self.id = worker_id or new_worker_id()
        self.running: dict[str, asyncio.Future[InvokeResult]] = {}
        self.journals: dict[str, ResumeJournal] = {}
        """The journal of each running task that resumes or forks (its ``answered`` count)."""
        self._resumed_written: dict[str, int] = {}
        self.wake = asyncio.Event()
        self.loops: list[asyncio.Task[None]] = []
        self.stopping = False
        self.last_heartbeat = 0.0
        self.registered = False
        self.calls: set[asyncio.Future[None]] = set()
        self.lease_lock = threading.Lock()
        host.recorder.on_stale(lambda task_ids: host.call_soon(self.lost, task_ids))

    # -- lifecycle (sync, from the host) ---------------------------------------------------
    def register(self) -> None:
        """Write this worker's ``RuntimeWorker`` row (once)."""
        now = timezone.now()
        RuntimeWorker.objects.get_or_create(
            id=self.id,
            defaults={
                "kind": self.kind,
                "hostname": socket.gethostname()[:255],
                "pid": os.getpid(),
                "concurrency": self.concurrency,
                "started_at": now,
                "heartbeat_at": now,
            },
        )
        self.registered = True

    async def start(self) -> None:
        """Poll (and listen to Redis) on the runtime loop until ``stop``; the first poll
        registers the worker's row."""
        self.loops.append(asyncio.create_task(self.poll_loop(), name=f"dispatcher-{self.id}"))
        if settings.REDIS_URL:
            self.loops.append(asyncio.create_task(self.redis_loop(), name=f"dispatcher-redis-{self.id}"))

    async def stop(self) -> list[str]:
        """Stop polling; returns the ids of the tasks still running here (the host mutes
        them, stops the runtime and then calls ``release``)."""
        self.stopping = True
        for loop in self.loops:
            loop.cancel()
        await asyncio.gather(*self.loops, return_exceptions=True)
        return list(self.running)

    def release(self, task_ids: list[str]) -> None:
        """Give up the leases of ``task_ids`` at once (another worker resumes them) and mark
        this worker stopped."""
        with self.lease_lock:
            self.stopping = True
            Task.objects.filter(pk__in=task_ids, owner=self.id).update(lease_expires_at=timezone.now())
            if (slots := self.database_slots()) is not None:
                slots.release_all()  # its instances are gone: another worker may spawn in their slots
            RuntimeWorker.objects.filter(pk=self.id).update(stopped_at=timezone.now())

    # -- starting tasks ------------------------------------------------------------------
    def hand_over(self, task_id: str) -> bool:
        """Claim ``task_id`` here at once and start it (from any thread); False when this
        worker has no free slot (it stays queued for the next worker with one)."""
        if self.stopping or len(self.running) >= self.concurrency:
            return False
        claimed = claim_tasks(self.id, 1, only=[task_id])
        if not claimed:
            return False
        item = self.prepare(claimed[0])
        if item is not None:
            self.host.call_soon(self.launch, item)
        return True

    def prepare(self, task: Task) -> Claimed | None:
        """The claimed ``task`` ready to run, or None when it cannot resume (then failed)."""
        if task.attempt > 1 and not self.resumable(task):
            fail_interrupted(task)
            return None
        journal = journal_for(task)
        return Claimed(task, journal, pinned_for(task) if task.attempt > 1 else None)

    def resumable(self, task: Task) -> bool:
        runtime = self.host.runtime
        if runtime is None:
            return False
        return all(runtime.executors.resumable(kind) for kind in (task.executor or "offline").split("+"))

    async def run(self, item: Claimed) -> InvokeResult:
        """Run the claimed task here and wait for its result (a terminal's run)."""
        self.launch(item)
        return await self.running[item.task.id]

    def launch(self, item: Claimed) -> None:
        """Run a claimed task on this runtime (on the runtime loop)."""
        runtime = self.host.runtime
        assert runtime is not None
        task, spec = item.task, item.task.run_spec or {}
        if task.id in self.running:
            return
        # The fence (monitoring.fencing): once another worker claims the task (attempt + 1),
        # the recorder writes none of this run's rows any more.
        self.host.recorder.fence(task.id, task.attempt)
        # A task this process gave up earlier and now claimed again is recorded again: muted,
        # the new run's end would never be written and the task would be claimed for ever.
        self.host.unmute(task.id)
        run = asyncio.ensure_future(
            runtime.run_task(
                capability_id=spec["capability_id"],
                params=spec["params"],
                task_id=task.id,
                project_id=task.project_id,
                description=spec.get("description", task.description),
                entry_role=spec.get("entry_role", "main"),
                prompt_enhancement=spec.get("prompt_enhancement", ""),
                journal=item.journal,
                overlay=ConfigOverlay.from_dict(spec.get("config_overlay")),
                snapshot=item.pinned,
            )
        )
        self.running[task.id] = run
        if item.journal is not None:
            self.journals[task.id] = item.journal
        run.add_done_callback(lambda done: self.finished(task.id, done, item.journal))

    def give_up(self, task_id: str) -> None:
        """Stop running a task another worker now owns, recording nothing more of it: the new
        owner's record must not show this worker's cancel."""
        self.host.mute(task_id)
        if self.host.runtime is not None:
            self.host.runtime.cancel_task(task_id, "another worker took this task over")

    def lost(self, task_ids: list[str]) -> None:
        """The recorder fenced out rows of ``task_ids`` (on the runtime loop): another worker
        took them over while this one was paused past its lease; stop running them here
        without waiting for the next heartbeat."""
        for task_id in task_ids:
            if task_id in self.running:
                log.warning("task %s was taken over by another worker; this one stops running it", task_id)
                self.give_up(task_id)

    def finished(self, task_id: str, done: asyncio.Future[Any], journal: ResumeJournal | None) -> None:
        self.running.pop(task_id, None)
        self.journals.pop(task_id, None)
        self._resumed_written.pop(task_id, None)
        error = None if done.cancelled() else done.exception()
        if error is not None:
            log.error("task %s stopped on an internal error", task_id, exc_info=error)
        if self.stopping:
            return
        self.host.start_blocking(self.close_lease, task_id, journal.answered if journal else 0, error)
        self.wake.set()  # a slot is free

    def close_lease(self, task_id: str, resumed_steps: int, error: BaseException | None) -> None:
        """The task ended here: once the recorder holds its outcome, drop the owner (the lease
        runs on for one more period, so a slow write can never make the task look orphaned);
        count its resumed steps; an internal error (the run raised) fails it with
        ``executor_error`` so it never stays running."""
        self.host.recorder.flush(30)
        fields: dict[str, Any] = {"owner": "", "lease_expires_at": timezone.now() + timedelta(seconds=lease_s())}
        if resumed_steps:
            fields["resumed_steps"] = resumed_steps
        if not Task.objects.filter(pk=task_id, owner=self.id).update(**fields):
            return  # another worker took it over: what happens to it is that worker's record
        self.host.recorder.fence(task_id, None)  # everything of this run is written
        # A confirmation an earlier attempt asked that this one never asked again cannot be
        # decided any more: it expires with the task instead of waiting on the pages forever.
        now = timezone.now()
        left = list(ToolConfirmation.objects.filter(task_id=task_id, status="pending"))
        if left and ToolConfirmation.objects.filter(pk__in=[row.pk for row in left], status="pending").update(
            status="expired", decided_at=now
        ):
            for row in left:
                row.status, row.decided_at = "expired", now
            get_live_sink().publish_items(
                [LiveItem("confirmation", f"confirmation:{row.pk}", live_items.confirmation_item(row)) for row in left]
            )
        if error is not None:
            message = f"the run stopped on an internal error ({type(error).__name__})"
            if Task.objects.filter(pk=task_id, status__in=["queued", "running"]).update(
                status="failed", error={"code": "executor_error", "message": message}, finished_at=timezone.now()
            ):
                task = Task.objects.get(pk=task_id)
                get_live_sink().publish_items([LiveItem("task", f"task:{task_id}", live_items.task_item(task))])

    # -- the poll -------------------------------------------------------------------------
    async def poll_loop(self) -> None:
        while not self.stopping:
            self.wake.clear()  # what arrives during the round wakes the next one at once
            try:
                await self.poll_once()
            except asyncio.CancelledError:
                raise
            except Exception:  # a database hiccup: log it and poll again
                log.exception("the runtime worker's poll failed; trying again")
            try:
                await asyncio.wait_for(self.wake.wait(), poll_s())
            except TimeoutError:
                pass

    async def poll_once(self) -> None:
        """One round: heartbeat when due, decided confirmations, commands, claims."""
        now = asyncio.get_running_loop().time()
        if not self.registered:
            await asyncio.to_thread(self.register)
        slots = self.database_slots()
        if now - self.last_heartbeat >= settings.TEAMCLAW["WORKER_HEARTBEAT_S"]:
            # Every heartbeat renews the leases (of tasks and instance slots) and the worker's
            # row, busy or idle: a worker silent for two beats and a lease is listed as
            # ``silent`` (``runs.workers``), so a dead one does not look alive for long.
            self.last_heartbeat = now
            written = self._resumed_written
            resumed = {t: j.answered for t, j in self.journals.items() if j.answered and j.answered != written.get(t)}
            lost_tasks, renewal = await asyncio.to_thread(self.heartbeat, list(self.running), resumed)
            self._resumed_written.update((t, n) for t, n in resumed.items() if t in self.journals)
            for task_id in lost_tasks:
                self.give_up(task_id)
            if renewal is not None and self.host.runtime is not None and slots is not None and slots.held:
                await self.refresh_limits(self.host.runtime)
                self.host.runtime.settle_slots(renewal.lost, renewal.wanted)
        runtime = self.host.runtime
        if runtime is None:
            return
        waiting = list(runtime.confirmations)
        owned = list(self.running)
        # One claim a round, so idle workers share a burst of new tasks instead of the first
        # awake taking them all; a round that claimed one polls again at once.
        free = min(CLAIMS_PER_POLL, self.concurrency - len(self.running)) if self.claim and not self.stopping else 0
        version, decided, commands, claimed = await asyncio.to_thread(self.read_work, waiting, owned, free)
        if version > runtime.latest_version:
            # A change saved in another process (PRD §4.8): the next task start loads it.
            runtime.config.note_version({"new_version": version})
        for row in decided:
            try:
                runtime.resolve_confirmation(
                    row.id, row.status in ("approved", "answered"), decided_by=row.decided_by, answer=row.answer
                )
            except KeyError:
                pass  # it expired or was decided here meanwhile
        for command in commands:
            if command.kind in CALLS:
                call = asyncio.ensure_future(self.serve_call(command))
                self.calls.add(call)
                call.add_done_callback(self.calls.discard)
            else:
                await asyncio.to_thread(
                    self.answer, command, self.apply(command.kind, command.task_id, command.payload)
                )
        for item in claimed:
            self.launch(item)
        if claimed:
            self.wake.set()

    @staticmethod
    async def refresh_limits(runtime: Runtime) -> None:
        """Load again every configuration this worker holds (global and per project) that
        the config moved on from (a role's limit lowered, PRD §4.7), so the renewal that
        follows retires the instances past it. A load that fails (a project deleted) leaves
        that snapshot out of ``Runtime.role_limits``, being older than the config; logged."""
        for project_id in list(runtime.config.cached):
            try:
                await runtime.snapshot_for(project_id)
            except Exception:
                log.warning("could not load the configuration of %s to check the role limits", project_id or "the team")

    def heartbeat(
        self, task_ids: list[str], resumed: dict[str, int] | None = None
    ) -> tuple[list[str], SlotRenewal | None]:
        """Renew this worker's row, the leases of ``task_ids`` and of its instance slots (not
        once it is stopping: a renewal must never land after ``release``), and write
        ``resumed`` (task id -> steps answered from the record so far) on the tasks it still
        owns, so a running resumed task shows them before it ends. Returns the tasks
        another worker took over meanwhile (this one was paused past its lease) and what the
        slots' renewal found (``runs.instance_slots.DatabaseSlots.renew``)."""
        close_old_connections()
        with self.lease_lock:
            if self.stopping:
                return [], None
            lost = self.renew(task_ids)
            retire_dead_workers()
            for task_id, answered in (resumed or {}).items():
                if task_id not in lost:
                    Task.objects.filter(pk=task_id, owner=self.id).update(resumed_steps=answered)
            slots = self.database_slots()
            if slots is None:
                return lost, None
            try:
                return lost, slots.renew()
            except DatabaseError:  # the tasks' renewal stands; the slots are renewed next beat
                log.warning("could not renew this worker's instance slots", exc_info=True)
                return lost, None

    def database_slots(self) -> DatabaseSlots | None:
        """The runtime's instance slots when they are this worker's rows in the database."""
        runtime = self.host.runtime
        slots = runtime.slots if runtime is not None else None
        return slots if isinstance(slots, DatabaseSlots) and slots.owner == self.id else None

    def renew(self, task_ids: list[str]) -> list[str]:
        now = timezone.now()
        RuntimeWorker.objects.filter(pk=self.id).update(heartbeat_at=now)
        if not task_ids:
            return []
        renewed = Task.objects.filter(pk__in=task_ids, owner=self.id).update(
            lease_expires_at=now + timedelta(seconds=lease_s())
        )
        if renewed == len(task_ids):
            return []
        mine = set(Task.objects.filter(pk__in=task_ids, owner=self.id).values_list("pk", flat=True))
        lost = [task_id for task_id in task_ids if task_id not in mine]
        log.warning("task(s) %s were taken over by another worker; this one stops running them", ", ".join(lost))
        return lost

    def read_work(
        self, waiting: list[str], owned: list[str], free: int
    ) -> tuple[int, list[ToolConfirmation], list[RuntimeCommand], list[Claimed]]:
        """The database half of a poll (on a worker thread): the config version, decided
        confirmations, commands, claimed tasks."""
        close_old_connections()
        version = current_version()
        decided = list(ToolConfirmation.objects.filter(pk__in=waiting).exclude(status="pending")) if waiting else []
        commands: list[RuntimeCommand] = []
        if owned:
            for command in RuntimeCommand.objects.filter(status="pending", task_id__in=owned, taken_by=""):
                if RuntimeCommand.objects.filter(pk=command.pk, taken_by="").update(taken_by=self.id):
                    commands.append(command)
        room = MAX_OUTSIDE_CALLS - len(self.calls) if self.claim and not self.stopping else 0
        if room > 0:
            for command in RuntimeCommand.objects.filter(status="pending", task_id="", taken_by="")[:room]:
                if RuntimeCommand.objects.filter(pk=command.pk, taken_by="").update(taken_by=self.id):
                    commands.append(command)
        claimed = [item for task in claim_tasks(self.id, free) if (item := self.prepare(task)) is not None]
        return version, decided, commands, claimed

    def apply(self, kind: str, task_id: str, payload: dict[str, Any]) -> tuple[Any, dict[str, Any] | None]:
        """Apply a command to this runtime (on its loop): ``(result, None)`` or ``(None,
        {status, detail})``. Kinds: ``instruction`` ``{context_id, role, text, author}`` (the
        ``user_instruction`` snapshot), ``snapshot`` ``{context_id, role, label}`` (the
        ``manual`` snapshot), ``cancel`` ``{reason}`` (``{task_id, status: terminated}``). An
        instruction or snapshot for a context of an earlier attempt goes to the one agent of
        its role now running in the task (``live_context``)."""
        runtime = self.host.runtime
        assert runtime is not None
        try:
            if kind == "instruction":
                author = payload.get("author", "operator")
                context_id = live_context(runtime, task_id, payload)
                return runtime.add_user_instruction(context_id, payload["text"], author=author), None
            if kind == "snapshot":
                return runtime.manual_snapshot(live_context(runtime, task_id, payload), payload.get("label", "")), None
            if kind == "cancel":
                if runtime.cancel_task(task_id, payload.get("reason") or "cancelled by the operator"):
                    return {"task_id": task_id, "status": "terminated"}, None
                raise TaskNotRunning(task_id)
        except (KeyError, TaskNotRunning):
            return None, {
                "status": 409,
                "detail": f"{'the task' if kind == 'cancel' else 'that context'} is no longer running",
            }
        return None, {"status": 400, "detail": f"unknown command {kind!r}"}

    async def serve_call(self, command: RuntimeCommand) -> None:
        """Run an outside invoke or hook (``runs.outside_calls``) and write its answer."""
        runtime = self.host.runtime
        assert runtime is not None
        try:
            outcome = await CALLS[command.kind](runtime, command.payload)
        except Exception as exc:  # a bug: answer it rather than leave the caller waiting
            log.exception("an outside %s failed", command.kind)
            outcome = None, {"status": 500, "detail": f"the worker failed on it ({type(exc).__name__})"}
        await asyncio.to_thread(self.answer, command, outcome)

    def answer(self, command: RuntimeCommand, outcome: tuple[Any, dict[str, Any] | None]) -> None:
        """Write the outcome of ``command`` once the recorder holds what it changed."""
        result, error = outcome
        self.host.recorder.flush(10)
        RuntimeCommand.objects.filter(pk=command.pk).update(
            status="failed" if error else "done", result=result, error=error, done_at=timezone.now()
        )

    async def redis_loop(self) -> None:
        """Wake the poll on a task pushed or a command published (REDIS_URL)."""
        client = aioredis.Redis.from_url(settings.REDIS_URL)
        pubsub = client.pubsub()
        try:
            await pubsub.subscribe(COMMAND_CHANNEL)
            while not self.stopping:
                try:
                    message = await pubsub.get_message(ignore_subscribe_messages=True, timeout=0.05)
                    if message is not None:
                        self.wake.set()
                    free = self.concurrency - len(self.running)
                    if free > 0 and await client.blpop([TASK_LIST], timeout=0.2):
                        self.wake.set()
                except aioredis.RedisError:
                    log.warning("Redis is not answering; the runtime worker polls the database meanwhile")
                    await asyncio.sleep(1)
        finally:
            await pubsub.aclose()
            await client.aclose()
