"""Operators answering the open points a finished requirement review left them (seed 002
§6.6: what only the requirement owner can answer; issue 32 "an outcome an operator can act
on"), from the API (``POST /api/v1/tasks/{id}/open_points``) and the task page alike.

An answer is a ``monitoring.OpenPointAnswer`` row: never changed, so answering a point again
adds a row and the rows are the point's audit trail (who, what, when); the outcome shows the
newest (``monitoring.outcome.open_points``). The answer is the operator's record of the
decision; it does not rewrite ``requirement_final.md`` (a fork of the task re-runs the review
with it in hand).
"""

from __future__ import annotations

import logging
from typing import Any

from django.db import transaction
from django.utils import timezone

from monitoring.access import can_operate_task, visible_tasks
from monitoring.models import OpenPointAnswer, Task
from monitoring.outcome import open_points, task_outcome
from runs.tasks import check_plain_text
from teamclaw.errors import Conflict, DomainError, InvalidField, NotFound

log = logging.getLogger(__name__)

MAX_ANSWER_CHARS = 4000
"""As long as an interview answer may be (``runs.operator_inputs.MAX_ANSWER_CHARS``)."""


def _answerable_task(user: Any, task_id: str) -> Task:
    task = visible_tasks(user).filter(pk=task_id).first()
    if task is None:
        raise NotFound(f"there is no task {task_id[:80]}")
    if not can_operate_task(user, task):
        raise DomainError(
            "only the user who started this task or a staff user may answer its open points",
            status=403,
            code="permission_denied",
        )
    outcome = task_outcome(task)
    if not outcome or outcome.get("phase") != "review":
        raise Conflict(f"the task is {task.status} and has no review outcome yet: open points are answered once it has")
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
