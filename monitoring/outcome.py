"""What came of a requirement_review task (seed 002), for the API, the task page and the
tasks list: the phase it is in, and its outcome (``outcome.json``, written by main at the
end: adopted / rejected / contested counts, the quality check with its findings, whether
the copy was saved, warnings)."""

from __future__ import annotations

import json
from typing import Any

from monitoring.models import Artifact, Task, ToolConfirmation

PHASES = {
    "project_type": "interview",
    "interview": "interview",
    "next_action": "draft",
    "decisions": "decisions",
}
"""The phase a task waiting for an operator is in, by what it waits for."""


def _artifact_json(task: Task, name: str) -> Any:
    content = Artifact.objects.filter(task_id=task.id, name=name).values_list("content", flat=True).first()
    if content is None:
        return None
    try:
        return json.loads(content)
    except ValueError:
        return None


def verdict(outcome: dict[str, Any]) -> str:
    """An ``outcome.json``'s verdict: ``clean``, ``findings`` or ``draft_only`` (see ``task_outcome``)."""
    if outcome.get("phase") == "draft":
        return "draft_only"
    return "clean" if outcome.get("clean") else "findings"


def verdicts(task_ids: list[str]) -> dict[str, str]:
    """``{task id: verdict}`` of those tasks that have an outcome (one query), for lists."""
    out = {}
    for task_id, content in Artifact.objects.filter(task_id__in=task_ids, name="outcome.json").values_list(
        "task_id", "content"
    ):
        try:
            outcome = json.loads(content)
        except ValueError:
            continue
        if isinstance(outcome, dict):
            out[task_id] = verdict(outcome)
    return out


def task_outcome(task: Task) -> dict[str, Any] | None:
    """The task's ``outcome.json`` with ``verdict``: ``clean`` (quality check passed, no
    warnings), ``findings`` (the check flagged something or there were warnings),
    ``draft_only`` (ended at phase 5); None before main wrote it (or for other workflows)."""
    outcome = _artifact_json(task, "outcome.json")
    if not isinstance(outcome, dict):
        return None
    return {**outcome, "verdict": verdict(outcome)}


def task_phase(task: Task) -> str:
    """``interview`` (phases 1-4), ``draft`` (phase 5), ``review`` (phase 6), ``decisions``
    (6.5, confirm mode), ``done`` or ``ended`` (failed or cancelled): what the task is at now."""
    if task.status in ("failed", "terminated", "cancelled"):
        return "ended"
    if task.status == "completed":
        return "done"
    waiting = (
        ToolConfirmation.objects.filter(task_id=task.id, kind="input", status="pending")
        .order_by("-created_at")
        .values_list("tool", flat=True)
        .first()
    )
    if waiting:
        return PHASES.get(waiting, "review")
    names = set(Artifact.objects.filter(task_id=task.id).values_list("name", flat=True))
    start_at = (task.run_spec or {}).get("params", {}).get("start_at")
    if any(name.startswith("review_") for name in names) or "domain_role.md" in names:
        return "review"
    if start_at == "interview":
        return "draft" if "requirement.md" in names else "interview"
    return "draft" if start_at == "draft" else "review"


def waiting_for_operator(task_ids: list[str]) -> set[str]:
    """Those of ``task_ids`` that wait for an operator now (a question, a decision, a choice
    or a tool confirmation), for the lists' "waiting for you" badge."""
    return set(
        ToolConfirmation.objects.filter(task_id__in=task_ids, status="pending").values_list("task_id", flat=True)
    )
