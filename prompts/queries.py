"""Reading prompt templates and versions (PRD §4.5): what pages and the API show.

A role has the six template types of ``TEMPLATE_TYPES`` in the global layer and, per
project, an optional override layer; each template keeps its whole version history.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from django.db.models import QuerySet

from capabilities.models import AgentRole, Project
from prompts.models import TEMPLATE_TYPES, PromptTemplate, PromptVersion
from teamclaw.errors import NotFound


class NotFoundError(NotFound, LookupError):
    """A role, project, template type or version that does not exist (404); ``field`` names
    it, ``reason`` says so."""

    def __init__(self, reason: str, field: str) -> None:
        super().__init__(reason)
        self.reason = reason
        self.field = field


def get_role(role: str) -> AgentRole:
    """The role ``role`` (its slug). Raises NotFoundError."""
    found = AgentRole.objects.filter(role=role).first()
    if found is None:
        raise NotFoundError(f"role '{role[:40]}' does not exist", "role")
    return found


def get_project(slug: str | None) -> Project | None:
    """The project ``slug`` (None for blank = the global layer). Raises NotFoundError."""
    if not slug:
        return None
    found = Project.objects.filter(slug=slug).first()
    if found is None:
        raise NotFoundError(f"project '{slug[:64]}' does not exist", "project")
    return found


def check_template_type(template_type: str) -> str:
    """``template_type`` if it is one of the six PRD §4.5 types. Raises NotFoundError."""
    if template_type not in TEMPLATE_TYPES:
        raise NotFoundError(
            f"template type '{template_type[:40]}' does not exist; one of {', '.join(TEMPLATE_TYPES)}",
            "template_type",
        )
    return template_type


def find_template(role: AgentRole, template_type: str, project: Project | None) -> PromptTemplate | None:
    """The template of ``role``/``template_type`` in ``project``'s layer (None = global)."""
    return (
        PromptTemplate.objects.filter(role=role, template_type=template_type, project=project)
        .select_related("role", "project")
        .first()
    )


def versions_of(template: PromptTemplate | None) -> QuerySet[PromptVersion]:
    """Every version of ``template``, newest first (creation order, which the bump rules keep
    in SemVer order)."""
    if template is None:
        return PromptVersion.objects.none()
    return template.versions.select_related("created_by").order_by("-id")


def get_version(template: PromptTemplate | None, version: str) -> PromptVersion:
    """Version ``version`` of ``template``. Raises NotFoundError(field='version')."""
    found = versions_of(template).filter(version=version).first() if version else None
    if found is None:
        raise NotFoundError(f"version '{str(version)[:64]}' does not exist", "version")
    return found


@dataclass
class TemplateRow:
    """A template type of a role as an overview shows it: the active version of each layer."""

    template_type: str
    base: PromptVersion | None
    base_count: int
    override: PromptVersion | None
    override_count: int
    project: Project | None


def role_overview(role: AgentRole, project: Project | None = None) -> list[TemplateRow]:
    """The six template types of ``role`` (PRD order) with each layer's active version and
    version count; the override layer only when ``project`` is given."""
    templates = PromptTemplate.objects.filter(role=role).filter(project__isnull=True)
    if project is not None:
        templates = PromptTemplate.objects.filter(role=role, project__in=[project]) | templates
    by_key: dict[tuple[str, int | None], PromptTemplate] = {(t.template_type, t.project_id): t for t in templates}
    active = {
        v.template_id: v
        for v in PromptVersion.objects.filter(template__in=by_key.values(), is_active=True).select_related("created_by")
    }
    counts: dict[int, int] = {}
    for template_id in PromptVersion.objects.filter(template__in=by_key.values()).values_list("template_id", flat=True):
        counts[template_id] = counts.get(template_id, 0) + 1
    rows = []
    for template_type in TEMPLATE_TYPES:
        base = by_key.get((template_type, None))
        override = by_key.get((template_type, project.pk)) if project else None
        rows.append(
            TemplateRow(
                template_type,
                active.get(base.pk) if base else None,
                counts.get(base.pk, 0) if base else 0,
                active.get(override.pk) if override else None,
                counts.get(override.pk, 0) if override else 0,
                project,
            )
        )
    return rows


def version_document(version: PromptVersion | None) -> dict[str, Any] | None:
    """A version in the API's shape (PRD §4.5 ``PromptTemplate`` fields plus history ones)."""
    if version is None:
        return None
    template = version.template
    return {
        "id": version.pk,
        "role": template.role.role,
        "template_type": template.template_type,
        "project": template.project.slug if template.project else None,
        "version": version.version,
        "content": version.content,
        "variables": version.variables,
        "language": version.language,
        "is_active": version.is_active,
        "note": version.note,
        "rollback_of": version.rollback_of or None,
        "created_by": version.created_by.get_username() if version.created_by else None,
        "created_at": version.created_at,
    }


_TEMPLATE_SYNTAX = re.compile(r"\{\{.*?\}\}|\{%.*?%\}|\{#.*?#\}", re.S)
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_LATIN_WORD = re.compile(r"[A-Za-z]{2,}")


def content_languages(content: str) -> list[str]:
    """The languages a template's text is written in, as the operator reads it (issue 32:
    the role page shows what the text holds, not the declared ``language``): ``"en"`` when
    it has English words, ``"zh"`` when it has Chinese characters, both when both, in that
    order; Jinja tags and variable names do not count. ``[]`` for an empty text."""
    text = _TEMPLATE_SYNTAX.sub(" ", content)
    return [code for code, pattern in (("en", _LATIN_WORD), ("zh", _CJK)) if pattern.search(text)]


def role_template_languages(role: AgentRole) -> dict[str, list[str]]:
    """``template_type -> content_languages`` of ``role``'s active global versions."""
    versions = PromptVersion.objects.filter(template__role=role, template__project__isnull=True, is_active=True)
    return {v.template.template_type: content_languages(v.content) for v in versions.select_related("template")}
