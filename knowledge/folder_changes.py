"""Project folders that stay indexed (seed 003 KnowledgeContext, issue 15): what changed in a
project's folder since its files were indexed, and re-indexing only that.

Every folder source records its file as indexed (``byte_size``, ``file_mtime_ns``,
``content_sha256``: ``knowledge.sources.record_file``). ``folder_changes`` walks the folder
as indexing does (``knowledge.sources.folder_files``) and sorts its files:

- **new**: a file of a known type with no source yet that indexing would take; the files it
  would refuse (empty, too large, binary, not UTF-8, no text, a name that is not UTF-8, a
  hard link, a link outside, over ``MAX_FOLDER_FILES``) are **skipped** with the reason and
  do not make the folder stale;
- **changed**: a source whose file's size or modification time differs from the record and
  whose text's digest differs too (a file touched but not edited is ``touched``, not
  changed); a file that can no longer be read (binary, too large, now a link outside) is
  changed, and refreshing removes its source with the reason;
- **removed**: a source whose file is gone (or no longer under the folder).

``refresh_project_folder`` re-indexes exactly the new and changed files and drops the
removed ones' sources, in one transaction; unchanged sources keep their rows, chunks and
load levels. Reading and cutting happen before the transaction; inside it the folder's
sources are read again, so two refreshes at once never make a path twice.

A look is bounded as indexing is: the walk stops after ``MAX_FOLDER_ENTRIES`` entries
(``truncated``), and at most ``MAX_FOLDER_BYTES`` are read (only files whose size or time
moved, and new files); past that budget a moved file counts as changed unread.
"""

from __future__ import annotations

import codecs
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.db import transaction
from django.utils.translation import gettext as _

from capabilities.models import Project
from capabilities.snapshot import project_directory
from knowledge.chunking import Chunk, chunk_document
from knowledge.models import LOAD_LIMITS, ContentType, KnowledgeSource, LoadLevel, Origin
from knowledge.sources import (
    FOLDER_EXTENSIONS,
    MAX_FOLDER_BYTES,
    MAX_FOLDER_FILES,
    MAX_SOURCE_BYTES,
    FolderFile,
    check_level,
    chunk_vectors,
    decode,
    folder_files,
    kept_chunks,
    owner_rows,
    read_folder_file,
    record_file,
    store_chunks,
    text_digest,
)
from teamclaw.errors import InvalidField

UNCHANGED, CHANGED, REMOVED, NEW = "unchanged", "changed", "removed", "new"
"""A folder file's state since indexing (``FolderChanges.file_state``)."""


@dataclass(slots=True)
class FolderChanges:
    """What changed in ``project``'s folder since indexing (module docstring). Paths are
    relative to ``folder`` (POSIX), sorted; ``touched`` are sources whose file's time moved
    but whose text did not (``seen``: each as the check read it, what a refresh records);
    ``skipped`` are files indexing would refuse (``[{path, reason}]``: neither new nor
    stale); ``truncated`` says the walk stopped at ``MAX_FOLDER_ENTRIES`` with
    ``not_looked_at`` entries left (sources whose file is past it count as unchanged);
    ``folder_exists`` is False when the folder itself is gone (then every source is removed)."""

    project: str
    folder: str
    folder_exists: bool = True
    new: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    touched: list[str] = field(default_factory=list)
    unchanged: int = 0
    skipped: list[dict[str, str]] = field(default_factory=list)
    truncated: bool = False
    not_looked_at: int = 0
    seen: dict[str, FolderFile] = field(default_factory=dict)

    @property
    def stale(self) -> bool:
        """Whether anything is new, changed or removed (what a refresh would do)."""
        return bool(self.new or self.changed or self.removed)

    def file_state(self, path: str) -> str:
        """``new``, ``changed``, ``removed`` or ``unchanged`` (a touched file is unchanged)."""
        for state, paths in ((CHANGED, self.changed), (REMOVED, self.removed), (NEW, self.new)):
            if path in paths:
                return state
        return UNCHANGED

    def counts(self) -> dict[str, int]:
        """``{new, changed, removed, unchanged}`` (files)."""
        return {
            NEW: len(self.new),
            CHANGED: len(self.changed),
            REMOVED: len(self.removed),
            UNCHANGED: self.unchanged,
        }

    def as_dict(self) -> dict[str, Any]:
        """The API's shape: ``{project, folder, folder_exists, stale, counts: {new, changed,
        removed, unchanged}, new, changed, removed (paths), skipped: [{path, reason}],
        truncated, not_looked_at}``."""
        return {
            "project": self.project,
            "folder": self.folder,
            "folder_exists": self.folder_exists,
            "stale": self.stale,
            "counts": self.counts(),
            NEW: list(self.new),
            CHANGED: list(self.changed),
            REMOVED: list(self.removed),
            "skipped": list(self.skipped),
            "truncated": self.truncated,
            "not_looked_at": self.not_looked_at,
        }


