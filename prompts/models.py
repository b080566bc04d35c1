"""Prompt templates and their versions (PRD §4.5 PromptConfig / PromptTemplate).

A template is (role, template_type, project): project NULL is the global layer, a project
row is that project's override layer. Versions are never edited; exactly one is active.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from capabilities.models import AgentRole, Project

TEMPLATE_TYPES = ("system_prompt", "persona", "context_template", "output_format", "tool_instruction", "guardrails")
"""The six template types of PRD §4.5 PromptConfig, in the order they are assembled."""


class PromptTemplate(models.Model):
    """One of a role's six templates in one layer; ``updated_at`` moves with every version
    saved or activated (PRD §4.5 ``PromptTemplate.updated_at``)."""

    role = models.ForeignKey(AgentRole, on_delete=models.CASCADE, related_name="prompt_templates")
    template_type = models.CharField(max_length=20, choices=[(t, t) for t in TEMPLATE_TYPES])
    project = models.ForeignKey(Project, null=True, blank=True, on_delete=models.CASCADE)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["role", "template_type"], condition=Q(project__isnull=True), name="prompt_template_global"
            ),
            models.UniqueConstraint(
                fields=["project", "role", "template_type"],
                condition=Q(project__isnull=False),
                name="prompt_template_project",
            ),
        ]
        ordering = ["role__sort_order", "template_type"]

    def __str__(self) -> str:
        layer = self.project.slug if self.project else "global"
        return f"{self.role.role}/{self.template_type} ({layer})"

    @property
    def active_version(self) -> PromptVersion | None:
        return self.versions.filter(is_active=True).first()


class PromptVersion(models.Model):
    """An immutable version of a template (PRD §4.5): SemVer ``version``, ``content``,
    ``variables`` ``[{name, description, required, default}]``, ``language``; at most one
    active per template. ``rollback_of`` names the version a rollback restored."""

    template = models.ForeignKey(PromptTemplate, on_delete=models.CASCADE, related_name="versions")
    version = models.CharField(max_length=64)
    content = models.TextField()
    variables = models.JSONField(default=list, blank=True, help_text="[{name, description, required, default}]")
    language = models.CharField(max_length=16, default="en")
    is_active = models.BooleanField(default=False)
    note = models.CharField(max_length=500, blank=True)
    rollback_of = models.CharField(max_length=64, blank=True, help_text="Version this one restores, if a rollback.")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["template", "version"], name="prompt_version_unique"),
            models.UniqueConstraint(fields=["template"], condition=Q(is_active=True), name="prompt_one_active"),
        ]
        ordering = ["template", "-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.template} v{self.version}{' (active)' if self.is_active else ''}"
