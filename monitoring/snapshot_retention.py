"""Snapshot retention: keep the newest N snapshots per context and none older than D days (PRD §4.6).

Settings ``TEAMCLAW["SNAPSHOT_RETENTION_COUNT"]`` (``TEAMCLAW_SNAPSHOT_RETENTION_COUNT``,
500 by default) and ``TEAMCLAW["SNAPSHOT_RETENTION_DAYS"]`` (``TEAMCLAW_SNAPSHOT_RETENTION_DAYS``,
30 by default). A snapshot is pruned when it is beyond the newest ``count`` of its context
**or** older than ``days``. Contexts still running (a status other than completed, failed or
terminated, or a task still running) are never touched: their replay must stay whole.
``python manage.py prune_snapshots`` applies it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Count, QuerySet
from django.utils import timezone

from monitoring.live_items import FINAL_CONTEXT_STATUSES
from monitoring.models import ExecutionContext, Snapshot


@dataclass(slots=True)
class PruneResult:
    """What a prune did (or would do, on a dry run): snapshot and context counts."""

    by_age: int = 0
    by_count: int = 0
    contexts: int = 0
    dry_run: bool = False

    @property
    def deleted(self) -> int:
        return self.by_age + self.by_count


def finished_contexts() -> QuerySet[ExecutionContext]:
    """Contexts whose status is final and whose task is no longer running."""
    return ExecutionContext.objects.filter(status__in=FINAL_CONTEXT_STATUSES).exclude(task__status="running")


def prune_snapshots(
    *, keep: int | None = None, days: int | None = None, now: datetime | None = None, dry_run: bool = False
) -> PruneResult:
    """Apply the retention rule (see module docstring); ``keep`` and ``days`` default to the
    settings. Raises ValueError when either is below 1."""
    conf = settings.TEAMCLAW
    keep = conf["SNAPSHOT_RETENTION_COUNT"] if keep is None else keep
    days = conf["SNAPSHOT_RETENTION_DAYS"] if days is None else days
    if keep < 1 or days < 1:
        raise ValueError("keep and days must be at least 1")
    cutoff = (now or timezone.now()) - timedelta(days=days)
    result = PruneResult(dry_run=dry_run)
    finished = finished_contexts().values("id")
    with transaction.atomic():
        old = Snapshot.objects.filter(context__in=finished, created_at__lt=cutoff)
        touched = set(old.values_list("context_id", flat=True).distinct())
        result.by_age = old.count() if dry_run else old.delete()[0]
        crowded = (
            Snapshot.objects.filter(context__in=finished, created_at__gte=cutoff)
            .values("context_id")
            .annotate(n=Count("id"))
            .filter(n__gt=keep)
        )
        for row in crowded:
            context_id = row["context_id"]
            recent = Snapshot.objects.filter(context_id=context_id, created_at__gte=cutoff)
            boundary = recent.order_by("-sequence").values_list("sequence", flat=True)[keep - 1]
            extra = recent.filter(sequence__lt=boundary)
            result.by_count += extra.count() if dry_run else extra.delete()[0]
            touched.add(context_id)
        result.contexts = len(touched)
        if dry_run:
            transaction.set_rollback(True)
    return result