def _folder_sources(project: Project) -> dict[str, KnowledgeSource]:
    """``path -> source`` of ``project``'s folder sources (documents not loaded)."""
    rows = KnowledgeSource.objects.filter(project=project, origin=Origin.FOLDER).defer("document")
    return {source.path: source for source in rows}


@dataclass(slots=True)
class _Budget:
    """Bytes a look at a folder may still read (``MAX_FOLDER_BYTES`` at first, as indexing)."""

    left: int

    def allows(self, size: int) -> bool:
        """Whether ``size`` more bytes may be read; takes them when so."""
        if size > self.left:
            return False
        self.left -= size
        return True


def _has_changed(root: Path, path: Path, source: KnowledgeSource, budget: _Budget) -> tuple[bool, FolderFile | None]:
    """``(changed, seen)`` for ``source``'s file at ``path``: the record's size and time
    first, the text's digest when they differ (``seen``: the file as read, when it was read
    and its text is the same: a touched file). Past ``budget`` a file whose size or time
    moved is changed without reading it."""
    try:
        stat = path.stat()
    except OSError:
        return True, None
    if stat.st_size == source.byte_size and stat.st_mtime_ns == source.file_mtime_ns:
        return False, None
    if not budget.allows(stat.st_size):
        return True, None
    try:
        file = read_folder_file(root, path, "path")
    except InvalidField:
        return True, None
    if text_digest(file.text) != source.content_sha256:
        return True, None
    return False, file


PEEK_BYTES = 8192
"""What a look reads of a new file to tell whether indexing would take it (bytes)."""


def _refusal(path: Path, budget: _Budget) -> str | None:
    """Why a new file at ``path`` cannot be indexed, or None, from its first ``PEEK_BYTES``
    at most (within ``budget``; past it: None, it counts as new): empty, too large, binary
    (a NUL byte), not UTF-8, or, when it fits in the peek, no text once cut. A larger file
    whose first bytes are text counts as new."""
    try:
        size = path.stat().st_size
    except OSError as error:
        return _("%(name)s cannot be read (%(reason)s)") % {"name": path.name, "reason": error.strerror or "?"}
    if size == 0:
        return _("holds no text")
    if size > MAX_SOURCE_BYTES:
        return _("%(name)s is larger than %(limit)s bytes") % {"name": path.name, "limit": f"{MAX_SOURCE_BYTES:,}"}
    if not budget.allows(min(size, PEEK_BYTES)):
        return None
    try:
        with path.open("rb") as handle:
            head = handle.read(PEEK_BYTES)
    except OSError as error:
        return _("%(name)s cannot be read (%(reason)s)") % {"name": path.name, "reason": error.strerror or "?"}
    whole = len(head) == size
    if whole:  # the same refusals as indexing
        try:
            text = decode(head, "path")
        except InvalidField as refused:
            return refused.reason
    else:  # decode's refusals, on the first bytes
        if b"\x00" in head:
            return "is a binary file (it holds NUL bytes); upload Markdown, text or HTML"
        try:
            text = codecs.getincrementaldecoder("utf-8-sig")().decode(head, final=False)
        except UnicodeDecodeError as exc:
            return f"is not UTF-8 text (byte {exc.start})"
    if whole and not chunk_document(text, FOLDER_EXTENSIONS[path.suffix.lower()], name=path.name):
        return _("holds no text")
    return None


