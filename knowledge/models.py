"""Knowledge sources and their chunks (seed 003 KnowledgeContext).

A ``KnowledgeSource`` is one document attached to a role, a skill or a project (exactly one
of them): uploaded (``origin`` ``upload``) or read from the project's folder (``folder``, its
``path`` relative to the folder). Its ``document`` keeps the text, so it can be re-indexed
at another load level; ``load_level`` says how many of its chunks are indexed
(``LOAD_LIMITS``). A folder source also keeps what its file was when indexed
(``byte_size``, ``file_mtime_ns``, ``content_sha256``), so the folder's changes since then
are seen (``knowledge.folder_changes``). Each ``KnowledgeChunk`` carries its ``language`` (``zh`` when CJK
characters make up a tenth of its letters, else ``en``) and its search words
(``heading_words``, ``text_words``: ``knowledge.words``, jieba's words for Chinese, stems for
the rest, written with the chunk; ``words_version`` says which cutting made them). On SQLite
those words are mirrored into the FTS5 table ``knowledge_chunk_fts`` by triggers (migration
0007); on PostgreSQL a GIN expression index holds them (migration 0007). Either way the
index changes in the same transaction as the chunks. With the optional
``embeddings`` extra a chunk also keeps its vector (``embedding``: 512 float32 in a binary
column, portable across SQLite and PostgreSQL; ``embedding_model`` names the model, see
``knowledge.embeddings``), written with the chunk.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils.translation import pgettext_lazy

from capabilities.models import AgentRole, Project, Skill


class LoadLevel(models.TextChoices):
    BASIC = "basic", pgettext_lazy("load level", "Basic (first 20 chunks)")
    ADVANCED = "advanced", pgettext_lazy("load level", "Advanced (first 100 chunks)")
    EXPERT = "expert", pgettext_lazy("load level", "Expert (first 500 chunks)")
    FULL = "full", pgettext_lazy("load level", "Full (every chunk)")


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
    RST = "rst", "reStructuredText"
    CODE = "code", "Source code"


class Origin(models.TextChoices):
    UPLOAD = "upload", "Uploaded"
    FOLDER = "folder", "Project folder"


class ChunkLanguage(models.TextChoices):
    ENGLISH = "en", "English (and other spaced scripts)"
    CHINESE = "zh", "Chinese"


class KnowledgeSource(models.Model):
    """One document of a role's, a skill's or a project's knowledge."""

    name = models.CharField(max_length=200)
    role = models.ForeignKey(AgentRole, null=True, blank=True, on_delete=models.CASCADE, related_name="knowledge")
    skill = models.ForeignKey(Skill, null=True, blank=True, on_delete=models.CASCADE, related_name="knowledge")
    project = models.ForeignKey(Project, null=True, blank=True, on_delete=models.CASCADE, related_name="knowledge")
    origin = models.CharField(max_length=8, choices=Origin.choices, default=Origin.UPLOAD)
    path = models.CharField(
        max_length=1000, blank=True, help_text="A folder source's path relative to the project's folder."
    )
    document = models.TextField(blank=True, help_text="The document's text as uploaded or read (re-indexing reads it).")
    byte_size = models.PositiveIntegerField(default=0, help_text="Bytes of the document as uploaded or read.")
    file_mtime_ns = models.BigIntegerField(
        null=True, blank=True, help_text="A folder source's file modification time when indexed (ns since the epoch)."
    )
    content_sha256 = models.CharField(
        max_length=64, blank=True, help_text="SHA-256 (hex) of a folder source's text when indexed."
    )
    indexed_at = models.DateTimeField(null=True, blank=True)
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
                condition=(models.Q(role__isnull=False) & models.Q(skill__isnull=True) & models.Q(project__isnull=True))
                | (models.Q(role__isnull=True) & models.Q(skill__isnull=False) & models.Q(project__isnull=True))
                | (models.Q(role__isnull=True) & models.Q(skill__isnull=True) & models.Q(project__isnull=False)),
                name="knowledge_source_one_owner",
            ),
            models.CheckConstraint(
                condition=models.Q(origin="upload") | models.Q(project__isnull=False),
                name="knowledge_folder_source_of_a_project",
            ),
        ]
        indexes = [models.Index(fields=["project", "origin", "path"], name="knowledge_source_folder_path")]

    def __str__(self) -> str:
        return self.name


class KnowledgeChunk(models.Model):
    """One passage of a source (about ``chunking.CHUNK_CHARS`` characters)."""

    source = models.ForeignKey(KnowledgeSource, on_delete=models.CASCADE, related_name="chunks")
    ordinal = models.PositiveIntegerField()
    heading = models.CharField(max_length=300, blank=True)
    text = models.TextField()
    language = models.CharField(max_length=2, choices=ChunkLanguage.choices, default=ChunkLanguage.ENGLISH)
    embedding = models.BinaryField(
        null=True,
        blank=True,
        editable=False,
        help_text="The chunk's vector (512 float32, little-endian) when the embeddings extra is on.",
    )
    embedding_model = models.CharField(
        max_length=40, blank=True, editable=False, help_text="The model that made the vector (empty: none)."
    )
    heading_words = models.TextField(
        blank=True, default="", editable=False, help_text="The heading's search words, space-separated."
    )
    text_words = models.TextField(
        blank=True, default="", editable=False, help_text="The text's search words, space-separated."
    )
    words_version = models.PositiveSmallIntegerField(
        default=0, editable=False, help_text="knowledge.words.WORDS_VERSION of the words (0: never cut)."
    )

    class Meta:
        ordering = ["source", "ordinal"]
        constraints = [models.UniqueConstraint(fields=["source", "ordinal"], name="knowledge_chunk_ordinal")]

    def __str__(self) -> str:
        return f"{self.source.name} #{self.ordinal}"
