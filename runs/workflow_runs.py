"""Starting runs of saved workflows (seed 003 ``POST /api/v1/workflows/{id}/run``).

A run is a task like any other (docs/architecture.md §4): recorded first, then handed to the main
agent's ``workflow_orchestration`` capability on the runtime, which invokes each step.
"""

from __future__ import annotations

import json
from typing import Any

from capabilities.models import Project
from capabilities.skill_models import Workflow
from monitoring.models import Task
from runs.tasks import check_project, enqueue, run_spec
from teamclaw.errors import InvalidField
from teamclaw.runtime.messages import new_id

MAX_INPUT_BYTES = 1_000_000


class RunInputError(InvalidField, ValueError):
    """The run's ``input`` is unusable; ``reason`` says why (400, field ``input``)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason, "input")


def start_workflow_run(workflow: Workflow, run_input: Any, *, user: Any = None, project: Project | None = None) -> Task:
    """Record a task for ``workflow`` on ``run_input`` (a mapping: ``${userInput...}``) and
    hand it to a runtime worker (``runs.tasks.enqueue``; returns at once). Raises RunInputError;
    InvalidField on ``project`` for one the user may not use (``monitoring.access.can_use_project``)."""

    check_project(user, project)
    if run_input is None:
        run_input = {}
    if not isinstance(run_input, dict):
        raise RunInputError("input must be a mapping (it becomes ${userInput})")
    if len(json.dumps(run_input, ensure_ascii=False, default=str).encode()) > MAX_INPUT_BYTES:
        raise RunInputError(f"input is larger than {MAX_INPUT_BYTES:,} bytes")
    description = f"Workflow {workflow.name} ({workflow.workflow_id} v{workflow.version})"
    task = Task.objects.create(
        id=new_id(),
        kind="task",
        workflow=workflow.workflow_id[:64],
        title=description[:300],
        description=description,
        input_markdown=json.dumps(run_input, ensure_ascii=False, indent=2),
        project=project,
        status="queued",
        created_by=user if getattr(user, "pk", None) else None,
        executor="offline",
        run_spec=run_spec(
            "workflow_orchestration",
            {"workflow": workflow.definition, "input": run_input, "task_description": description[:2000]},
            description,
        ),
    )
    return enqueue(task)
