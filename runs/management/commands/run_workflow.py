"""``python manage.py run_workflow requirement_review --input FILE [--output DIR] [--project SLUG]``.

Runs a built-in workflow in this process (a runtime worker of its own that takes only this
task, recording to the same database as the server; runs.dispatch), prints each agent's
progress as it happens and the artifact paths at the end. The server's pages and API reach
the task through the database: a tool confirmation is approved there, Cancel stops it; if
this process is killed, a server's worker resumes the task once its lease expires.
Exit status: 0 completed, 1 failed, 2 bad input.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any, cast

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from rich.console import Console
from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeElapsedColumn

from capabilities.models import Project
from monitoring.models import Task
from monitoring.outcome import task_outcome
from runs.host import RuntimeHost
from runs.local_tasks import own_task, run_own_task
from runs.tasks import DocumentError, validate_document
from teamclaw.runtime.events import ContextChanged, RuntimeEvent
from teamclaw.workflows import WORKFLOWS
from teamclaw.workflows.document import nothing_to_review

KEY_ARTIFACTS = ("requirement_final.md", "consolidation_report.json", "quality_report.json", "outcome.json")
"""The artifacts the summary names one by one (the others are in the same folder)."""


class RunProgress:
    """Event sink showing a run's progress: main's progress (the whole task's) and the step
    some agent is at. On a terminal one line with a bar (``rich.progress``), redrawn in place;
    elsewhere (a log, a pipe) one plain line each time main reaches a new step, without
    control characters, so a log reads ``[ 40%] experts review ...``."""

    def __init__(self, console: Console, write: Callable[[str], None]) -> None:
        self.write = write
        self.bar: Progress | None = None
        if console.is_terminal:
            self.bar = Progress(
                BarColumn(bar_width=30),
                TaskProgressColumn(),
                TextColumn("{task.description}", markup=False),
                TimeElapsedColumn(),
                console=console,
            )
            self.bar_id = self.bar.add_task("starting", total=100)
        self._main: tuple[int, str] = (0, "")
        self._lock = threading.Lock()

    def __enter__(self) -> RunProgress:
        if self.bar is not None:
            self.bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.stop()

    def publish(self, event: RuntimeEvent) -> None:
        if not isinstance(event, ContextChanged):
            return
        context = event.context
        with self._lock:
            main_step = context.role == "main" and (context.progress, context.current_step) != self._main
            if main_step:
                self._main = (context.progress, context.current_step)
            if self.bar is not None:
                self.bar.update(
                    self.bar_id,
                    completed=self._main[0],
                    description=f"{context.role}: {context.current_step}"[:60],
                )
            elif main_step:
                self.write(f"  [{context.progress:3d}%] {context.current_step}")


def tokens_line(task: Task) -> str:
    """``"86,462 (estimated: offline executor, no model called)"`` or ``"1,234"``: an offline
    run's tokens are an estimate, never a spend (README "offline")."""
    contexts = task.contexts.all()
    total = sum(c.total_tokens for c in contexts) or task.tokens_used
    if task.executor == "offline" or any(c.tokens_estimated for c in contexts):
        return f"≈ {total:,} (estimated: offline executor, no model called)"
    return f"{total:,}"


def outcome_lines(outcome: dict[str, Any] | None) -> list[str]:
    """The summary's lines on what came of a requirement review (``outcome.json``)."""
    if not outcome:
        return []
    if outcome.get("phase") != "review":
        return ["  Outcome:       the draft was kept, not reviewed"]
    quality = outcome.get("quality") or {}
    failed = ", ".join(quality.get("failed_checks") or [])
    return [
        f"  Outcome:       {'clean pass' if outcome.get('clean') else 'completed with findings'}",
        f"  Findings:      {len(outcome.get('reviewers') or [])} experts; {outcome.get('adopted', 0)} changes adopted, "
        f"{outcome.get('rejected', 0)} rejected, {outcome.get('contested', 0)} contested",
        f"  Open points:   {outcome.get('open_points', 0)} for you to answer (the task page lists them)",
        "  Quality check: passed"
        if quality.get("passed")
        else f"  Quality check: not passed yet ({failed}): expected while open points or proposals remain",
        *(f"  Warning:       {w}" for w in outcome.get("warnings") or []),
    ]


class Command(BaseCommand):
    help = "Run a built-in workflow (requirement_review) on a Markdown file and save its artifacts."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("workflow", choices=WORKFLOWS)
        parser.add_argument("--input", required=True, help="Markdown requirement document")
        parser.add_argument("--output", help="Folder for the artifacts (default: data/tasks/<task_id>)")
        parser.add_argument("--project", help="Project slug whose configuration applies")
        parser.add_argument("--title", default="")

    def handle(self, *args: Any, **options: Any) -> None:
        path = Path(options["input"])
        if not path.exists():
            raise CommandError(f"no such file: {path}", returncode=2)
        if not path.is_file():
            raise CommandError(f"not a regular file: {path}", returncode=2)
        if options["output"] and Path(options["output"]).exists() and not Path(options["output"]).is_dir():
            raise CommandError(f"--output {options['output']} exists and is not a folder", returncode=2)
        try:
            text = validate_document(path.read_bytes()[: settings.TEAMCLAW["MAX_DOCUMENT_BYTES"] + 1])
        except DocumentError as exc:
            raise CommandError(f"{path}: {exc.reason}", returncode=2) from None
        project = None
        if options.get("project"):
            project = Project.objects.filter(slug=options["project"]).first()
            if project is None:
                raise CommandError(f"project '{options['project']}' does not exist", returncode=2)
        workflow = options["workflow"]
        if workflow == "requirement_review" and (reason := nothing_to_review(text)):
            raise CommandError(f"{path}: the document {reason}", returncode=2)
        title = options["title"] or path.stem
        params: dict[str, Any] = {"workflow": workflow, "task_description": f"Review the requirement '{title}'"}
        if workflow == "requirement_review":
            params.update(input_markdown=text, document_name=path.name)
        # A runtime worker of its own that takes only this task (runs.dispatch), started first
        # so the task is its own from the moment it exists; the server's pages and API reach
        # it through the database (confirmations, instructions, cancel).
        host = RuntimeHost(name="cli", worker="command").start()
        assert host.runtime is not None and host.dispatcher is not None
        try:
            task = own_task(host, params, title, text, project)
            self.stdout.write(f"Task {task.id}: {workflow} on {path}")
            # Django's OutputWrapper forwards write, flush and isatty to the real stream
            console = Console(file=cast("IO[str]", self.stdout), highlight=False)
            with RunProgress(console, lambda line: self.stdout.write(line)) as progress:
                host.runtime.add_sink(progress)
                result = run_own_task(host, task)
        except KeyboardInterrupt:
            self.stderr.write("Interrupted: the task is given up; a running server (make run) resumes it.")
            sys.exit(130)
        finally:
            host.stop()
        output = Path(options["output"] or Path(settings.DATA_DIR) / "tasks" / task.id)
        self.report(task, result, output, verbose=options["verbosity"] > 1)

    def report(self, task: Task, result: Any, output: Path, *, verbose: bool) -> None:
        """Write the artifacts to ``output`` and end with the summary: status, what came of
        it, tokens (marked when estimated), where the artifacts are; exit 1 when it failed."""
        output.mkdir(parents=True, exist_ok=True)
        task.refresh_from_db()
        artifacts = list(task.artifacts.order_by("created_at", "id"))
        for artifact in artifacts:
            (output / artifact.name).write_text(artifact.content, encoding="utf-8")
        every = verbose or task.workflow != "requirement_review"
        named = [a.name for a in artifacts if every or a.name in KEY_ARTIFACTS]
        error = None if result.success else result.error
        lines = [
            "Summary",
            f"  Status:        {task.status}" + (f" ({error.code}: {error.message})" if error else ""),
            *outcome_lines(task_outcome(task)),
            f"  Tokens:        {tokens_line(task)}",
            f"  Artifacts:     {len(artifacts)} in {output}",
            *(f"  artifact: {output / name}" for name in named),
        ]
        self.stdout.write("\n".join(lines))
        if result.success:
            self.stdout.write(self.style.SUCCESS(f"Completed: {result.data['summary']}"))
            return
        self.stderr.write(self.style.ERROR(f"Failed: {error.code}: {error.message}" if error else "Failed"))
        sys.exit(1)
