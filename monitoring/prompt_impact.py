"""The blast radius of a prompt change (issue 15, point 5), read before save, activate or
rollback: which projects will use the template's layer, which running contexts keep the
version they pinned, and which recent tasks ran on the version being replaced.

Nothing records which prompt version a task ran on. A task (and each of its contexts)
records the ``config_version`` of the ``ConfigSnapshot`` it pinned at its start (PRD §4.8),
and every prompt change is audited as a ``ConfigChange`` (``config_type="prompt"``, the role,
the layer's project, ``changes["<type>.active_version"] = {old, new}``, ``new_version``). So
the version a task used is *derived*: the ``new`` of the template's latest activation audited
at or before the task's config version (imports audit theirs as
``changes["prompts.<role>.<type>"]``). Built-in loads only create missing rows, so a template
without any audited activation has had its first version active from the start. The tasks
that ran on the version being replaced are those pinned at or after its activation.

Tasks count when the role ran in them (a context of the role), in the layer's scope: the
global layer is used by every project (and by tasks without one), a project layer by its
project. Lists are capped (``LIMIT``, newest first) and give their full ``count``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.db.models import Q, Sum
from django.utils.translation import gettext

from capabilities.config import current_version
from capabilities.models import AgentRole, ConfigChange, Project, ProjectRoleOverride
from monitoring.access import visible_contexts, visible_tasks
from monitoring.live_items import FINAL_CONTEXT_STATUSES
from monitoring.models import ExecutionContext
from prompts.actions import ContentCheck, check_content
from prompts.models import PromptTemplate, PromptVersion

LIMIT = 20
"""Most rows of each list (recent tasks, running contexts); the newest first."""
PROJECT_LIMIT = 100
"""Most projects listed."""


@dataclass
class Activation:
    """One audited moment the template's active version moved: at ``config_version`` it
    became ``version`` (None: an import, which does not say)."""

    config_version: int
    version: str | None
    previous: str | None = None


@dataclass
class PromptImpact:
    """What changing one template layer touches; see the module docstring."""

    role: AgentRole
    template_type: str
    project: Project | None
    candidate: PromptVersion | None
    replaces: PromptVersion | None
    replaced_since: int | None
    refusal: str | None
    config_version: int
    projects: list[dict[str, Any]] = field(default_factory=list)
    project_count: int = 0
    contexts: list[dict[str, Any]] = field(default_factory=list)
    context_count: int = 0
    tasks: list[dict[str, Any]] = field(default_factory=list)
    task_count: int = 0
    task_tokens: int = 0
    refusal_check: ContentCheck | None = None
    """The check behind ``refusal`` (pages word it in their language)."""

    def as_dict(self) -> dict[str, Any]:
        """The API's shape."""
        return {
            "role": self.role.role,
            "template_type": self.template_type,
            "project": self.project.slug if self.project else None,
            "layer": f"project {self.project.slug}" if self.project else "global",
            "version": self.candidate.version if self.candidate else None,
            "replaces": self.replaces.version if self.replaces else None,
            "replaced_since_config_version": self.replaced_since,
            "can_activate": self.refusal is None if self.candidate else None,
            "refusal": self.refusal,
            "config_version": self.config_version,
            "projects": {"count": self.project_count, "limit": PROJECT_LIMIT, "results": self.projects},
            "running_contexts": {"count": self.context_count, "limit": LIMIT, "results": self.contexts},
            "recent_tasks": {
                "count": self.task_count,
                "limit": LIMIT,
                "tokens_used": self.task_tokens,
                "results": self.tasks,
            },
            "derived": (
                "tasks record the config version they pinned, not a prompt version: the prompt "
                "version is derived from the config versions of this template's audited activations"
            ),
        }


def activations(role: AgentRole, template_type: str, project: Project | None) -> list[Activation]:
    """The template layer's audited activations (saves, activations, rollbacks and imports
    that moved its active version), oldest first."""
    keys = {"prompt": f"{template_type}.active_version", "import": f"prompts.{role.role}.{template_type}"}
    changes = ConfigChange.objects.filter(project=project).filter(
        Q(config_type="prompt", role=role.role) | Q(config_type="import")
    )
    out = []
    for change in changes.order_by("new_version"):
        entry = (change.changes or {}).get(keys[change.config_type])
        if isinstance(entry, dict):
            out.append(Activation(change.new_version, entry.get("new"), entry.get("old")))
    return out


def version_at(history: list[Activation], config_version: int, current: str | None) -> str | None:
    """The layer's active version under ``config_version``: the latest activation at or
    before it; before the first one, what that one replaced; with none, ``current``."""
    earlier = [a for a in history if a.config_version <= config_version]
    if earlier:
        return earlier[-1].version
    return history[0].previous if history else current


