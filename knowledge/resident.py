"""What a process keeps of the knowledge index in memory, and how it knows it is still the
database's (issue 32; seed 003 KnowledgeContext; docs/architecture.md "Knowledge").

Two tables, each read from the database at its first use and kept until the index changes:

- ``chunks()`` (``ChunkTable``): every chunk's id and its source's id, two int64 arrays
  ordered by id (16 bytes a chunk: 1.6 MB at 100,000 chunks). Full-text search keeps the hits
  of the sources in scope with it instead of joining the chunks' table in SQL (a row lookup
  per matching chunk: 8 of the 12 ms of a search at 100,000 chunks), and takes the number of
  chunks (bm25's N) from it;
- ``vectors()`` (``VectorTable``): every chunk's vector of the current model
  (``knowledge.embeddings.MODEL_ID``) as one contiguous float32 matrix, rows in id order, with
  their ids and source ids (2 KB a chunk: 200 MB at 100,000 chunks). Hybrid ranking scans it
  with one matrix product instead of reading 2 KB a chunk from the database per query.

**Invalidation.** Migration 0008 keeps a generation number that changes, in the same
transaction, whenever a chunk is inserted, updated or deleted (triggers; never repeated, so a
rolled-back transaction cannot alias a later state). Every call reads it (one row by primary
key) before anything else; a kept table of another generation is read again. The number is
read first, so a table read while a writer commits is at least as new as the number it is
kept under, and the next call reads again. So a chunk added, changed or removed is found,
changed or gone at the very next search, in this process and every other, and inside the
transaction that wrote it. Tables are kept per database (alias and name). On a database
without the generation (neither SQLite nor PostgreSQL) nothing is kept: every call reads.

Thread-safe: a table is never changed once built; a lock guards the map of kept tables.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy
from django.db import connection

from knowledge.embeddings import DIMENSIONS, MODEL_ID, VECTOR_BYTES
from knowledge.models import KnowledgeChunk

GENERATION_TABLE = "knowledge_index_generation"
"""Migration 0008's one-row table (``id`` 1, ``generation``)."""
BATCH = 4096
"""Rows read from the database at a time when a table is loaded."""

T = TypeVar("T")
_lock = threading.Lock()
_kept: dict[tuple[str, str, str], tuple[int, Any]] = {}


class _BySource:
    """Per-source counts of a table's rows, so a scope (a list of source ids) is checked
    against the few hundred sources rather than every row."""

    sources: Any
    distinct: Any
    counts: Any

    def count_in(self, source_ids: list[int]) -> int:
        """How many rows belong to one of ``source_ids``."""
        return int(self.counts[numpy.isin(self.distinct, _ids(source_ids))].sum())

    def covers(self, source_ids: list[int]) -> bool:
        """True when every row belongs to one of ``source_ids`` (then no filter is needed)."""
        return bool(numpy.isin(self.distinct, _ids(source_ids)).all())

    def rows_in(self, source_ids: list[int]) -> Any:
        """The row numbers (ascending) of the rows of ``source_ids``; None: every row."""
        if self.covers(source_ids):
            return None
        return numpy.flatnonzero(numpy.isin(self.sources, _ids(source_ids)))


@dataclass(frozen=True, slots=True)
class ChunkTable(_BySource):
    """Every chunk: ``ids`` (int64, ascending) and ``sources`` (int64, the source id of each);
    ``distinct`` sources and their ``counts`` of chunks; ``average_words``, the mean number of
    stored words (heading and text) of a chunk, bm25's average length (0.0 with no chunk)."""

    ids: Any
    sources: Any
    distinct: Any
    counts: Any
    average_words: float = 0.0

    def __len__(self) -> int:
        return int(self.ids.size)

    def in_sources(self, chunk_ids: list[int], source_ids: list[int]) -> Any:
        """A boolean array: which of ``chunk_ids`` belong to one of ``source_ids``; an id this
        table does not hold is False."""
        wanted = _ids(chunk_ids)
        if not self.ids.size:
            return numpy.zeros(wanted.shape, dtype=bool)
        at = numpy.searchsorted(self.ids, wanted).clip(0, self.ids.size - 1)
        return (self.ids[at] == wanted) & numpy.isin(self.sources[at], _ids(source_ids))


