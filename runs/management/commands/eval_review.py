"""``python manage.py eval_review DIR [--reviewer engine|experts] [--details]``.

Runs a review over a folder of labelled requirement documents (one ``NAME.labels.yaml`` per
document, format in ``teamclaw.workflows.quality_eval``) and prints recall per category,
false alarms on clean lines and the totals, as ``name value`` lines and as a table (issue 27).
It is a benchmark, not a test: compare rule sets on your own documents with it.

``--reviewer engine`` (default) runs the offline requirement-quality engine; ``experts`` runs
the four offline experts of seed 002 §6.2 (their findings together). Model executors are not
run here: a model review needs a task and a runtime (``run_workflow``).
Exit status: 0 done, 2 bad input (missing folder, unreadable labels file).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from teamclaw.workflows.quality_eval import (
    CorpusError,
    engine_reviewer,
    evaluate,
    experts_reviewer,
    metric_lines,
    read_corpus,
    table,
)

REVIEWERS = {"engine": engine_reviewer, "experts": experts_reviewer}


class Command(BaseCommand):
    help = "Measure the offline review on labelled requirement documents (recall per category, false alarms)."

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
        score = evaluate(documents, REVIEWERS[options["reviewer"]])
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
