"""Deciding tool confirmations (PRD §4.7 ⚠️ 需要用户确认后才能执行).

``decide(confirmation_id, approve, user)`` is the one way an operator approves or rejects a
tool use waiting in ``waiting_user``: the runtime resumes (approved) or fails the tool use
with ``tool_denied`` (rejected), records the decision and the recorder writes it.
"""

from __future__ import annotations

import asyncio
from typing import Any

from monitoring.models import ToolConfirmation

DECIDE_TIMEOUT_S = 10.0


class ConfirmationError(Exception):
    """A decision refused: ``status`` 404 (unknown) or 409 (not waiting any more), ``reason``."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


async def _resolve(runtime: Any, confirmation_id: str, approve: bool, decided_by: str) -> dict[str, Any]:
    return runtime.resolve_confirmation(confirmation_id, approve, decided_by)


def decide(confirmation_id: str, approve: bool, user: Any) -> dict[str, Any]:
    """Approve or reject a pending tool confirmation as ``user``; returns the decided
    confirmation ``{id, context_id, instance_id, role, task_id, project_id, tool, args,
    status, created_at, expires_at, decided_by}`` once the recorder committed it.

    Raises ConfirmationError 404 for an unknown id, 409 when it is no longer pending or no
    runtime of this server is waiting for it (e.g. after a restart).
    """
    from monitoring.host import current_host

    row = ToolConfirmation.objects.filter(pk=confirmation_id).first()
    if row is None:
        raise ConfirmationError(404, f"there is no tool confirmation {confirmation_id}")
    if row.status != "pending":
        raise ConfirmationError(409, f"this confirmation was already {row.status}")
    host = current_host()
    if host is None or host.runtime is None:
        raise ConfirmationError(409, "no agent is waiting for this confirmation any more (the server restarted)")
    decided_by = user.get_username() if hasattr(user, "get_username") else str(user)
    future = asyncio.run_coroutine_threadsafe(
        _resolve(host.runtime, confirmation_id, bool(approve), decided_by), host.loop
    )
    try:
        result = future.result(DECIDE_TIMEOUT_S)
    except KeyError:
        raise ConfirmationError(409, "no agent is waiting for this confirmation any more") from None
    host.recorder.flush(DECIDE_TIMEOUT_S)
    return result
