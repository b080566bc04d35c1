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
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from capabilities.models import Project
from runs.host import RuntimeHost
from runs.local_tasks import own_task, run_own_task
from runs.tasks import DocumentError, validate_document
from teamclaw.runtime.events import ContextChanged, RuntimeEvent
from teamclaw.workflows import WORKFLOWS
from teamclaw.workflows.document import nothing_to_review


class ProgressPrinter:
    """Event sink that prints context progress and failures, one line per change."""

    def __init__(self, write: Any) -> None:
        self.write = write
        self._last: dict[str, tuple[str, int, str]] = {}
        self._lock = threading.Lock()

    def publish(self, event: RuntimeEvent) -> None:
        if not isinstance(event, ContextChanged):
            return
        context = event.context
        key = (str(context.status), context.progress, context.current_step)
        with self._lock:
            if self._last.get(context.id) == key:
                return
            self._last[context.id] = key
        self.write(f"  [{context.progress:3d}%] {context.role:<14} {context.status!s:<17} {context.current_step}")


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
            host.runtime.add_sink(ProgressPrinter(lambda line: self.stdout.write(line)))
            self.stdout.write(f"Task {task.id}: {workflow} on {path}")
            result = run_own_task(host, task)
        except KeyboardInterrupt:
            self.stderr.write("Interrupted: the task is given up; a running server (make run) resumes it.")
            sys.exit(130)
        finally:
            host.stop()
        output = Path(options["output"] or Path(settings.DATA_DIR) / "tasks" / task.id)
        output.mkdir(parents=True, exist_ok=True)
        task.refresh_from_db()
        for artifact in task.artifacts.order_by("created_at", "id"):
            target = output / artifact.name
            target.write_text(artifact.content, encoding="utf-8")
            self.stdout.write(f"  artifact: {target}")
        if result.success:
            self.stdout.write(self.style.SUCCESS(f"Completed: {result.data['summary']}"))
            return
        error = result.error
        self.stderr.write(self.style.ERROR(f"Failed: {error.code}: {error.message}" if error else "Failed"))
        sys.exit(1)
