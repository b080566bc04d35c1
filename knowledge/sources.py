"""Adding and removing knowledge sources (the API's ``/knowledge/sources``).

``add_source`` checks an upload, cuts it into chunks (``chunking``) and stores the first
``LOAD_LIMITS[load_level]`` of them with the source in one transaction (the FTS5 index is
kept by triggers in that transaction). Every refusal is an ``InvalidField`` naming the
field at fault.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePath
from typing import Any

from django.db import transaction

from capabilities.models import AgentRole, Project
from knowledge.chunking import chunk_document
from knowledge.models import LOAD_LIMITS, ContentType, KnowledgeChunk, KnowledgeSource, LoadLevel
from teamclaw.errors import InvalidField

MAX_SOURCE_BYTES = 1_000_000
"""Largest document accepted (bytes, 1 MB)."""
EXTENSIONS = {".md": "md", ".markdown": "md", ".txt": "txt", ".text": "txt", ".html": "html", ".htm": "html"}
MEDIA_TYPES = {"text/markdown": "md", "text/x-markdown": "md", "text/plain": "txt", "text/html": "html"}


@dataclass(frozen=True, slots=True)
class Upload:
    """An uploaded file: its name, the media type the client sent and its first bytes
    (at most ``MAX_SOURCE_BYTES + 1``, so an oversized file is noticed without reading it all)."""

    name: str
    media_type: str
    data: bytes


def content_type_of(upload: Upload) -> str:
    """``md``, ``txt`` or ``html`` from the file's extension, else from its media type."""
    kind = EXTENSIONS.get(PurePath(upload.name).suffix.lower())
    kind = kind or MEDIA_TYPES.get(upload.media_type.split(";")[0].strip().lower())
    if kind is None:
        raise InvalidField("must be a Markdown (.md), text (.txt) or HTML (.html) file", "file")
    return kind


def decode(data: bytes) -> str:
    """The text of a document: UTF-8 (a BOM is dropped), no NUL bytes."""
    if len(data) > MAX_SOURCE_BYTES:
        raise InvalidField(f"is larger than {MAX_SOURCE_BYTES:,} bytes", "file")
    if b"\x00" in data:
        raise InvalidField("is a binary file (it holds NUL bytes); upload Markdown, text or HTML", "file")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InvalidField(f"is not UTF-8 text (byte {exc.start})", "file") from None


def add_source(
    upload: Upload | None,
    *,
    role: str | None,
    project: str | None,
    load_level: str | None,
    name: str | None = None,
    user: Any = None,
) -> KnowledgeSource:
    """Store ``upload`` as a source of ``role`` (a role name) or ``project`` (a slug)."""
    if upload is None:
        raise InvalidField("a file is required (multipart field 'file')", "file")
    if role and project:
        raise InvalidField("give a role or a project, not both", "project")
    if not role and not project:
        raise InvalidField("a role or a project is required", "role")
    level = load_level or LoadLevel.BASIC
    if level not in LOAD_LIMITS:
        raise InvalidField(f"must be one of {', '.join(LoadLevel.values)}, not {level!r}", "load_level")
    role_row = project_row = None
    if role:
        role_row = AgentRole.objects.filter(role=role).first()
        if role_row is None:
            raise InvalidField(f"there is no role '{role}'", "role")
    if project:
        project_row = Project.objects.filter(slug=project).first()
        if project_row is None:
            raise InvalidField(f"there is no project '{project}'", "project")
    title = (name or PurePath(upload.name).name or "document").strip()[:200]
    kind = content_type_of(upload)
    chunks = chunk_document(decode(upload.data), kind)
    if not chunks:
        raise InvalidField("holds no text", "file")
    limit = LOAD_LIMITS[level]
    kept = chunks if limit is None else chunks[:limit]
    with transaction.atomic():
        source = KnowledgeSource.objects.create(
            name=title,
            role=role_row,
            project=project_row,
            load_level=level,
            content_type=ContentType(kind),
            uploaded_by=user if getattr(user, "is_authenticated", False) else None,
            chunk_count=len(kept),
            total_chunks=len(chunks),
        )
        KnowledgeChunk.objects.bulk_create(
            KnowledgeChunk(source=source, ordinal=n, heading=c.heading, text=c.text) for n, c in enumerate(kept)
        )
    return source


def source_document(source: KnowledgeSource) -> dict[str, Any]:
    """The API's view of a source."""
    return {
        "id": source.pk,
        "name": source.name,
        "role": source.role.role if source.role else None,
        "project": source.project.slug if source.project else None,
        "load_level": source.load_level,
        "content_type": source.content_type,
        "uploaded_by": source.uploaded_by.get_username() if source.uploaded_by else None,
        "created_at": source.created_at.isoformat(),
        "chunk_count": source.chunk_count,
        "total_chunks": source.total_chunks,
    }
