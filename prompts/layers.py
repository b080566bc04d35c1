"""Prompt layers (PRD §4.5 系统默认 Prompt（全局）→ 项目级 Prompt 覆盖 → 任务级 Prompt 增强).

``layered_prompts`` collects the active version of each layer for a ConfigSnapshot (global
template and project override; the task enhancement travels with the task).
``team.prompt_preview`` renders a role's layers and final prompt the way the runtime would.
"""

from __future__ import annotations

from capabilities.models import Project
from prompts.models import PromptVersion
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
