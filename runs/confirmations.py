"""Operators deciding tool confirmations (PRD §4.7 ⚠️ 需要用户确认), from any process.

The waiting tool call lives in the runtime of whichever worker runs the task; the decision
lives on the record. ``decide`` writes it there (once: a compare-and-swap from ``pending``),
then applies it at once when this process runs the task; any other owner applies it on its
next poll (``runs.dispatch``, at most 250 ms), and a task resumed after a crash finds it in its
journal. So a terminal's ``run_workflow`` waiting for a confirmation is approved on the page.
"""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from monitoring.models import Task, ToolConfirmation
from runs.dispatch import publish_wake
from runs.host import current_host
from teamclaw.errors import DomainError, InvalidField
from teamclaw.labels import label_lazy, worded

STATUSES = ("pending", "approved", "rejected", "expired")
MAX_REASON_CHARS = 500
"""Longest rejection reason kept on a confirmation (characters)."""


class ConfirmationError(DomainError):
    """A decision that cannot be applied; ``status`` is the HTTP status that fits (404/409)."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message, status=status)


def already_decided(confirmation_id: object, status: str) -> str:
    """ "confirmation X is already approved" (the status worded), in the reader's language."""
    return worded(
        _("confirmation %(id)s is already %(status)s"), id=confirmation_id, status=label_lazy(status, "status")
    )


def confirmation_dict(row: ToolConfirmation) -> dict[str, Any]:
    """The API shape of a confirmation: ``{id, context_id, instance_id, role, task_id,
    project_id, tool, args, status, created_at, expires_at, decided_by, decided_at, reason}``
    (epoch s; ``reason`` a rejection's reason when one was given, else None)."""
    return {
        "id": row.id,
        "context_id": row.context_id,
        "instance_id": row.instance_id,
        "role": row.role,
        "task_id": row.task_id,
        "project_id": row.project_id,
        "tool": row.tool,
        "args": row.args,
        "status": row.status,
        "created_at": row.created_at.timestamp(),
        "expires_at": row.expires_at.timestamp(),
        "decided_by": row.decided_by or None,
        "decided_at": row.decided_at.timestamp() if row.decided_at else None,
        "reason": (row.answer or {}).get("reason") if row.kind == "tool" and isinstance(row.answer, dict) else None,
    }


def list_confirmations(*, task_id: str | None = None, status: str | None = None) -> QuerySet[ToolConfirmation]:
    """Tool confirmations newest first, of one task and/or in one status. Raises InvalidField
    (400) for a status outside pending / approved / rejected / expired or a blank filter."""
    rows = ToolConfirmation.objects.filter(kind="tool").order_by("-created_at", "-id")
    if task_id is not None:
        if not task_id.strip():
            raise InvalidField("may not be blank", "task_id")
        rows = rows.filter(task_id=task_id)
    if status is not None:
        if status not in STATUSES:
            raise InvalidField(f"must be one of {', '.join(STATUSES)}", "status")
        rows = rows.filter(status=status)
    return rows


async def _resolve(
    runtime: Any, confirmation_id: str, task_id: str, approve: bool, decided_by: str, answer: dict[str, Any] | None
) -> bool:
    """Apply the decision to the tool use waiting here; False when it cannot be applied any
    more (the task ended here). A task still running whose tool use is not waiting yet (it is
    resuming) gets it on the next poll (``runs.dispatch``)."""
    try:
        runtime.resolve_confirmation(confirmation_id, approve, decided_by=decided_by, answer=answer)
    except KeyError:
        return task_id in runtime.tasks
    return True


def deliver(record: ToolConfirmation, status: str, decided_by: str, answer: dict[str, Any] | None) -> bool:
    """Hand a decision already written on ``record`` (``status`` approved, rejected or
    answered) to the runtime that waits on it: at once when this process runs the task,
    else by waking its owner (it reads decided rows on every poll). False when this process
    runs the task and the wait is gone (expired or cancelled): the record is then marked
    ``expired`` again, so it never claims a decision that nobody took."""
    host = current_host()
    if (
        host is not None
        and host.runtime is not None
        and host.dispatcher is not None
        and (Task.objects.filter(pk=record.task_id, owner=host.dispatcher.id).exists())
    ):
        approve = status in ("approved", "answered")
        if not host.call(_resolve(host.runtime, record.id, record.task_id, approve, decided_by, answer), timeout=10):
            ToolConfirmation.objects.filter(pk=record.id, status=status, decided_by=decided_by).update(
                status="expired", decided_by="", decided_at=timezone.now()
            )
            return False
        host.recorder.flush()
    else:
        publish_wake("command", record.task_id)
    return True


def decide(confirmation_id: str, approve: bool, user: Any) -> dict[str, Any]:
    """Approve or reject a pending confirmation as the operator ``user`` (the dashboard, the
    API); ``decide_as`` with the user's name."""
    return decide_as(confirmation_id, approve, user.get_username())


def decide_as(confirmation_id: str, approve: bool, decided_by: str, reason: str | None = None) -> dict[str, Any]:
    """Approve or reject a pending confirmation; the waiting agent resumes or fails with
    ``tool_denied``, in whichever process runs it. ``decided_by`` is who decided (a user name,
    or ``token:<name>`` for an answer given through MCP elicitation, ``interop.mcp_elicitation``);
    ``reason`` (a rejection's, at most ``MAX_REASON_CHARS``) is kept as ``answer.reason``. The
    first decision wins. Returns the confirmation (``confirmation_dict``) as decided.

    Raises ConfirmationError: 404 unknown id; 409 already decided or expired, or its task is
    no longer running (then it is marked expired).
    """
    record = ToolConfirmation.objects.filter(pk=confirmation_id).first()
    if record is None:
        raise ConfirmationError(worded(_("confirmation %(id)s does not exist"), id=confirmation_id), 404)
    if record.kind != "tool":
        raise ConfirmationError(
            worded(
                _(
                    "%(id)s asks for an answer, not an approval: answer it on the task's page or through "
                    "/api/v1/tasks/%(task)s/answers, /decisions or /next"
                ),
                id=confirmation_id,
                task=record.task_id,
            ),
            409,
        )
    if record.status != "pending":
        raise ConfirmationError(already_decided(confirmation_id, record.status), 409)
    if not Task.objects.filter(pk=record.task_id, status__in=["queued", "running"]).exists():
        ToolConfirmation.objects.filter(pk=confirmation_id, status="pending").update(
            status="expired", decided_at=timezone.now()
        )
        raise ConfirmationError(
            worded(_("confirmation %(id)s is no longer waiting: its task has ended"), id=confirmation_id), 409
        )
    status = "approved" if approve else "rejected"
    answer = {"reason": reason[:MAX_REASON_CHARS]} if reason else None
    if not ToolConfirmation.objects.filter(pk=confirmation_id, status="pending").update(
        status=status, decided_by=decided_by[:150], decided_at=timezone.now(), answer=answer
    ):
        record.refresh_from_db()
        raise ConfirmationError(already_decided(confirmation_id, record.status), 409)
    if not deliver(record, status, decided_by[:150], answer):
        raise ConfirmationError(
            worded(
                _("confirmation %(id)s is no longer waiting (it expired or its task was cancelled)"), id=confirmation_id
            ),
            409,
        )
    record.refresh_from_db()
    return confirmation_dict(record)
