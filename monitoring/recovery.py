"""Closing records a stopped runtime left open (see the mark_interrupted command)."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from monitoring.models import AgentInstance, ExecutionContext, Task, ToolConfirmation

FINAL_CONTEXT_STATUSES = ("completed", "failed", "terminated")


def mark_interrupted() -> dict[str, int]:
    """Fail running tasks, terminate open contexts and instances, expire pending confirmations.

    Returns how many rows of each kind were changed. Run only while no runtime is writing.
    """
    now = timezone.now()
    error = {"code": "interrupted", "message": "the server stopped while this task was running", "details": {}}
    with transaction.atomic():
        tasks = Task.objects.filter(status="running").update(status="failed", error=error, finished_at=now)
        contexts = ExecutionContext.objects.exclude(status__in=FINAL_CONTEXT_STATUSES).update(
            status="terminated", updated_at=now
        )
        instances = AgentInstance.objects.exclude(status="terminated").update(status="terminated")
        confirmations = ToolConfirmation.objects.filter(status="pending").update(status="expired", decided_at=now)
    return {"tasks": tasks, "contexts": contexts, "instances": instances, "confirmations": confirmations}
