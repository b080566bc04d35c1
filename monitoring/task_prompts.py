"""What a task gives a prompt preview (PRD §4.5 任务级 Prompt 增强): its project, its
description and its prompt enhancement, read from the task's record."""

from __future__ import annotations

from capabilities.models import Project
from monitoring.models import Task
from teamclaw.errors import InvalidField


class TaskInputError(InvalidField, ValueError):
    """A ``task_id`` that cannot be previewed (400); ``field`` names the input at fault."""


def task_inputs(
    task_id: str, project: Project | None, description: str, enhancement: str | None
) -> tuple[Project | None, str, str]:
    """``(project, task_description, prompt_enhancement)`` for previewing with task ``task_id``:
    the task's own values where the caller gave none (PRD §4.5 任务级 Prompt 增强).

    Raises TaskInputError for an unknown task or a ``project`` other than the task's.
    """
    task = Task.objects.select_related("project").filter(pk=task_id).first()
    if task is None:
        raise TaskInputError(f"task '{task_id[:64]}' does not exist", "task_id")
    if project is not None and task.project_id not in (None, project.pk):
        raise TaskInputError(f"task '{task.id}' belongs to project '{task.project_id}'", "project")
    return (
        project or task.project,
        description or task.description,
        task.prompt_enhancement if enhancement is None else enhancement,
    )
