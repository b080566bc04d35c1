"""A role's layered prompt rendered the way the runtime renders it (PRD §4.5), for previews."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from capabilities.models import Project
from prompts.render import LayerPreview, assemble, check_values, render_layers, standard_variables
from team.snapshot import build_snapshot


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
