"""Closing records a stopped runtime left open (see the mark_interrupted command)."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from monitoring.models import AgentInstance, ExecutionContext, Task, ToolConfirmation

FINAL_CONTEXT_STATUSES = ("completed", "failed", "terminated")


def mark_interrupted() -> dict[str, int]:
    """Close what a stopped server left open that no worker can resume.

    Tasks with a ``run_spec`` (every workflow run) are left as they are: a runtime worker
    resumes them once their lease has expired (docs/architecture.md §3), their pending
    confirmations still waiting. The rest (a standalone invoke's short task, records from
    before workers) become ``failed`` with ``interrupted``, their open contexts
    ``terminated`` and their pending confirmations ``expired``; every instance row becomes
    ``terminated``. Returns ``{"tasks", "contexts", "instances", "confirmations",
    "resumable"}`` counts. Run only while no runtime is writing (``make run`` does, first).
    """
    now = timezone.now()
    error = {"code": "interrupted", "message": "the server stopped while this task was running", "details": {}}
    with transaction.atomic():
        open_tasks = Task.objects.filter(status__in=["queued", "running"])
        resumable = open_tasks.filter(kind="task", run_spec__isnull=False).count()
        stranded = list(open_tasks.filter(run_spec__isnull=True).values_list("pk", flat=True))
        tasks = Task.objects.filter(pk__in=stranded).update(status="failed", error=error, finished_at=now)
        contexts = (
            ExecutionContext.objects.filter(task_id__in=stranded)
            .exclude(status__in=FINAL_CONTEXT_STATUSES)
            .update(status="terminated", updated_at=now)
        )
        instances = AgentInstance.objects.exclude(status="terminated").update(status="terminated")
        confirmations = ToolConfirmation.objects.filter(task_id__in=stranded, status="pending").update(
            status="expired", decided_at=now
        )
    return {
        "tasks": tasks,
        "contexts": contexts,
        "instances": instances,
        "confirmations": confirmations,
        "resumable": resumable,
    }
