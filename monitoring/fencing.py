"""Fencing the record: a worker that lost a task writes nothing more of it (issue 28 item 2;
docs/architecture.md §3 "Fencing"; README "Scaling out").

Every row of a task's record a runtime process writes (its messages and their statuses,
contexts, snapshots, artifacts, tool confirmations, the task's own status) goes through the
recorder's ``BatchWriter.write``, one transaction per batch: that is the choke point. A
worker that claims a task holds a *fence* on it: the task's ``attempt`` it claimed
(``Task.attempt``, bumped by every claim). Inside the batch's transaction ``fenced_out``
locks the rows of the fenced tasks the batch touches (``SELECT ... FOR UPDATE`` on
PostgreSQL, ordered by id; SQLite's writing transactions are serialized already) and
removes from the batch every row of a task whose recorded attempt moved on: another worker
took it over while this one was paused past its lease. A claim that comes while the batch
holds the lock skips the row until its next poll, so a write either lands
before the takeover, and the new owner's resume reads it, or not at all.

Tasks without a fence (a standalone invoke, a hook, a task this process started without the
dispatcher) are written as before.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.db import connection

from monitoring.models import ExecutionContext, Message, Task

BatchRows = Any
"""A ``monitoring.recorder.BatchRows`` (named, not imported: the recorder imports this module)."""

TASK_ID = 8
"""Index of ``task_id`` in a Message row (``monitoring.recorder.MESSAGE_COLUMNS``)."""
SNAPSHOT_CONTEXT = 1
"""Index of ``context_id`` in a Snapshot row (``monitoring.recorder.SNAPSHOT_COLUMNS``)."""


def _context_tasks(rows: BatchRows) -> dict[str, str]:
    """Context id -> task id of every context the batch writes or snapshots (the ones not in
    the batch read from the record)."""
    found: dict[str, str] = {}
    for context_id, context in rows.contexts.items():
        found[context_id] = context["task_id"] if isinstance(context, dict) else context.task_id
    missing = {snap[SNAPSHOT_CONTEXT] for snap in rows.snapshots} - found.keys()
    if missing:
        found.update(ExecutionContext.objects.filter(pk__in=missing).values_list("pk", "task_id"))
    return found


def _message_tasks(rows: BatchRows) -> dict[str, str]:
    """Message id -> task id of every message the batch inserts or changes the status of."""
    found = {message_id: row[TASK_ID] for message_id, row in rows.new_messages.items()}
    missing = rows.status_updates.keys() - found.keys()
    if missing:
        found.update(Message.objects.filter(pk__in=missing).values_list("pk", "task_id"))
    return found


def fenced_out(rows: BatchRows, fences: Mapping[str, int]) -> set[str]:
    """Within the batch's transaction: the ids of the tasks of ``rows`` whose recorded attempt
    is no longer the one this process holds in ``fences`` (task id -> attempt), with every
    row of theirs removed from ``rows`` (module doc). Locks the fenced tasks' rows until the
    transaction ends. Empty (and no query) when the batch touches no fenced task."""
    if not fences:
        return set()
    contexts = _context_tasks(rows)
    messages = _message_tasks(rows)
    touched = (
        set(rows.tasks)
        | set(contexts.values())
        | set(messages.values())
        | {task_id for task_id, _ in rows.artifacts}
        | {confirmation.task_id for confirmation in rows.confirmations.values()}
    ) & fences.keys()
    if not touched:
        return set()
    recorded = _locked_attempts(sorted(touched))
    stale = {task_id for task_id in touched if task_id in recorded and recorded[task_id] != fences[task_id]}
    if stale:
        _drop(rows, stale, contexts, messages)
    return stale


def _locked_attempts(task_ids: list[str]) -> dict[str, int]:
    """Task id -> recorded attempt of ``task_ids``, their rows locked ``FOR KEY SHARE`` on
    PostgreSQL until the transaction ends: a claim (``SELECT ... FOR UPDATE SKIP LOCKED``)
    skips them meanwhile, while the owner's heartbeat (a plain UPDATE of the lease) is not
    held up by a long batch, so its leases never lapse for it."""
    table = connection.ops.quote_name(Task._meta.db_table)
    lock = " FOR KEY SHARE" if connection.vendor == "postgresql" else ""
    marks = ", ".join(["%s"] * len(task_ids))
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT id, attempt FROM {table} WHERE id IN ({marks}) ORDER BY id{lock}", task_ids)
        return {str(task_id): int(attempt) for task_id, attempt in cursor.fetchall()}


def _drop(rows: BatchRows, stale: set[str], contexts: dict[str, str], messages: dict[str, str]) -> None:
    """Remove every row of the ``stale`` tasks from ``rows``."""

    def keep(mapping: dict[Any, Any], task_of: Any) -> None:
        for key in [key for key, value in mapping.items() if task_of(key, value) in stale]:
            del mapping[key]

    keep(rows.tasks, lambda task_id, _: task_id)
    keep(rows.contexts, lambda context_id, _: contexts.get(context_id))
    keep(rows.new_messages, lambda message_id, _: messages.get(message_id))
    keep(rows.status_updates, lambda message_id, _: messages.get(message_id))
    keep(rows.artifacts, lambda key, _: key[0])
    keep(rows.confirmations, lambda _, confirmation: confirmation.task_id)
    rows.snapshots[:] = [snap for snap in rows.snapshots if contexts.get(snap[SNAPSHOT_CONTEXT]) not in stale]
    rows.snapshot_messages[:] = [ref for ref in rows.snapshot_messages if contexts.get(ref[0]) not in stale]
