"""Operators answering the open points a finished requirement review left them (seed 002
§6.6: what only the requirement owner can answer; issue 32 "an outcome an operator can act
on"), from the API (``POST /api/v1/tasks/{id}/open_points``) and the task page alike.

An answer is a ``monitoring.OpenPointAnswer`` row: never changed, so answering a point again
adds a row and the rows are the point's audit trail (who, what, when); the outcome shows the
newest (``monitoring.outcome.open_points``). The answer is the operator's record of the
decision; it never rewrites ``requirement_final.md``. ``revise_final_document`` (``POST
/api/v1/tasks/{id}/revisions``, the task page's "Revise the final document") writes the
answers into a new version ``requirement_final.r<N>.md`` (``teamclaw.workflows.revision``),
keeping the original and every earlier version.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from monitoring.access import can_operate_task, visible_tasks
from monitoring.models import Artifact, OpenPointAnswer, Task
from monitoring.outcome import final_revisions, open_points, task_outcome
from runs.tasks import check_plain_text
from teamclaw.errors import Conflict, DomainError, InvalidField, NotFound
from teamclaw.labels import worded
from teamclaw.workflows.consolidation import quality_check
from teamclaw.workflows.revision import report_name, revise, revision_name

log = logging.getLogger(__name__)

MAX_ANSWER_CHARS = 4000
"""As long as an interview answer may be (``runs.operator_inputs.MAX_ANSWER_CHARS``)."""


def _answerable_task(user: Any, task_id: str) -> Task:
    task = visible_tasks(user).filter(pk=task_id).first()
    if task is None:
        raise NotFound(f"there is no task {task_id[:80]}")
    if not can_operate_task(user, task):
        raise DomainError(
            worded(_("only the user who started this task or a staff user may answer its open points")),
            status=403,
            code="permission_denied",
        )
    outcome = task_outcome(task)
    if not outcome or outcome.get("phase") != "review":
        raise Conflict(
            f"the task is {task.status} and has no review outcome yet: open points are answered once it has",
            code="no_outcome",
        )
    return task


def _clean_answer(answer: object) -> str:
    if not isinstance(answer, str):
        raise InvalidField("must be text", "answer")
    text = check_plain_text(answer.replace("\r\n", "\n"), "answer").strip()
    if not text:
        raise InvalidField("may not be blank", "answer")
    if len(text) > MAX_ANSWER_CHARS:
        raise InvalidField(f"at most {MAX_ANSWER_CHARS:,} characters (this one has {len(text):,})", "answer")
    return text


def answer_open_point(user: Any, task_id: str, point_id: object, answer: object) -> dict[str, Any]:
    """Record ``user``'s ``answer`` to the open point ``point_id`` of task ``task_id``; returns
    the point as ``monitoring.outcome.open_points`` shows it now. Raises NotFound (404) for a
    task the user may not see, DomainError 403 for one they may not act on, Conflict (409)
    before the review wrote its outcome (``outcome.json``: the panel shows the points from
    then on, a moment before the task is recorded completed), InvalidField (400) naming
    ``point`` (not one of this task's open points) or ``answer`` (not text, blank, a control
    character, over 4,000 characters). Nothing is written when it raises."""
    task = _answerable_task(user, task_id)
    points = {p["id"]: p for p in open_points(task)}
    if not isinstance(point_id, str) or point_id not in points:
        known = ", ".join(list(points)[:20]) or "none"
        raise InvalidField(f"not an open point of this task (its open points: {known})", "point")
    text = _clean_answer(answer)
    with transaction.atomic():
        OpenPointAnswer.objects.create(
            task=task,
            point_id=point_id,
            question=points[point_id]["question"],
            answer=text,
            answered_by=user if getattr(user, "is_authenticated", False) else None,
            answered_at=timezone.now(),
        )
    log.info("open point %s of task %s answered by %s", point_id, task.id, getattr(user, "username", ""))
    return next(p for p in open_points(task) if p["id"] == point_id)


FINAL = "requirement_final.md"


def _document_language(task: Task) -> str:
    report = Artifact.objects.filter(task_id=task.id, name="consolidation_report.json").values_list(
        "content", flat=True
    )
    try:
        language = json.loads(report.first() or "{}").get("language")
    except (ValueError, AttributeError):
        language = None
    return "zh" if language == "zh" else "en"


def _store(task: Task, text: str, report: dict[str, Any]) -> dict[str, Any]:
    """A new version of the final document and its report (never overwriting one)."""
    version = max((r["version"] for r in final_revisions(task)), default=0) + 1
    now = timezone.now()
    report = {"version": version, "based_on": FINAL, **report}
    try:
        with transaction.atomic():
            for name, content, kind in (
                (revision_name(version), text, "text/markdown"),
                (report_name(version), json.dumps(report, ensure_ascii=False), "application/json"),
            ):
                Artifact.objects.create(
                    task=task, name=name, content=content, content_type=kind, role="operator", created_at=now
                )
    except IntegrityError:
        raise Conflict(
            "another revision of this document was written at the same moment: try again", code="revision_race"
        ) from None
    return next(r for r in final_revisions(task) if r["version"] == version)


def recheck(task: Task, text: str) -> dict[str, Any]:
    """The §6.7 quality check (``consolidation.quality_check``) re-run on a revised final
    document ``text`` against the task's ``requirement.md``: ``{passed, failed_checks: [name],
    findings: [str]}``, as ``outcome.json``'s ``quality`` holds it for the first final
    document, so the outcome shows what still stands in the newest version."""
    original = Artifact.objects.filter(task_id=task.id, name="requirement.md").values_list("content", flat=True)
    checked = quality_check(text, original.first() or "")
    return {
        "passed": checked["passed"],
        "failed_checks": [c["name"] for c in checked["checks"] if not c["passed"]],
        "findings": list(dict.fromkeys(f for c in checked["checks"] for f in c["findings"])),
    }


def revise_final_document(user: Any, task_id: str) -> tuple[dict[str, Any], bool]:
    """Write the operator's answers into a new version of task ``task_id``'s final document
    (``teamclaw.workflows.revision.revise``): ``(revision, created)`` where ``revision`` is as
    ``monitoring.outcome.final_revisions`` lists it and ``created`` is False when the newest
    revision already reads exactly so (nothing new is written). ``requirement_final.md`` and
    the earlier versions are never changed. Raises NotFound (404) for a task the user may not
    see, DomainError 403 for one they may not act on, Conflict (409) before the review's
    outcome, without a final document, or while no open point has an answer."""
    task = _answerable_task(user, task_id)
    final = Artifact.objects.filter(task_id=task.id, name=FINAL).values_list("content", flat=True).first()
    if final is None:
        raise Conflict(f"the task has no {FINAL} to revise", code="no_final_document")
    points = open_points(task)
    if not any(p["answer"] for p in points):
        raise Conflict(
            "no open point has an answer yet: answer at least one, then revise the document", code="no_answer"
        )
    text, report = revise(final, points, _document_language(task))
    report["quality"] = recheck(task, text)
    earlier = final_revisions(task)
    if earlier:
        newest = Artifact.objects.filter(task_id=task.id, name=earlier[-1]["name"]).values_list("content", flat=True)
        if newest.first() == text:
            return earlier[-1], False
    revision = _store(task, text, report)
    log.info("final document of task %s revised as %s by %s", task.id, revision["name"], getattr(user, "username", ""))
    return revision, True
