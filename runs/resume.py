"""What an earlier attempt of a task left in the record, as a journal for the attempt that
resumes it, or for a fork of it (``teamclaw.runtime.resume``; docs/architecture.md §3).

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
from teamclaw.runtime.progress import RESUMED
from teamclaw.runtime.resume import RecordedArtifact, RecordedConfirmation, RecordedStep, ResumeJournal

UNDELIVERED = "undelivered: its worker stopped before delivering it; attempt %(attempt)s took the task over"
"""The ``reason`` of a message an earlier attempt left queued when its worker stopped."""


def recorded_steps(task_id: str) -> list[RecordedStep]:
    """The invokes of task ``task_id`` that got a response, in the order they completed
    (step 1 completed first; the operator's hand-over to main, when it completed, is last)."""
    requests = {
        row["correlation_id"]: row
        for row in Message.objects.filter(task_id=task_id, type="invoke_request")
        .exclude(status="denied")
        .values("correlation_id", "from_role", "payload")
    }
    steps = []
    for response in (
        Message.objects.filter(task_id=task_id, type="invoke_response")
        .order_by("seq")
        .values("correlation_id", "payload", "timestamp_ms")
    ):
        request = requests.get(response["correlation_id"])
        result = response["payload"].get("result")
        if request is None or not isinstance(result, dict) or not request["from_role"]:
            continue
        params = request["payload"].get("params")
        if isinstance(params, dict):
            steps.append(
                RecordedStep(
                    request["from_role"],
                    request["payload"].get("capability_id", ""),
                    params,
                    result,
                    response["timestamp_ms"] / 1000,
                )
            )
    return steps


def recorded_artifacts(task_id: str, until: float | None = None) -> list[RecordedArtifact]:
    """The artifacts of task ``task_id`` in the order written; with ``until`` (epoch s) only
    those written by then."""
    rows = Artifact.objects.filter(task_id=task_id).order_by("created_at", "id")
    return [
        RecordedArtifact(a.name, a.content, a.content_type, a.role, a.context_id or None, a.created_at.timestamp())
        for a in rows
        if until is None or a.created_at.timestamp() <= until
    ]


def recorded_confirmations(task_id: str) -> list[RecordedConfirmation]:
    """The confirmations (tool uses and operator inputs) of task ``task_id``, oldest first."""
    return [
        RecordedConfirmation(
            id=row.id,
            role=row.role,
            tool=row.tool,
            args=row.args,
            status=row.status,
            decided_by=row.decided_by,
            expires_at=row.expires_at.timestamp(),
            created_at=row.created_at.timestamp(),
            answer=row.answer if row.status == "answered" else None,
        )
        for row in ToolConfirmation.objects.filter(task_id=task_id).order_by("created_at", "id")
    ]


def fork_origin(task: Task) -> tuple[str, int] | None:
    """``(source task id, from_step)`` when ``task`` is a fork (``runs.tasks.fork_task``)."""
    fork = (task.run_spec or {}).get("fork")
    if not isinstance(fork, dict):
        return None
    return str(fork["task_id"]), int(fork["from_step"])


def held_rejections(task: Task) -> list[str]:
    """``role/tool`` of the tool uses a fork holds rejected (``runs.fork_policy``): those its
    source's operator rejected, unless the fork was made to reconsider them."""
    fork = (task.run_spec or {}).get("fork")
    held = fork.get("rejected_tools") if isinstance(fork, dict) else None
    return [str(item) for item in held] if isinstance(held, list) else []


def forked_steps(source_id: str, from_step: int) -> tuple[list[RecordedStep], list[RecordedArtifact]]:
    """The first ``from_step`` completed steps of task ``source_id`` and the artifacts it had
    written when the last of them completed (all of them for its last step, none for 0)."""
    steps = recorded_steps(source_id)[:from_step]
    if not steps:
        return [], []
    return steps, recorded_artifacts(source_id, until=steps[-1].completed_at + 0.001)


def journal_for(task: Task) -> ResumeJournal | None:
    """The journal ``task``'s attempt ``task.attempt`` runs with: None for a first attempt of a
    new task. A fork starts with its source's first ``from_step`` steps and the artifacts
    written by then; a resumed attempt adds what its own earlier attempts recorded, and their
    tool confirmations.

    The contexts an earlier attempt left open end ``terminated`` (with the reason in
    ``current_step``): the resumed attempt's agents get contexts of their own; the messages
    it left ``queued`` end ``dropped`` with the reason ``UNDELIVERED`` (nothing will deliver
    them: the mailboxes were the dead worker's). The tokens
    those contexts were charged carry over (``tokens_spent``): the task's count and budget go
    on from them.
    """
    origin = fork_origin(task)
    if task.attempt <= 1 and origin is None:
        return None
    steps, artifacts = forked_steps(*origin) if origin else ([], [])
    confirmations: list[RecordedConfirmation] = []
    tokens_used, tokens_estimated = 0, False
    if task.attempt > 1:
        with transaction.atomic():
            ExecutionContext.objects.filter(task_id=task.id).exclude(status__in=FINAL_CONTEXT_STATUSES).update(
                status="terminated",
                current_step=RESUMED % {"attempt": task.attempt},
                updated_at=timezone.now(),
            )
            # what the earlier attempt's mailboxes still held died with its worker
            Message.objects.filter(task_id=task.id, status="queued").update(
                status="dropped", reason=UNDELIVERED % {"attempt": task.attempt}
            )
        steps += recorded_steps(task.id)
        artifacts += recorded_artifacts(task.id)
        confirmations = recorded_confirmations(task.id)
        tokens_used, tokens_estimated = tokens_spent(task.id)
    return ResumeJournal.of(
        task.attempt,
        steps,
        confirmations,
        artifacts,
        fork_of=origin[0] if origin else None,
        tokens_used=tokens_used,
        tokens_estimated=tokens_estimated,
        rejected_tools=held_rejections(task),
    )


def tokens_spent(task_id: str) -> tuple[int, bool]:
    """``(tokens, estimated)`` the recorded contexts of ``task_id`` were charged (their
    ``resource_usage``, as the token statistics sum them): what its earlier attempts used."""
    tokens, estimated = 0, False
    for usage in ExecutionContext.objects.filter(task_id=task_id).values_list("resource_usage", flat=True):
        if isinstance(usage, dict):
            total = usage.get("total_tokens")
            tokens += total if isinstance(total, int) and total > 0 else 0
            estimated = estimated or bool(usage.get("estimated"))
    return tokens, estimated