def folder_changes(project: Project) -> FolderChanges:
    """What changed in ``project``'s folder since its files were indexed (module docstring).
    Looks at most at ``MAX_FOLDER_ENTRIES`` entries (``truncated``), stats every file of a
    known type, reads at most ``MAX_FOLDER_BYTES`` in all (files whose size or time moved,
    new files to tell whether indexing would take them); writes nothing."""
    root = project_directory(project)
    indexed = _folder_sources(project)
    if not root.is_dir():
        return FolderChanges(project.slug, str(root), folder_exists=False, removed=sorted(indexed))
    root = root.resolve()
    listing = folder_files(root)
    changes = FolderChanges(project.slug, str(root), skipped=listing.skipped, truncated=listing.truncated)
    changes.not_looked_at = listing.not_looked_at
    budget = _Budget(MAX_FOLDER_BYTES)
    present: set[str] = set()
    for path in listing.files:
        relative = path.relative_to(root).as_posix()
        present.add(relative)
        source = indexed.get(relative)
        if source is None:
            if len(indexed) + len(changes.new) >= MAX_FOLDER_FILES:
                reason = _("over the limit of %(n)d files") % {"n": MAX_FOLDER_FILES}
                changes.skipped.append({"path": relative, "reason": reason})
                continue
            refusal = _refusal(path, budget)
            if refusal is None:
                changes.new.append(relative)
            else:
                changes.skipped.append({"path": relative, "reason": refusal})
            continue
        changed, seen = _has_changed(root, path, source, budget)
        if changed:
            changes.changed.append(relative)
        else:
            changes.unchanged += 1
            if seen is not None:
                changes.touched.append(relative)
                changes.seen[relative] = seen
    for relative in sorted(set(indexed) - present):
        if listing.truncated and (root / relative).is_file():
            changes.unchanged += 1  # past the walk's bound: not looked at, its source is kept
        else:
            changes.removed.append(relative)
    changes.new.sort()
    changes.changed.sort()
    return changes


@dataclass(slots=True)
class FolderRefresh:
    """What ``refresh_project_folder`` did: sources ``added`` and ``updated`` (their files
    were new or changed), paths whose sources were ``removed``, files ``skipped`` with why
    (``[{path, reason}]``; a changed file that cannot be indexed any more is also removed),
    and how many sources were left as they were (``unchanged``); ``truncated`` when the walk
    stopped at ``MAX_FOLDER_ENTRIES`` (``FolderChanges``)."""

    folder: str
    added: list[KnowledgeSource] = field(default_factory=list)
    updated: list[KnowledgeSource] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    skipped: list[dict[str, str]] = field(default_factory=list)
    unchanged: int = 0
    truncated: bool = False


def _folder_level(indexed: dict[str, KnowledgeSource], load_level: str | None) -> str:
    """The load level for new files: the one given, else the level most of the folder's
    sources have, else ``basic``."""
    if load_level:
        return check_level(load_level)
    levels = Counter(source.load_level for source in indexed.values())
    return levels.most_common(1)[0][0] if levels else str(LoadLevel.BASIC)


def _prepare(root: Path, relative: str) -> tuple[FolderFile, list[Chunk]]:
    """Read and cut one file; ``InvalidField`` (on ``path``) when it cannot be indexed."""
    file = read_folder_file(root, root / relative, "path")
    chunks = chunk_document(file.text, FOLDER_EXTENSIONS[Path(relative).suffix.lower()], name=relative)
    if not chunks:
        raise InvalidField(_("holds no text"), "path")
    return file, chunks