def _scope(query: Any, project: Project | None, field_name: str = "project") -> Any:
    return query.filter(**{field_name: project}) if project is not None else query


def prompt_impact(
    role: AgentRole,
    template_type: str,
    project: Project | None,
    candidate: PromptVersion | None = None,
    *,
    user: Any,
) -> PromptImpact:
    """The blast radius of replacing the active version of ``role``'s ``template_type`` in
    ``project``'s layer (None = global) by ``candidate`` (None: a version not saved yet).
    Tasks and contexts are those ``user`` may see (``monitoring.access``); their counts too."""
    template = PromptTemplate.objects.filter(role=role, template_type=template_type, project=project).first()
    active = template.versions.filter(is_active=True).first() if template else None
    history = activations(role, template_type, project)
    since = (history[-1].config_version if history else 0) if active else None
    refusal, refusal_check = None, None
    if candidate is not None and not candidate.is_active:
        found = check_content(candidate.content, candidate.variables, role=role, project=project).activation_refusal()
        refusal = found.reason if found else None
        refusal_check = found.check if found else None
    impact = PromptImpact(role, template_type, project, candidate, active, since, refusal, current_version())
    impact.refusal_check = refusal_check
    _projects(impact)
    _running(impact, history, visible_contexts(user))
    if active is not None and since is not None:
        _tasks(impact, since, visible_tasks(user))
    return impact


def _projects(impact: PromptImpact) -> None:
    projects = Project.objects.order_by("slug")
    if impact.project is not None:
        projects = projects.filter(pk=impact.project.pk)
    impact.project_count = projects.count()
    listed = list(projects[:PROJECT_LIMIT])
    disabled = set(
        ProjectRoleOverride.objects.filter(role=impact.role, enabled=False, project__in=listed).values_list(
            "project_id", flat=True
        )
    )
    enabled = set(
        ProjectRoleOverride.objects.filter(role=impact.role, enabled=True, project__in=listed).values_list(
            "project_id", flat=True
        )
    )
    overrides = {
        v.template.project_id: v.version
        for v in PromptVersion.objects.filter(
            is_active=True,
            template__role=impact.role,
            template__template_type=impact.template_type,
            template__project__in=listed,
        ).select_related("template")
    }
    for project in listed:
        role_enabled = project.pk in enabled or (project.pk not in disabled and impact.role.enabled)
        override = overrides.get(project.pk) if impact.project is None else None
        impact.projects.append(
            {
                "slug": project.slug,
                "name": project.name,
                "role_enabled": role_enabled,
                "override_version": override,
                "uses": (
                    gettext("no: the role is disabled in this project")
                    if not role_enabled
                    else gettext("yes, followed by its own override %(version)s") % {"version": override}
                    if override
                    else gettext("yes")
                ),
            }
        )


def _running(impact: PromptImpact, history: list[Activation], visible: Any) -> None:
    contexts = visible.filter(role=impact.role.role, task__status__in=("queued", "running")).exclude(
        status__in=FINAL_CONTEXT_STATUSES
    )
    contexts = _scope(contexts, impact.project)
    impact.context_count = contexts.count()
    current = impact.replaces.version if impact.replaces else None
    for context in contexts.order_by("-created_at")[:LIMIT]:
        impact.contexts.append(
            {
                "id": context.id,
                "task_id": context.task_id,
                "instance_id": context.instance_id,
                "status": context.status,
                "project": context.project_id,
                "config_version": context.config_version,
                "pinned_version": version_at(history, context.config_version, current),
            }
        )


def _tasks(impact: PromptImpact, since: int, visible: Any) -> None:
    role = impact.role.role
    ran = ExecutionContext.objects.filter(role=role).values("task_id")
    tasks = _scope(visible.filter(config_version__gte=since, pk__in=ran).exclude(status="queued"), impact.project)
    impact.task_count = tasks.count()
    impact.task_tokens = tasks.aggregate(total=Sum("tokens_used"))["total"] or 0
    listed = tasks.annotate(role_tokens=Sum("contexts__total_tokens", filter=Q(contexts__role=role)))
    for task in listed.order_by("-created_at")[:LIMIT]:
        impact.tasks.append(
            {
                "id": task.id,
                "title": task.title or task.description[:80],
                "status": task.status,
                "project": task.project_id,
                "config_version": task.config_version,
                "created_at": task.created_at,
                "tokens_used": task.tokens_used,
                "role_tokens": task.role_tokens or 0,
            }
        )