@dataclass(frozen=True, slots=True)
class VectorTable(_BySource):
    """The chunks with a vector of ``MODEL_ID``: ``ids`` and ``sources`` (int64, ascending ids),
    ``matrix`` (float32, one L2-normalised row of ``DIMENSIONS`` per chunk), ``distinct``
    sources and their ``counts`` of vectors; ``languages``, each chunk's language
    (``KnowledgeChunk.language``: ``zh`` or ``en``)."""

    ids: Any
    sources: Any
    distinct: Any
    counts: Any
    matrix: Any
    languages: Any

    def in_language(self, chunk_ids: list[int], language: str) -> list[bool]:
        """Whether each of ``chunk_ids`` (ids of this table) is in ``language``."""
        at = numpy.searchsorted(self.ids, _ids(chunk_ids))
        return [bool(flag) for flag in self.languages[at] == language]

    def nearest(self, query_vector: Any, source_ids: list[int], limit: int) -> list[int]:
        """The ids of the ``limit`` chunks of ``source_ids`` most similar (cosine) to
        ``query_vector`` (``DIMENSIONS`` float32, L2-normalised), the most similar first; ties
        go to the smaller id. One matrix product over the rows in scope (all of them, without
        a copy, when the scope holds every vector)."""
        rows = self.rows_in(source_ids)
        if limit <= 0 or not self.ids.size or (rows is not None and not rows.size):
            return []
        similarity = (self.matrix if rows is None else self.matrix[rows]) @ query_vector
        ids = self.ids if rows is None else self.ids[rows]
        limit = min(limit, similarity.size)
        best = numpy.argpartition(-similarity, limit - 1)[:limit]
        best = best[numpy.lexsort((ids[best], -similarity[best]))]
        return [int(i) for i in ids[best]]


def _ids(values: Any) -> Any:
    return numpy.asarray(values, dtype=numpy.int64)


def _per_source(sources: Any) -> tuple[Any, Any]:
    distinct, counts = numpy.unique(sources, return_counts=True)
    return distinct, counts


def generation() -> int | None:
    """The index's generation (migration 0008), or None on a database without one."""
    if connection.vendor not in ("sqlite", "postgresql"):
        return None
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT generation FROM {GENERATION_TABLE} WHERE id = 1")
        row = cursor.fetchone()
    return None if row is None else int(row[0])


def _kept_or_loaded(kind: str, load: Callable[[], T]) -> T:
    """The table ``kind`` of this database as kept, or ``load()``-ed and kept when the
    generation changed since (module docstring)."""
    current = generation()
    key = (connection.alias, str(connection.settings_dict.get("NAME")), kind)
    if current is not None:
        with _lock:
            kept = _kept.get(key)
        if kept is not None and kept[0] == current:
            return kept[1]
    table = load()
    if current is not None:
        with _lock:
            _kept[key] = (current, table)
    return table


def chunks() -> ChunkTable:
    """Every chunk's id and source id (module docstring)."""
    return _kept_or_loaded("chunks", _load_chunks)


def vectors() -> VectorTable:
    """Every chunk's vector of the current model, as one matrix (module docstring)."""
    return _kept_or_loaded("vectors", _load_vectors)


def forget() -> None:
    """Drop every kept table (they are read again at their next use)."""
    with _lock:
        _kept.clear()


def _word_count(column: str) -> str:
    """SQL (SQLite and PostgreSQL): the number of words of ``column`` (words joined by single spaces)."""
    return f"(CASE WHEN {column} = '' THEN 0 ELSE length({column}) - length(replace({column}, ' ', '')) + 1 END)"


def _load_chunks() -> ChunkTable:
    table = KnowledgeChunk._meta.db_table
    ids, sources, words = [], [], 0
    with connection.cursor() as cursor:
        words_of = f"{_word_count('heading_words')} + {_word_count('text_words')}"
        cursor.execute(f"SELECT id, source_id, {words_of} FROM {table} ORDER BY id")
        while rows := cursor.fetchmany(BATCH):
            triples = numpy.asarray(rows, dtype=numpy.int64).reshape(-1, 3)
            ids.append(triples[:, 0])
            sources.append(triples[:, 1])
            words += int(triples[:, 2].sum())
    empty = numpy.zeros(0, dtype=numpy.int64)
    by_source = numpy.concatenate(sources) if sources else empty
    count = sum(part.size for part in ids)
    return ChunkTable(
        numpy.concatenate(ids) if ids else empty, by_source, *_per_source(by_source), words / count if count else 0.0
    )


def _load_vectors() -> VectorTable:
    """Read in batches into numpy blocks (no per-row Python objects kept): a vector of another
    size than ``VECTOR_BYTES`` is left out."""
    table = KnowledgeChunk._meta.db_table
    ids: list[int] = []
    sources: list[int] = []
    languages: list[str] = []
    blocks: list[Any] = []
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT id, source_id, embedding, language FROM {table} "
            "WHERE embedding_model = %s AND embedding IS NOT NULL ORDER BY id",
            [MODEL_ID],
        )
        while rows := cursor.fetchmany(BATCH):
            kept = [row for row in rows if len(row[2]) == VECTOR_BYTES]
            ids += [row[0] for row in kept]
            sources += [row[1] for row in kept]
            languages += [row[3] for row in kept]
            if kept:
                data = b"".join(bytes(row[2]) for row in kept)
                blocks.append(numpy.frombuffer(data, dtype="<f4").reshape(len(kept), DIMENSIONS))
    matrix = numpy.concatenate(blocks) if blocks else numpy.zeros((0, DIMENSIONS), dtype="<f4")
    by_source = _ids(sources)
    return VectorTable(
        _ids(ids),
        by_source,
        *_per_source(by_source),
        numpy.ascontiguousarray(matrix),
        numpy.asarray(languages, dtype="<U2"),
    )