def refresh_project_folder(project: str | None, load_level: str | None = None, user: Any = None) -> FolderRefresh:
    """Re-index only what changed in ``project``'s folder since indexing (module docstring):
    new files get sources (at ``load_level``, else the folder's usual level), changed ones
    are cut again at their own level, removed ones' sources are dropped, all in one
    transaction; at most ``MAX_FOLDER_FILES`` sources and ``MAX_FOLDER_BYTES`` in all, as
    indexing. Raises ``InvalidField`` on ``project`` (missing, unknown, its folder gone) or
    ``load_level``."""
    if not project:
        raise InvalidField(_("a project is required"), "project")
    project_row = owner_rows(None, None, project)[2]
    assert project_row is not None
    root = project_directory(project_row)
    if not root.is_dir():
        raise InvalidField(_("the project's folder %(folder)s does not exist") % {"folder": root}, "project")
    root = root.resolve()
    changes = folder_changes(project_row)
    indexed = _folder_sources(project_row)
    level = _folder_level(indexed, load_level)
    done = FolderRefresh(
        folder=str(root), unchanged=changes.unchanged, skipped=list(changes.skipped), truncated=changes.truncated
    )
    gone = set(changes.removed)
    ready: dict[str, tuple[FolderFile, list[Chunk], list[bytes] | None]] = {}
    kept_bytes = sum(s.byte_size for p, s in indexed.items() if p not in gone and p not in changes.changed)
    kept_files = len(indexed) - len(gone)
    for relative in [*changes.changed, *changes.new]:
        try:
            file, chunks = _prepare(root, relative)
        except InvalidField as refused:
            done.skipped.append({"path": relative, "reason": refused.reason})
            if relative in indexed:
                gone.add(relative)  # its source no longer says what the file holds
                kept_files -= 1
            continue
        if relative not in indexed and kept_files >= MAX_FOLDER_FILES:
            done.skipped.append(
                {"path": relative, "reason": _("over the limit of %(n)d files") % {"n": MAX_FOLDER_FILES}}
            )
            continue
        if kept_bytes + file.size > MAX_FOLDER_BYTES:
            done.skipped.append(
                {"path": relative, "reason": _("over the limit of %(n)s bytes in all") % {"n": f"{MAX_FOLDER_BYTES:,}"}}
            )
            if relative in indexed:
                gone.add(relative)
                kept_files -= 1
            continue
        kept_bytes += file.size
        kept_files += relative not in indexed
        # vectors (embeddings extra) are computed here, outside the transaction below
        limit = LOAD_LIMITS[indexed[relative].load_level if relative in indexed else level]
        ready[relative] = (file, chunks, chunk_vectors(chunks if limit is None else chunks[:limit]))
    with transaction.atomic():
        current = _folder_sources(project_row)  # again, inside the transaction
        removed = [current[p] for p in sorted(gone) if p in current]
        KnowledgeSource.objects.filter(pk__in=[s.pk for s in removed]).delete()
        done.removed = [s.path for s in removed]
        for relative, (file, chunks, vectors) in ready.items():
            source = current.get(relative)
            if source is None:
                source = KnowledgeSource(
                    name=relative[-200:],
                    project=project_row,
                    origin=Origin.FOLDER,
                    path=relative,
                    load_level=level,
                    content_type=ContentType(FOLDER_EXTENSIONS[Path(relative).suffix.lower()]),
                    uploaded_by=user if getattr(user, "is_authenticated", False) else None,
                )
                done.added.append(source)
            else:
                done.updated.append(source)
            record_file(source, file)
            if vectors is not None and len(vectors) != len(kept_chunks(source, chunks)):
                vectors = None  # its level changed meanwhile: embed_knowledge fills them
            store_chunks(source, chunks, vectors)
        for relative in changes.touched:  # the text is the same: only the time moves on
            if relative in current:
                _record_time(current[relative], changes.seen[relative])
    return done


def _record_time(source: KnowledgeSource, seen: FolderFile) -> None:
    """Note a touched file's size and modification time as the check saw them (``seen``:
    taken before its text was read and found the same), so the next look need not read it;
    an edit since then moves them again and is seen next time."""
    KnowledgeSource.objects.filter(pk=source.pk).update(file_mtime_ns=seen.mtime_ns, byte_size=seen.size)
