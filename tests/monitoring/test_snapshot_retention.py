"""Snapshot retention: count and age per context, never touching running contexts (PRD §4.6)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from monitoring.models import ExecutionContext, Snapshot, Task
from monitoring.snapshot_retention import prune_snapshots

NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)


def context_with_snapshots(name: str, *, status: str, task_status: str, count: int, age_days: float = 0):
    task = Task.objects.create(id=f"task-{name}", status=task_status)
    created = NOW - timedelta(days=age_days)
    context = ExecutionContext.objects.create(
        id=f"ctx-{name}",
        task=task,
        instance_id=f"main-{name}",
        role="main",
        status=status,
        created_at=created,
        updated_at=created,
    )
    Snapshot.objects.bulk_create(
        Snapshot(
            id=f"{name}-{i}",
            context=context,
            type="auto",
            trigger="start" if i == 1 else f"after invoke x{i}",
            sequence=i,
            state={"n": i},
            created_at=created + timedelta(minutes=i),
        )
        for i in range(1, count + 1)
    )
    return context


def sequences(context) -> list[int]:
    return list(context.snapshots.order_by("sequence").values_list("sequence", flat=True))


@pytest.mark.django_db
def test_keeps_the_newest_n_per_finished_context():
    done = context_with_snapshots("done", status="completed", task_status="completed", count=8)
    small = context_with_snapshots("small", status="failed", task_status="failed", count=2)
    result = prune_snapshots(keep=3, days=30, now=NOW)
    assert sequences(done) == [6, 7, 8]
    assert sequences(small) == [1, 2]
    assert (result.by_count, result.by_age, result.contexts) == (5, 0, 1)


@pytest.mark.django_db
def test_drops_snapshots_older_than_the_age_limit():
    old = context_with_snapshots("old", status="completed", task_status="completed", count=4, age_days=40)
    fresh = context_with_snapshots("fresh", status="completed", task_status="completed", count=4, age_days=1)
    result = prune_snapshots(keep=100, days=30, now=NOW)
    assert sequences(old) == []
    assert sequences(fresh) == [1, 2, 3, 4]
    assert result.by_age == 4


@pytest.mark.django_db
def test_running_contexts_are_never_touched():
    running = context_with_snapshots("run", status="executing", task_status="running", count=9, age_days=90)
    finished_in_running_task = context_with_snapshots("half", status="completed", task_status="running", count=9)
    prune_snapshots(keep=1, days=1, now=NOW)
    assert sequences(running) == list(range(1, 10))
    assert sequences(finished_in_running_task) == list(range(1, 10))


@pytest.mark.django_db
def test_dry_run_counts_without_deleting():
    done = context_with_snapshots("dry", status="completed", task_status="completed", count=6, age_days=0)
    result = prune_snapshots(keep=2, days=30, now=NOW, dry_run=True)
    assert result.by_count == 4
    assert sequences(done) == [1, 2, 3, 4, 5, 6]


@pytest.mark.django_db
def test_the_command_uses_the_settings_and_reports(settings):
    settings.TEAMCLAW = {**settings.TEAMCLAW, "SNAPSHOT_RETENTION_COUNT": 2, "SNAPSHOT_RETENTION_DAYS": 365}
    now = timezone.now()
    task = Task.objects.create(id="task-cmd", status="completed")
    context = ExecutionContext.objects.create(
        id="ctx-cmd", task=task, instance_id="pm-1", role="pm", status="completed", created_at=now, updated_at=now
    )
    Snapshot.objects.bulk_create(
        Snapshot(id=f"cmd-{i}", context=context, type="auto", trigger="t", sequence=i, state={}, created_at=now)
        for i in range(1, 6)
    )
    out = StringIO()
    call_command("prune_snapshots", "--dry-run", stdout=out)
    assert "would delete 3 snapshot(s) in 1 context(s)" in out.getvalue()
    assert context.snapshots.count() == 5
    out = StringIO()
    call_command("prune_snapshots", stdout=out)
    assert "deleted 3 snapshot(s)" in out.getvalue()
    assert sequences(context) == [4, 5]
    with pytest.raises(CommandError, match="at least 1"):
        call_command("prune_snapshots", "--keep", "0")
