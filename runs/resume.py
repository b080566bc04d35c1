"""What an earlier attempt of a task left in the record, as a journal for the attempt that
resumes it (``teamclaw.runtime.resume``; docs/architecture.md §3).

A completed step is an ``invoke_request`` that reached its callee and an ``invoke_response``
with the same correlation id; its result is what the resumed attempt gets instead of
executing the step again. Tool confirmations of the task carry over with their ids, so an
operator deciding one on the page decides it for the resumed attempt too.
"""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from monitoring.models import Artifact, ExecutionContext, Message, Task, ToolConfirmation
from monitoring.recovery import FINAL_CONTEXT_STATUSES
from teamclaw.runtime.resume import RecordedArtifact, RecordedConfirmation, RecordedStep, ResumeJournal


def recorded_steps(task_id: str) -> list[RecordedStep]:
    """The invokes of task ``task_id`` that got a response, in the order they were sent."""
    results = {
        row["correlation_id"]: row["payload"].get("result")
        for row in Message.objects.filter(task_id=task_id, type="invoke_response").values("correlation_id", "payload")
    }
    steps = []
    for row in (
        Message.objects.filter(task_id=task_id, type="invoke_request")
        .exclude(status="denied")
        .order_by("seq")
        .values("correlation_id", "from_role", "payload")
    ):
        result = results.get(row["correlation_id"])
        payload = row["payload"]
        if isinstance(result, dict) and row["from_role"] and isinstance(payload.get("params"), dict):
            steps.append(RecordedStep(row["from_role"], payload.get("capability_id", ""), payload["params"], result))
    return steps


def recorded_confirmations(task_id: str) -> list[RecordedConfirmation]:
    """The tool confirmations of task ``task_id``, oldest first."""
    return [
        RecordedConfirmation(
            id=row.id,
            role=row.role,
            tool=row.tool,
            args=row.args,
            status=row.status,
            decided_by=row.decided_by,
            expires_at=row.expires_at.timestamp(),
        )
        for row in ToolConfirmation.objects.filter(task_id=task_id).order_by("created_at", "id")
    ]


def journal_for(task: Task) -> ResumeJournal | None:
    """The journal for ``task``'s attempt ``task.attempt`` (None for a first attempt).

    The contexts the earlier attempt left open end ``terminated`` (with the reason in
    ``current_step``): the resumed attempt's agents get contexts of their own.
    """
    if task.attempt <= 1:
        return None
    with transaction.atomic():
        ExecutionContext.objects.filter(task_id=task.id).exclude(status__in=FINAL_CONTEXT_STATUSES).update(
            status="terminated",
            current_step=f"its worker stopped; the task resumed (attempt {task.attempt})",
            updated_at=timezone.now(),
        )
    artifacts = [
        RecordedArtifact(a.name, a.content, a.content_type, a.role, a.context_id or None, a.created_at.timestamp())
        for a in Artifact.objects.filter(task_id=task.id).order_by("created_at", "id")
    ]
    return ResumeJournal.of(task.attempt, recorded_steps(task.id), recorded_confirmations(task.id), artifacts)
