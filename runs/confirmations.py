"""Operators deciding tool confirmations (PRD §4.7 ⚠️ 需要用户确认).

The runtime holds the waiting tool call; the database holds the record. ``decide`` checks the
record, hands the decision to the runtime and reports what happened.
"""

from __future__ import annotations

from typing import Any

from django.utils import timezone

from monitoring.models import ToolConfirmation
from runs.host import get_host
from teamclaw.errors import DomainError


class ConfirmationError(DomainError):
    """A decision that cannot be applied; ``status`` is the HTTP status that fits (404/409)."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message, status=status)


def decide(confirmation_id: str, approve: bool, user: Any) -> dict[str, Any]:
    """Approve or reject a pending confirmation; the waiting agent resumes or fails with
    ``tool_denied``. Returns the confirmation as the runtime reports it.

    Raises ConfirmationError: 404 unknown id; 409 already decided, expired, or no longer
    waiting in this server's runtime (it restarted or the request timed out).
    """

    record = ToolConfirmation.objects.filter(pk=confirmation_id).first()
    if record is None:
        raise ConfirmationError(f"confirmation {confirmation_id} does not exist", 404)
    if record.status != "pending":
        raise ConfirmationError(f"confirmation {confirmation_id} is already {record.status}", 409)
    host = get_host()
    assert host.runtime is not None
    runtime = host.runtime

    async def resolve() -> dict[str, Any]:
        return runtime.resolve_confirmation(confirmation_id, approve, decided_by=user.get_username())

    try:
        result = host.call(resolve(), timeout=10)
    except KeyError:
        ToolConfirmation.objects.filter(pk=confirmation_id, status="pending").update(
            status="expired", decided_at=timezone.now()
        )
        raise ConfirmationError(
            f"confirmation {confirmation_id} is no longer waiting (it timed out or the server restarted)", 409
        ) from None
    host.recorder.flush()
    return result
