"""Prompt layers (PRD §4.5 系统默认 Prompt（全局）→ 项目级 Prompt 覆盖 → 任务级 Prompt 增强).

``layered_prompts`` collects the active version of each layer for a ConfigSnapshot (global
template and project override; the task enhancement travels with the task), and
``preview_role`` renders a role's layers and final prompt the way the runtime would.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from capabilities.models import Project
from capabilities.snapshot import build_snapshot
from prompts.models import PromptVersion
from prompts.render import LayerPreview, assemble, check_values, render_layers, standard_variables
from teamclaw.runtime.config import LayeredPrompt, PromptSpec


def _spec(version: PromptVersion) -> PromptSpec:
    return PromptSpec(
        template_type=version.template.template_type,
        version=version.version,
        content=version.content,
        variables=tuple(version.variables or ()),
        language=version.language,
    )


def layered_prompts(project: Project | None) -> dict[str, dict[str, LayeredPrompt]]:
    """``role -> template_type -> LayeredPrompt(base, project)`` of the active versions."""
    active = PromptVersion.objects.filter(is_active=True).select_related("template__role", "template__project")
    base: dict[tuple[str, str], PromptSpec] = {}
    override: dict[tuple[str, str], PromptSpec] = {}
    for version in active.filter(template__project__isnull=True):
        base[(version.template.role.role, version.template.template_type)] = _spec(version)
    if project is not None:
        for version in active.filter(template__project=project):
            override[(version.template.role.role, version.template.template_type)] = _spec(version)
    out: dict[str, dict[str, LayeredPrompt]] = {}
    for (role, template_type), spec in base.items():
        out.setdefault(role, {})[template_type] = LayeredPrompt(spec, override.get((role, template_type)))
    for (role, template_type), spec in override.items():
        if (role, template_type) not in base:
            out.setdefault(role, {})[template_type] = LayeredPrompt(spec, None)
    return out


class TaskInputError(ValueError):
    """A ``task_id`` that cannot be previewed; ``field`` names the input at fault."""

    def __init__(self, reason: str, field: str) -> None:
        super().__init__(reason)
        self.reason = reason
        self.field = field


def task_inputs(
    task_id: str, project: Project | None, description: str, enhancement: str | None
) -> tuple[Project | None, str, str]:
    """``(project, task_description, prompt_enhancement)`` for previewing with task ``task_id``:
    the task's own values where the caller gave none (PRD §4.5 任务级 Prompt 增强).

    Raises TaskInputError for an unknown task or a ``project`` other than the task's.
    """
    from monitoring.models import Task  # monitoring depends on capabilities; prompts reads it only here

    task = Task.objects.select_related("project").filter(pk=task_id).first()
    if task is None:
        raise TaskInputError(f"task '{task_id[:64]}' does not exist", "task_id")
    if project is not None and task.project_id not in (None, project.pk):
        raise TaskInputError(f"task '{task.id}' belongs to project '{task.project.slug}'", "project")
    return (
        project or task.project,
        description or task.description,
        task.prompt_enhancement if enhancement is None else enhancement,
    )


@dataclass
class RolePreview:
    """A role's prompt as an agent would get it (PRD §4.5): each template type's layers, the
    task enhancement and the ``final`` text, rendered under config ``config_version``."""

    role: str
    project: str | None
    config_version: int
    layers: list[LayerPreview]
    task_enhancement: str
    final: str
    values: dict[str, Any]

    def as_dict(self) -> dict[str, Any]:
        """``{role, project, config_version, layers: [...], task_enhancement, final, variables}``."""
        return {
            "role": self.role,
            "project": self.project,
            "config_version": self.config_version,
            "layers": [layer.as_dict() for layer in self.layers],
            "task_enhancement": self.task_enhancement,
            "final": self.final,
            "variables": self.values,
        }


def preview_role(
    role: str,
    *,
    project: Project | None = None,
    values: Mapping[str, Any] | None = None,
    task_description: str = "",
    prompt_enhancement: str = "",
) -> RolePreview:
    """Render ``role``'s layered prompt with the current config of ``project`` (None = global):
    the standard variables for ``task_description``, overridden by ``values``, then the task
    enhancement appended as written.

    Raises PromptRenderError naming the layer and the variable or line at fault.
    """
    snapshot = build_snapshot(project.slug if project else None)
    merged = standard_variables(snapshot, role, task_description)
    merged.update(check_values(values or {}))
    layers = render_layers(snapshot.prompts.get(role, {}), merged)
    return RolePreview(
        role=role,
        project=project.slug if project else None,
        config_version=snapshot.version,
        layers=layers,
        task_enhancement=prompt_enhancement,
        final=assemble(layers, prompt_enhancement),
        values=merged,
    )
