"""The governed part of the runtime's ``ConfigSnapshot``, from the database (docs/architecture.md).

Effective values = project override else global (PRD §4.7), for invoke cells, tool cells,
constraint fields, the roles' executor choices and the enabled flags of roles and cards
(PRD §4.1 角色启用/禁用, US-06). The prompts are the prompts app's: ``team.snapshot.build_snapshot``
adds their layers (PRD §4.5) to build the snapshot a task runs on.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from django.conf import settings

from capabilities.config import current_version
from capabilities.models import (
    AgentRole,
    CapabilityCard,
    InvokePermission,
    Project,
    ProjectCapabilityOverride,
    ProjectRoleOverride,
    ToolPermission,
)
from capabilities.tool_catalogue import external_tools
from teamclaw.runtime.config import (
    CapabilityType,
    CardSpec,
    ConfigSnapshot,
    Constraints,
    LayeredPrompt,
    RoleSpec,
    ToolMode,
)

CONSTRAINT_FIELDS = (
    "timeout_s",
    "max_retries",
    "file_scope",
    "token_budget",
    "max_concurrent_instances",
    "memory_tokens",
)
DEFAULT_WHEN_NULL = frozenset({"memory_tokens"})
"""Constraint fields whose global ``null`` means "the process default" (``memory_tokens``:
``TEAMCLAW_MEMORY_TOKENS``) rather than a value every global row must set."""


def project_directory(project: Project | None) -> Path:
    """The working directory file tools are confined to (created on demand)."""
    root = Path(settings.TEAMCLAW["PROJECTS_ROOT"])
    if project is None:
        return root / "_global"
    if project.working_directory:
        return Path(project.working_directory)
    return root / project.slug


def effective_constraints(role: AgentRole, project: Project | None) -> Constraints:
    """The role's constraints for ``project``: each project field, where set, else global."""
    rows = {c.project_id: c for c in role.constraints.all()}
    values = Constraints().as_dict()
    for row in (rows.get(None), rows.get(project.pk) if project else None):
        if row is None:
            continue
        for name in CONSTRAINT_FIELDS:
            value = getattr(row, name)
            if value is not None:
                values[name] = value
    return Constraints(**values)


def enabled_overrides(project: Project | None) -> tuple[dict[int, bool], dict[int, bool]]:
    """``(role pk -> enabled, card pk -> enabled)`` of ``project``'s own switches (empty for global)."""
    if project is None:
        return {}, {}
    roles = dict(ProjectRoleOverride.objects.filter(project=project).values_list("role_id", "enabled"))
    cards = dict(ProjectCapabilityOverride.objects.filter(project=project).values_list("card_id", "enabled"))
    return roles, cards


def effective_executor(role: AgentRole, project: Project | None) -> tuple[str | None, dict[str, str]]:
    """``(executor kind or None, {"model", "endpoint"} set)`` chosen for ``role`` in ``project``:
    each field from the project's RoleExecutor row if set, else the global row, else (for the
    kind) ``AgentRole.executor``. None means each card's own executor (docs/architecture.md §8)."""
    rows = {c.project_id: c for c in role.executor_choices.all()}
    kind = role.executor or None
    options: dict[str, str] = {}
    for row in (rows.get(None), rows.get(project.pk) if project else None):
        if row is None:
            continue
        kind = row.executor or kind
        options.update({name: getattr(row, name) for name in ("model", "endpoint") if getattr(row, name)})
    return kind, options


def card_spec(card: CapabilityCard, enabled: bool | None = None) -> CardSpec:
    """The runtime's view of one card; ``enabled`` (a project's switch) replaces the card's own."""
    return CardSpec(
        capability_id=card.capability_id,
        name=card.name,
        description=card.description,
        category=card.category,
        input_schema=card.input_schema,
        output_schema=card.output_schema,
        version=card.version,
        owner_roles=tuple(r.role for r in card.owner_roles.all()),
        required_tools=tuple(card.required_tools),
        timeout_s=card.timeout_s,
        tags=tuple(card.tags),
        enabled=card.enabled if enabled is None else enabled,
        executor=card.executor,
        executor_config=card.executor_config,
        skill_id=card.skill.skill_id if card.skill else None,
        capability_type=CapabilityType(card.capability_type),
        address=card.address or None,
        idempotent=card.idempotent,
    )


def governance_snapshot(
    project: Project | None, *, prompts: Mapping[str, Mapping[str, LayeredPrompt]] | None = None
) -> ConfigSnapshot:
    """The effective configuration of ``project`` (None = global) at the current version:
    roles, cards, both matrices, constraints, executors, the project's folder and the tools
    of the MCP tool sources it sees (``tool_catalogue``, issue 16), with
    ``prompts`` as given (none by default: what needs the prompts builds the whole snapshot
    with ``team.snapshot.build_snapshot``)."""
    version = current_version()
    roles = list(AgentRole.objects.prefetch_related("constraints", "capabilities", "executor_choices"))
    executors = {r.pk: effective_executor(r, project) for r in roles}
    role_enabled, card_enabled = enabled_overrides(project)
    role_specs = [
        RoleSpec(
            role=r.role,
            display_name=r.display_name,
            emoji=r.emoji,
            description=r.description,
            enabled=role_enabled.get(r.pk, r.enabled),
            is_builtin=r.is_builtin,
            constraints=effective_constraints(r, project),
            executor=executors[r.pk][0],
            capabilities=tuple(c.capability_id for c in r.capabilities.all()),
            executor_config=executors[r.pk][1],
        )
        for r in roles
    ]
    cards = [
        card_spec(c, card_enabled.get(c.pk))
        for c in CapabilityCard.objects.prefetch_related("owner_roles").select_related("skill")
    ]

    cells: dict[tuple[str, str], bool] = {}
    invoke_rows = InvokePermission.objects.select_related("caller", "target").filter(project__isnull=True)
    for row in invoke_rows:
        cells[(row.caller.role, row.target.role)] = row.allowed
    tool_cells: dict[tuple[str, str], str] = {
        (row.role.role, row.tool): row.mode
        for row in ToolPermission.objects.select_related("role").filter(project__isnull=True)
    }
    if project is not None:
        for row in InvokePermission.objects.select_related("caller", "target").filter(project=project):
            cells[(row.caller.role, row.target.role)] = row.allowed
        for tool_row in ToolPermission.objects.select_related("role").filter(project=project):
            tool_cells[(tool_row.role.role, tool_row.tool)] = tool_row.mode

    return ConfigSnapshot.build(
        version=version,
        project_id=project.slug if project else None,
        roles=role_specs,
        cards=cards,
        invoke_allowed=[pair for pair, allowed in cells.items() if allowed],
        tool_modes={pair: ToolMode(mode) for pair, mode in tool_cells.items()},
        prompts=prompts,
        project_dir=str(project_directory(project)),
        project_name=project.name if project else "TeamClaw",
        project_description=project.description if project else "",
        tech_stack=project.tech_stack if project else "",
        tool_specs=external_tools(project),
    )
