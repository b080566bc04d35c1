"""What a saved workflow's run did (seed 003 orchestration), read from the record for the
task page: which steps ran, with what status, and what the run returned.

A workflow run is a task whose main agent runs ``workflow_orchestration``
(``runs.workflow_runs``). Its steps return data, not files, so such a run usually writes no
artifact; the page says so instead of an empty "No artifacts yet", and shows the run's own
result (the recorded ``invoke_response`` to the operator: ``{status, summary, steps,
output}``), or, when it failed, the error naming the step and the invokes that were made.
"""

from __future__ import annotations

import json
from typing import Any

from monitoring.models import Message, Task

WORKFLOW_CAPABILITY = "workflow_orchestration"
"""The capability main runs for a saved workflow (``teamclaw.workflows.orchestration``)."""


def is_workflow_run(task: Task) -> bool:
    """Whether ``task`` is a run of a saved workflow (its run spec starts ``workflow_orchestration``)."""
    return (task.run_spec or {}).get("capability_id") == WORKFLOW_CAPABILITY


def _invokes(task: Task) -> list[dict[str, Any]]:
    """The invokes main made in ``task``, in order: ``[{capability, to_role, status, outcome}]``
    where ``outcome`` is ``ok``, the error code, or ``""`` while unanswered."""
    requests = list(
        Message.objects.filter(task_id=task.id, type="invoke_request", from_role="main")
        .order_by("seq")
        .values("correlation_id", "capability_id", "to_role", "status", "reason")
    )
    answers: dict[str, str] = {}
    for kind, correlation, payload in Message.objects.filter(
        task_id=task.id, type__in=("invoke_response", "invoke_error"), to_role="main"
    ).values_list("type", "correlation_id", "payload"):
        error = (payload or {}).get("error") or {}
        answers[correlation] = "ok" if kind == "invoke_response" else str(error.get("code") or "error")
    return [
        {
            "capability": r["capability_id"],
            "to_role": r["to_role"],
            "status": r["status"],
            "reason": r["reason"],
            "outcome": answers.get(r["correlation_id"], ""),
        }
        for r in requests
    ]


def workflow_run_result(task: Task) -> dict[str, Any] | None:
    """The result panel of a workflow run, None for any other task:
    ``{status, finished (bool), summary, steps [{id, type, capability?, value?, next?,
    latency_ms?}], output, output_json (indented JSON text), output_empty (bool), error
    {code, message, step} | None, invokes [see _invokes]}``. ``steps`` and ``output`` come
    from the run's recorded answer and are empty until it is recorded (running, or failed:
    a failed run has no answer, only its error and the invokes it made)."""
    if not is_workflow_run(task):
        return None
    answer = (
        Message.objects.filter(task_id=task.id, type="invoke_response", capability_id=WORKFLOW_CAPABILITY)
        .exclude(to_role="main")
        .order_by("-seq")
        .values_list("payload", flat=True)
        .first()
    )
    result = (answer or {}).get("result") or {}
    output = result.get("output")
    error = None
    if task.error:
        details = task.error.get("details") or {}
        error = {
            "code": task.error.get("code", ""),
            "message": task.error.get("message", ""),
            "step": details.get("step", ""),
        }
    return {
        "status": task.status,
        "finished": task.status not in ("queued", "running"),
        "recorded": answer is not None,
        "summary": result.get("summary", ""),
        "steps": list(result.get("steps") or []),
        "output": output,
        "output_json": json.dumps(output, indent=2, ensure_ascii=False) if answer is not None else "",
        "output_empty": output in (None, {}, [], ""),
        "error": error,
        "invokes": _invokes(task),
    }
