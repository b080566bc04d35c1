"""Full-text search over knowledge chunks (seed 003 KnowledgeContext).

On SQLite the chunks are mirrored in an FTS5 table with the ``trigram`` tokenizer
(migration 0002, kept in step by triggers in the same transaction as the chunks), ranked
with ``bm25`` (a heading match counts twice). A query is cut into terms (``query_terms``):

- English (any non-CJK script): words of 3 or more letters or digits, lower-cased, minus a
  few stop words; each is matched as a substring (``"migration"`` also finds ``migrations``);
- Chinese (and Japanese kanji): there are no spaces between words, so every run of CJK
  characters is cut into its overlapping 3-character windows (``数据库迁移`` -> ``数据库``,
  ``据库迁``, ``库迁移``); bm25 ranks the chunks sharing most of them first.

The terms are OR-ed in one ``MATCH``. The trigram tokenizer cannot match fewer than three
characters, and most Chinese words are two, so a query with no term of three or more
characters (``缓存``, ``UI``) falls back to ``LIKE`` over its 2-character terms (CJK bigrams,
short words), scored by how many of them a chunk holds. On any other database (PostgreSQL)
every query takes that ``LIKE`` path (``icontains``): correct but unranked beyond term
counts and not indexed; the FTS path is SQLite-only for now.
"""

from __future__ import annotations

import operator
import re
from dataclasses import dataclass
from functools import reduce

from django.db import connection
from django.db.models import Q

from knowledge.models import KnowledgeChunk, KnowledgeSource

FTS_TABLE = "knowledge_chunk_fts"
MAX_TERMS = 64
"""Most terms of one query (the first distinct ones): bounds the cost of long inputs."""
LIKE_CANDIDATES = 2000
"""Most chunks the LIKE fallback scores."""

_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_CJK_RUN = re.compile(f"[{_CJK}]+")
_WORD = re.compile(rf"[^\W_{_CJK}]+|_+", re.UNICODE)
STOP_WORDS = frozenset(
    "the and for with that this are was were from what which how does did has have into onto its"
    " our your their can not but you all any who why when where will would should could about".split()
)


@dataclass(frozen=True, slots=True)
class Hit:
    """One chunk found for a query: its ``score`` (higher is better)."""

    chunk: KnowledgeChunk
    score: float


def query_terms(query: str) -> tuple[list[str], list[str]]:
    """``(long, short)`` terms of ``query`` (module docstring): ``long`` (3+ characters) for
    FTS5 trigram matching, ``short`` (2 characters: CJK bigrams, short words) for LIKE."""
    long: list[str] = []
    short: list[str] = []
    for run in _CJK_RUN.findall(query):
        long += [run[i : i + 3] for i in range(len(run) - 2)]
        short += [run[i : i + 2] for i in range(len(run) - 1)] or [run]
    for word in _WORD.findall(_CJK_RUN.sub(" ", query)):
        word = word.lower()
        if word.strip("_") == "":
            continue
        if len(word) >= 3:
            if word not in STOP_WORDS:
                long.append(word)
        elif len(word) == 2:
            short.append(word)
    return _distinct(long)[:MAX_TERMS], _distinct(short)[:MAX_TERMS]


def _distinct(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))


def fts_available() -> bool:
    """True on SQLite, where migration 0002 made the FTS5 table."""
    return connection.vendor == "sqlite"


def search(query: str, *, roles: list[str] | None = None, projects: list[str] | None = None, k: int = 5) -> list[Hit]:
    """The best ``k`` chunks for ``query`` among the sources of any of ``roles`` (role names)
    or ``projects`` (project slugs); every source when both are None. Best first."""
    long, short = query_terms(query)
    scope = _scope(roles, projects)
    if scope is None or k <= 0:
        return []
    if long and fts_available():
        return _fts(long, scope, k)
    return _like(long + short if not fts_available() else short, scope, k)


def _scope(roles: list[str] | None, projects: list[str] | None) -> Q | None:
    """The filter of the sources searched; None when the scope is given but empty."""
    if roles is None and projects is None:
        return Q()
    names, slugs = [r for r in roles or [] if r], [p for p in projects or [] if p]
    if not names and not slugs:
        return None
    parts = [Q(role__role__in=names)] if names else []
    if slugs:
        parts.append(Q(project__slug__in=slugs))
    return reduce(operator.or_, parts)


def _quote(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


def _fts(terms: list[str], scope: Q, k: int) -> list[Hit]:
    # The MATCH is run once and materialized, then filtered to the sources in scope: asked
    # as ``rowid IN (chunks in scope)`` SQLite re-runs the full-text query per candidate
    # (a second for 10,000 chunks instead of milliseconds).
    match = " OR ".join(_quote(t) for t in terms)
    source_ids = list(KnowledgeSource.objects.filter(scope).values_list("id", flat=True))
    if not source_ids:
        return []
    marks = ", ".join(["%s"] * len(source_ids))
    sql = (
        f"WITH matched AS MATERIALIZED (SELECT rowid AS id, bm25({FTS_TABLE}, 2.0, 1.0) AS rank "
        f"FROM {FTS_TABLE} WHERE {FTS_TABLE} MATCH %s) "
        f"SELECT matched.id, matched.rank FROM matched JOIN {KnowledgeChunk._meta.db_table} AS chunk "
        f"ON chunk.id = matched.id WHERE chunk.source_id IN ({marks}) ORDER BY matched.rank LIMIT %s"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [match, *source_ids, k])
        ranked = cursor.fetchall()
    chunks = KnowledgeChunk.objects.select_related("source").in_bulk([row[0] for row in ranked])
    return [Hit(chunks[rowid], round(-rank, 4)) for rowid, rank in ranked if rowid in chunks]


def _like(terms: list[str], scope: Q, k: int) -> list[Hit]:
    if not terms:
        return []
    matches = reduce(operator.or_, [Q(text__icontains=t) | Q(heading__icontains=t) for t in terms])
    candidates = (
        KnowledgeChunk.objects.filter(source__in=KnowledgeSource.objects.filter(scope))
        .filter(matches)
        .select_related("source")[:LIKE_CANDIDATES]
    )
    scored = []
    for chunk in candidates:
        haystack = f"{chunk.heading}\n{chunk.text}".lower()
        score = float(sum(haystack.count(term.lower()) for term in terms))
        scored.append(Hit(chunk, score))
    scored.sort(key=lambda hit: (-hit.score, hit.chunk.source_id, hit.chunk.ordinal))
    return scored[:k]
