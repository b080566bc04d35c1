"""A task run by this process's own runtime worker (``manage.py run_workflow``,
``manage.py eval_review --reviewer model``; docs/architecture.md §3 runtime workers)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.utils import timezone

from capabilities.executors import workflow_executors
from capabilities.models import Project
from monitoring.models import Task
from runs.dispatch import Claimed
from runs.host import RuntimeHost
from runs.tasks import run_spec
from team.snapshot import build_snapshot
from teamclaw.runtime.invocation import InvokeResult
from teamclaw.runtime.messages import new_id
from teamclaw.workflows import WORKFLOW_CAPABILITIES


def own_task(host: RuntimeHost, params: dict[str, Any], title: str, text: str, project: Project | None = None) -> Task:
    """A ``running`` task of ``params["workflow"]`` owned by ``host``'s dispatcher from the
    moment it exists (so no other worker claims it), on the executors the configuration
    names for the workflow's capabilities (``Task.executor``); ``text`` is its input document."""
    assert host.dispatcher is not None
    workflow = params["workflow"]
    return Task.objects.create(
        id=new_id(),
        kind="task",
        workflow=workflow,
        title=title,
        input_markdown=text,
        description=params["task_description"],
        project=project,
        status="running",
        executor=workflow_executors(build_snapshot(project.slug if project else None), WORKFLOW_CAPABILITIES[workflow]),
        run_spec=run_spec("task_orchestration", params, params["task_description"]),
        owner=host.dispatcher.id,
        lease_expires_at=timezone.now() + timedelta(seconds=settings.TEAMCLAW["LEASE_S"]),
        attempt=1,
    )


def run_own_task(host: RuntimeHost, task: Task) -> InvokeResult:
    """Run ``task`` (from ``own_task``) to its end on ``host``; main's result."""
    assert host.dispatcher is not None
    return host.call(host.dispatcher.run(Claimed(task, None)))
