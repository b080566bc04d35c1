"""Running execution contexts busy with a skill's capabilities (seed 003: what depends on a
skill before it is deactivated or uninstalled); the ``RunningContexts`` lookup that
``capabilities.lifecycle`` takes."""

from __future__ import annotations

from typing import Any

from monitoring.live_items import FINAL_CONTEXT_STATUSES
from monitoring.models import ExecutionContext

MAX_CONTEXTS = 100


def running_contexts(capability_ids: set[str]) -> list[dict[str, Any]]:
    """``[{contextId, taskId, role, status, step}]`` of unfinished contexts whose current step
    is one of ``capability_ids`` (at most 100)."""
    busy = ExecutionContext.objects.filter(current_step__in=capability_ids).exclude(
        status__in=sorted(FINAL_CONTEXT_STATUSES)
    )
    return [
        {"contextId": c.id, "taskId": c.task_id, "role": c.role, "status": c.status, "step": c.current_step}
        for c in busy[:MAX_CONTEXTS]
    ]
