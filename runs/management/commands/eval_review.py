"""``python manage.py eval_review DIR [--reviewer engine|experts|model] [--details]``.

Runs a review over a folder of labelled requirement documents (one ``NAME.labels.yaml`` per
document, format in ``teamclaw.workflows.quality_eval``) and prints recall per category,
false alarms on clean lines and the totals, as ``name value`` lines and as a table (issue 27).
It is a benchmark, not a test: compare rule sets on your own documents with it.

``--reviewer engine`` (default) runs the offline requirement-quality engine; ``experts`` runs
the four offline experts of seed 002 §6.2 (their findings together); ``model`` runs a
``requirement_review`` task per document on whatever executors are configured
(``OPENAI_BASE_URL`` and ``TEAMCLAW_EXECUTOR`` or a role's executor; ``runs.review_eval``) and
scores its experts' review round, so models and prompt versions can be compared on your own
documents (about 12 model calls a document: three rounds of four experts).
Exit status: 0 done, 1 a review task failed (the rest is still scored and printed), 2 bad
input (missing folder, unreadable labels file, a document a task would refuse: empty, binary,
over ``TEAMCLAW_MAX_DOCUMENT_BYTES``, ``model`` with nothing configured on a model,
``model`` on a database that cannot be reached or is not migrated: run ``manage.py migrate``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError
from django.db import DEFAULT_DB_ALIAS, DatabaseError, connections
from django.db.migrations.executor import MigrationExecutor

from runs.host import RuntimeHost
from runs.review_eval import TaskReviewer, configured_executors
from runs.tasks import DocumentError, validate_document
from teamclaw.workflows.quality_eval import (
    CorpusError,
    Reviewer,
    Score,
    engine_reviewer,
    evaluate,
    experts_reviewer,
    metric_lines,
    read_corpus,
    table,
)


def _database_ready() -> None:
    """Refuse (``CommandError``, exit 2) when the database the review tasks are recorded in
    cannot be reached or has migrations not applied (``manage.py migrate`` not run yet)."""
    connection = connections[DEFAULT_DB_ALIAS]
    try:
        executor = MigrationExecutor(connection)
        pending = executor.migration_plan(executor.loader.graph.leaf_nodes())
    except DatabaseError as error:
        raise CommandError(
            f"--reviewer model: the database cannot be reached ({error}); check DATABASE_URL", returncode=2
        ) from None
    if pending:
        apps = sorted({migration.app_label for migration, _ in pending})
        raise CommandError(
            f"--reviewer model: the database has {len(pending)} migration(s) not applied ({', '.join(apps)}); "
            "run `python manage.py migrate` first",
            returncode=2,
        )


REVIEWERS: dict[str, Reviewer | None] = {"engine": engine_reviewer, "experts": experts_reviewer, "model": None}
"""The offline reviewers; ``model`` is a ``TaskReviewer`` on a runtime of this process."""


class Command(BaseCommand):
    help = "Measure a reviewer on labelled requirement documents (recall per category, false alarms)."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("directory", help="folder of NAME.md documents with NAME.labels.yaml labels")
        parser.add_argument("--reviewer", choices=sorted(REVIEWERS), default="engine")
        parser.add_argument("--details", action="store_true", help="also list each missed defect and false alarm")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            documents = read_corpus(Path(options["directory"]))
        except CorpusError as error:
            raise CommandError(str(error), returncode=2) from None
        if not documents:
            raise CommandError(f"{options['directory']}: no *.labels.yaml file", returncode=2)
        for document in documents:  # what a task would refuse, as ``POST /tasks`` does
            try:
                validate_document(document.text)
            except DocumentError as error:
                raise CommandError(
                    f"{document.name}.labels.yaml: field 'document': {error.reason}", returncode=2
                ) from None
        reviewer = REVIEWERS[options["reviewer"]]
        if reviewer is None:
            score, failures = self._model_score(documents)
        else:
            score, failures = evaluate(documents, reviewer), []
        self.stdout.write(f"review_documents {len(documents)}")
        for line in metric_lines(score):
            self.stdout.write(line)
        self.stdout.write("")
        for line in table(score):
            self.stdout.write(line)
        if options["details"]:
            self.stdout.write("\nmissed:")
            for miss in score.misses:
                self.stdout.write(f"  {miss}")
            self.stdout.write("false alarms:")
            for alarm in score.alarms:
                self.stdout.write(f"  {alarm}")
        if failures:
            raise CommandError("review tasks failed:\n  " + "\n  ".join(failures), returncode=1)

    def _model_score(self, documents: list[Any]) -> tuple[Score, list[str]]:
        _database_ready()
        try:
            executors = configured_executors()
        except DatabaseError as error:
            raise CommandError(f"--reviewer model: the database cannot be read ({error})", returncode=2) from None
        if executors.split("+") == ["offline"]:
            raise CommandError(
                "--reviewer model: no capability of requirement_review runs on a model here; set OPENAI_BASE_URL "
                "(and TEAMCLAW_EXECUTOR=openai) or choose an executor for the reviewer roles",
                returncode=2,
            )
        self.stdout.write(f"review_executors {executors}")
        host = RuntimeHost(name="eval", worker="command").start()
        try:
            reviewer = TaskReviewer(host)
            score = evaluate(documents, reviewer)
        finally:
            host.stop()
        self.stdout.write(f"review_tasks {' '.join(reviewer.tasks)}")
        return score, reviewer.failures
