"""The configured experts as a reviewer for ``manage.py eval_review --reviewer model`` (issue
27 items 8-9): users compare models and prompt versions on their own labelled documents.

Each document is reviewed by a ``requirement_review`` task run in this process (a runtime
worker of its own, as ``run_workflow``) on whatever executors the configuration names
(``OPENAI_BASE_URL``, ``TEAMCLAW_EXECUTOR``, a role's executor), so the experts' prompts are
the ones a real review uses, checklist included. The findings scored are the experts' review
round (every ``review_*.json`` issue: taxonomy ``category``, ``location.line``, ``quote``),
as ``--reviewer experts`` scores the offline experts'.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from capabilities.executors import workflow_executors
from runs.host import RuntimeHost
from runs.local_tasks import own_task, run_own_task
from team.snapshot import build_snapshot
from teamclaw.workflows import WORKFLOW_CAPABILITIES
from teamclaw.workflows.document import nothing_to_review


def configured_executors() -> str:
    """The executor kinds a ``requirement_review`` task would run on now (``openai``,
    ``offline+openai``...)."""
    return workflow_executors(build_snapshot(), WORKFLOW_CAPABILITIES["requirement_review"])


@dataclass
class TaskReviewer:
    """``reviewer(text) -> findings``: one review task per document on ``host`` (started by
    the caller, stopped by it). ``failures`` lists ``"<task id>: <code>: <message>"`` for
    each task that did not complete (its review files written so far are still scored)."""

    host: RuntimeHost
    failures: list[str] = field(default_factory=list)
    tasks: list[str] = field(default_factory=list)

    def __call__(self, text: str) -> list[dict[str, Any]]:
        if nothing_to_review(text):
            return []
        params = {
            "workflow": "requirement_review",
            "task_description": "Evaluate the review on a labelled document",
            "input_markdown": text,
        }
        task = own_task(self.host, params, "eval_review", text)
        self.tasks.append(task.id)
        result = run_own_task(self.host, task)
        if not result.success and result.error is not None:
            self.failures.append(f"{task.id}: {result.error.code}: {result.error.message}")
        reviews = task.artifacts.filter(name__startswith="review_", name__endswith=".json").order_by("name")
        return [issue for artifact in reviews for issue in json.loads(artifact.content).get("issues", [])]
