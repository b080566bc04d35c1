"""``python manage.py prune_snapshots [--keep N] [--days D] [--dry-run]`` (PRD §4.6 snapshots).

Deletes the snapshots of finished contexts beyond the newest ``--keep`` per context or older
than ``--days`` (defaults: TEAMCLAW_SNAPSHOT_RETENTION_COUNT / _DAYS). Running contexts are
never touched. Schedule it (cron, systemd timer) as often as you like; it is idempotent.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from monitoring.snapshot_retention import prune_snapshots


def positive(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise CommandError(f"expected a whole number, got {value!r}") from None
    if number < 1:
        raise CommandError(f"expected a number of at least 1, got {number}")
    return number


class Command(BaseCommand):
    help = "Prune snapshots of finished execution contexts by count and age (retention settings)."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--keep", type=positive, help="snapshots to keep per context (newest first)")
        parser.add_argument("--days", type=positive, help="delete snapshots older than this many days")
        parser.add_argument("--dry-run", action="store_true", help="count what would be deleted, delete nothing")

    def handle(self, *args: Any, **options: Any) -> None:
        result = prune_snapshots(keep=options["keep"], days=options["days"], dry_run=options["dry_run"])
        verb = "would delete" if result.dry_run else "deleted"
        self.stdout.write(
            f"{verb} {result.deleted} snapshot(s) in {result.contexts} context(s): "
            f"{result.by_age} older than the age limit, {result.by_count} beyond the per-context count"
        )
