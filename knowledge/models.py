"""Knowledge sources and their chunks (seed 003 KnowledgeContext).

A ``KnowledgeSource`` is one uploaded document attached to a role or to a project (exactly
one of them); its ``load_level`` says how many of its chunks are indexed (``LOAD_LIMITS``).
Each ``KnowledgeChunk`` is mirrored into the FTS5 table ``knowledge_chunk_fts`` by triggers
(migration 0002), so the index changes in the same transaction as the chunks.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from capabilities.models import AgentRole, Project


class LoadLevel(models.TextChoices):
    BASIC = "basic", "Basic (first 20 chunks)"
    ADVANCED = "advanced", "Advanced (first 100 chunks)"
    EXPERT = "expert", "Expert (first 500 chunks)"
    FULL = "full", "Full (every chunk)"


LOAD_LIMITS: dict[str, int | None] = {
    LoadLevel.BASIC: 20,
    LoadLevel.ADVANCED: 100,
    LoadLevel.EXPERT: 500,
    LoadLevel.FULL: None,
}
"""Load level -> how many chunks of a document (in document order) are stored and indexed;
None = all of them. A document's later chunks are not searchable below FULL."""


class ContentType(models.TextChoices):
    MARKDOWN = "md", "Markdown"
    TEXT = "txt", "Plain text"
    HTML = "html", "HTML"


class KnowledgeSource(models.Model):
    """One document of a role's or a project's knowledge."""

    name = models.CharField(max_length=200)
    role = models.ForeignKey(AgentRole, null=True, blank=True, on_delete=models.CASCADE, related_name="knowledge")
    project = models.ForeignKey(Project, null=True, blank=True, on_delete=models.CASCADE, related_name="knowledge")
    load_level = models.CharField(max_length=10, choices=LoadLevel.choices, default=LoadLevel.BASIC)
    content_type = models.CharField(max_length=4, choices=ContentType.choices)
    uploaded_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)
    chunk_count = models.PositiveIntegerField(default=0, help_text="Chunks indexed (at most the load level's limit).")
    total_chunks = models.PositiveIntegerField(default=0, help_text="Chunks the whole document has.")

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(
                condition=(models.Q(role__isnull=False) & models.Q(project__isnull=True))
                | (models.Q(role__isnull=True) & models.Q(project__isnull=False)),
                name="knowledge_source_role_xor_project",
            )
        ]

    def __str__(self) -> str:
        return self.name


class KnowledgeChunk(models.Model):
    """One passage of a source (about ``chunking.CHUNK_CHARS`` characters)."""

    source = models.ForeignKey(KnowledgeSource, on_delete=models.CASCADE, related_name="chunks")
    ordinal = models.PositiveIntegerField()
    heading = models.CharField(max_length=300, blank=True)
    text = models.TextField()

    class Meta:
        ordering = ["source", "ordinal"]
        constraints = [models.UniqueConstraint(fields=["source", "ordinal"], name="knowledge_chunk_ordinal")]

    def __str__(self) -> str:
        return f"{self.source.name} #{self.ordinal}"
