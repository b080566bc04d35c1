"""``python manage.py watch_knowledge [--project SLUG ...] [--debounce-ms N] [--poll]``:
keep project folders indexed as their files change (issue 15; README "Knowledge").

It watches the folders of the projects named (every project with folder sources when none
is) with ``watchfiles`` (inotify and its kin, or polling with ``--poll``), first catches up
on what changed while nobody watched, then after each batch of changes (``--debounce-ms``,
1,600 ms by default, gathers a burst of writes into one) runs
``knowledge.folder_changes.refresh_project_folder`` on each project touched: only new and
changed files are cut again and removed ones dropped, in one transaction per project. A
refusal (the folder was removed, a file cannot be read) is printed and watching goes on.
SIGTERM or Ctrl-C stops it. Projects given folder sources after it started are watched from
its next start.
"""

from __future__ import annotations

import signal
import threading
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import close_old_connections
from watchfiles import watch

from capabilities.models import Project
from capabilities.snapshot import project_directory
from knowledge.folder_changes import FolderRefresh, refresh_project_folder
from knowledge.models import KnowledgeSource, Origin
from teamclaw.errors import DomainError


def watched_projects(slugs: list[str]) -> dict[str, Path]:
    """``slug -> folder`` (resolved) of the projects named, else of every project with folder
    sources. Raises CommandError for an unknown project or a folder that does not exist."""
    if slugs:
        projects = list(Project.objects.filter(slug__in=slugs))
        unknown = sorted(set(slugs) - {p.slug for p in projects})
        if unknown:
            raise CommandError(f"unknown project(s): {', '.join(unknown)}")
    else:
        with_folders = KnowledgeSource.objects.filter(origin=Origin.FOLDER).values("project")
        projects = list(Project.objects.filter(pk__in=with_folders))
    folders: dict[str, Path] = {}
    for project in projects:
        folder = project_directory(project)
        if not folder.is_dir():
            raise CommandError(f"the folder of project {project.slug} ({folder}) does not exist")
        folders[project.slug] = folder.resolve()
    return folders


def summary(slug: str, done: FolderRefresh) -> str:
    """One line of what a refresh did: counts, then the files skipped with why."""
    line = (
        f"{slug}: {len(done.added)} new, {len(done.updated)} changed, {len(done.removed)} removed, "
        f"{done.unchanged} unchanged"
    )
    if done.skipped:
        line += "; skipped " + "; ".join(f"{s['path']}: {s['reason']}" for s in done.skipped)
    return line


IDLE_WAKE_MS = 250  # how often an idle watch loop wakes (ms): also bounds the wait for the first batch


def touched_projects(folders: dict[str, Path], changes: set[tuple[Any, str]]) -> list[str]:
    """The projects (slugs, sorted) whose folder holds one of ``changes``' paths."""
    return sorted(
        slug
        for slug, folder in folders.items()
        if any(Path(path) == folder or folder in Path(path).parents for _change, path in changes)
    )


class Command(BaseCommand):
    help = "Keep project folders indexed: re-index their changed files as they change."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--project",
            action="append",
            default=[],
            metavar="SLUG",
            help="a project to watch (repeatable; default: every project with folder sources)",
        )
        parser.add_argument(
            "--debounce-ms",
            type=int,
            default=1600,
            help="gather changes for this long (ms) before re-indexing (default 1600)",
        )
        parser.add_argument(
            "--poll", action="store_true", help="poll the folders instead of OS notifications (network file systems)"
        )

    def refresh(self, slug: str) -> None:
        """Re-index what changed in ``slug``'s folder; a refusal is printed, not raised."""
        close_old_connections()
        try:
            done = refresh_project_folder(slug)
        except DomainError as refused:
            self.stderr.write(f"{slug}: not re-indexed: {refused.errors or refused}")
            return
        self.stdout.write(summary(slug, done))
        self.stdout.flush()

    def catch_up(self, folders: dict[str, Path]) -> None:
        """Re-index what changed while nobody watched, then say the folders are watched."""
        for slug in sorted(folders):
            self.refresh(slug)
        self.stdout.write("Watching " + ", ".join(f"{slug} ({folders[slug]})" for slug in sorted(folders)) + ".")
        self.stdout.flush()

    def handle(self, *args: Any, **options: Any) -> None:
        debounce = options["debounce_ms"]
        if not 10 <= debounce <= 60_000:
            raise CommandError("--debounce-ms must be between 10 and 60000")
        folders = watched_projects(options["project"])
        if not folders:
            raise CommandError("no project has folder sources yet: index a folder first, or name one with --project")
        stop = threading.Event()

        def request_stop(signum: int, frame: Any) -> None:
            stop.set()

        signal.signal(signal.SIGTERM, request_stop)
        signal.signal(signal.SIGINT, request_stop)
        caught_up = False
        # yield_on_timeout: the first (possibly empty) batch comes once the OS watches are in
        # place, so the catch-up runs then and nothing written in between slips through.
        for changes in watch(
            *folders.values(),
            debounce=debounce,
            stop_event=stop,
            raise_interrupt=False,
            force_polling=options["poll"] or None,
            yield_on_timeout=True,
            rust_timeout=IDLE_WAKE_MS,
        ):
            if not caught_up:
                caught_up = True
                self.catch_up(folders)
            for slug in touched_projects(folders, changes):
                self.refresh(slug)
        self.stdout.write("Stopped watching.")
