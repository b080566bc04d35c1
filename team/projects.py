"""Projects with everything they override (US-06, PRD §4.7 项目级配置覆盖): the project's
document counts its governed overrides (``capabilities.projects``) and its prompt overrides."""

from __future__ import annotations

from typing import Any

from capabilities import projects
from capabilities.matrices import SaveResult
from capabilities.models import Project
from prompts.models import PromptTemplate


def override_counts(project: Project) -> dict[str, int]:
    """How many values ``project`` overrides, per kind: ``{roles, capabilities, invoke_matrix,
    tool_matrix, constraints, prompts}``."""
    return {
        **projects.override_counts(project),
        "prompts": PromptTemplate.objects.filter(project=project).count(),
    }


def project_document(project: Project) -> dict[str, Any]:
    """``{slug, name, description, tech_stack, working_directory, version, created_at,
    updated_at, overrides {kind: count}}``."""
    return {**projects.project_document(project), "overrides": override_counts(project)}


def create_project(data: Any, *, note: str = "", actor: Any = None) -> SaveResult:
    """Create a project (audited as ``project``, one config version) and return its document.
    Raises ConfigInvalid."""
    change, project = projects.add_project(data, note=note, actor=actor)
    return SaveResult(change, project_document(project))


def update_project(
    project: Project, *, version: int | None, data: Any, note: str = "", actor: Any = None
) -> SaveResult:
    """Edit a project's fields as one change and return its document. Raises ConfigInvalid or
    StaleVersion."""
    change, saved = projects.edit_project(project, version=version, data=data, note=note, actor=actor)
    return SaveResult(change, project_document(saved))
