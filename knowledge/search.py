"""Full-text search over knowledge chunks (seed 003 KnowledgeContext).

A query is cut into terms (``query_terms``):

- English (any non-CJK script): words of 3 or more letters or digits, lower-cased, minus a
  few stop words; each is matched as a substring (``"migration"`` also finds ``migrations``);
- Chinese (and Japanese kanji): there are no spaces between words, so every run of CJK
  characters is cut into its overlapping 3-character windows (``数据库迁移`` -> ``数据库``,
  ``据库迁``, ``库迁移``); bm25 ranks the chunks sharing most of them first.

**SQLite.** The chunks are mirrored in an FTS5 table with the ``trigram`` tokenizer
(migration 0002, kept in step by triggers in the same transaction as the chunks), ranked
with ``bm25`` (a heading match counts twice). The terms are OR-ed in one ``MATCH``. The
trigram tokenizer cannot match fewer than three characters, and most Chinese words are two,
so a query with no term of three or more characters (``缓存``, ``UI``) falls back to ``LIKE``
over its 2-character terms (CJK bigrams, short words), scored by how many of them a chunk holds.

**PostgreSQL** (migration 0004; ``_postgresql``). Candidates come from the index of each
chunk's language: ``en`` chunks whose ``simple`` ``tsvector`` matches any English term as a
prefix (``backup:*``; GIN), ``zh`` chunks whose heading and text hold any term as a substring
(``ILIKE``, GIN ``pg_trgm``). The candidates are then ranked in the same query with Okapi
bm25 (k1 1.2, b 0.75, the same formula as FTS5's; a heading occurrence counts twice): term
frequency = occurrences of the term, document frequency = candidates holding it, N = chunks
in scope. So a query's order is close to SQLite's (the fixture test runs on both). As on
SQLite, a query with no term of 3+ characters uses its 2-character terms; on ``zh`` chunks
such a query cannot use the trigram index (it scans the scope's Chinese chunks).

**Hybrid ranking** (issue 15; the optional ``embeddings`` extra, ``knowledge.embeddings``).
When embeddings are active and chunks in scope have vectors, the query is embedded too and
two rankings are fused: the full-text one above (its best ``CANDIDATES``) and the chunks'
cosine similarity to the query (the ``CANDIDATES`` nearest among the scope's vectors, an
exact scan: about 2 KB a chunk read from the database per query). Reciprocal rank fusion
(Cormack, Clarke and Büttcher, SIGIR 2009) scores a chunk ``sum 1 / (RRF_K + rank)`` over
the rankings holding it (rank 1 = best); ``Hit.score`` is that sum. A passage neither ranking
shares a word with the query can still be found by meaning, and one both agree on comes
first. ``ranked_search`` says which ranking answered (``FULL_TEXT`` or ``HYBRID``) and how
many chunks in scope have no vector yet (they are ranked by full text alone until their
source is re-indexed or ``manage.py embed_knowledge`` runs). Without the extra, or with
``TEAMCLAW_KNOWLEDGE_EMBEDDINGS=off``, search is the full-text search alone, as before.
"""

from __future__ import annotations

import operator
import re
from dataclasses import dataclass
from functools import reduce
from typing import Any

from django.db import connection
from django.db.models import Q

from knowledge import embeddings
from knowledge.chunking import CJK
from knowledge.models import ChunkLanguage, KnowledgeChunk, KnowledgeSource

FTS_TABLE = "knowledge_chunk_fts"
PG_EN_VECTOR = (
    "(setweight(to_tsvector('simple'::regconfig, heading), 'A') || "
    "setweight(to_tsvector('simple'::regconfig, text), 'B'))"
)
"""The expression migration 0004 indexes for ``en`` chunks (GIN); queried exactly as written."""
PG_ZH_TEXT = "(heading || ' ' || text)"
"""The expression migration 0004 indexes for ``zh`` chunks (GIN ``gin_trgm_ops``)."""
BM25_K1 = 1.2
BM25_B = 0.75
MAX_TERMS = 64
"""Most terms of one query (the first distinct ones): bounds the cost of long inputs."""
LIKE_CANDIDATES = 2000
"""Most chunks the LIKE fallback scores."""
FULL_TEXT = "full_text"
HYBRID = "hybrid"
"""``Ranked.ranking``: full text alone, or fused with the vectors (module docstring)."""
RRF_K = 60
"""Reciprocal rank fusion's constant (Cormack et al. 2009, where 60 did best and the result
was flat around it): large enough that being first in one ranking (1/61) weighs little more
than being fifth (1/65), so a chunk both rankings place well (2/65) beats one that only one
ranking places first; the two rankings' scores (bm25, cosine) need no calibration."""
CANDIDATES = 50
"""How deep each ranking is read before fusing (at least ``k``)."""

_CJK = CJK
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


@dataclass(frozen=True, slots=True)
class Ranked:
    """What ``ranked_search`` found: ``hits`` best first; ``ranking``, ``FULL_TEXT`` or
    ``HYBRID`` (the one that ordered them); ``unembedded``, the chunks in scope without a
    vector of the current model (0 when embeddings are not active)."""

    hits: list[Hit]
    ranking: str
    unembedded: int = 0


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


def search(
    query: str,
    *,
    roles: list[str] | None = None,
    projects: list[str] | None = None,
    skills: list[str] | None = None,
    k: int = 5,
    within: Q | None = None,
) -> list[Hit]:
    """The best ``k`` chunks for ``query`` among the sources of any of ``roles`` (role names),
    ``projects`` (project slugs) or ``skills`` (skill ids); every source when all three are
    None. Best first; ``Hit.score`` is bm25 on SQLite FTS5 and PostgreSQL, a term count on
    the ``LIKE`` path, the fused reciprocal-rank score when the ranking is hybrid (module
    docstring; ``ranked_search`` also says which). ``within`` (a filter of the sources, such
    as the ones a user may read) narrows any scope further; None: no further filter."""
    return ranked_search(query, roles=roles, projects=projects, skills=skills, k=k, within=within).hits


def ranked_search(
    query: str,
    *,
    roles: list[str] | None = None,
    projects: list[str] | None = None,
    skills: list[str] | None = None,
    k: int = 5,
    within: Q | None = None,
) -> Ranked:
    """``search``, saying which ranking ordered the hits: ``HYBRID`` when embeddings are
    active (``knowledge.embeddings.active``) and some chunk in scope has a vector, else
    ``FULL_TEXT`` (module docstring)."""
    long, short = query_terms(query)
    scope = _scope(roles, projects, skills)
    if scope is not None and within is not None:
        scope &= within
    if scope is None or k <= 0:
        return Ranked([], FULL_TEXT)
    if embeddings.active() and query.strip():
        return _hybrid(query, long, short, scope, k)
    return Ranked(_full_text(long, short, scope, k), FULL_TEXT)


def _full_text(long: list[str], short: list[str], scope: Q, k: int) -> list[Hit]:
    """The full-text ranking of this database (module docstring)."""
    if connection.vendor == "postgresql":
        return _postgresql(long or short, scope, k)
    if long and fts_available():
        return _fts(long, scope, k)
    return _like(long + short if not fts_available() else short, scope, k)


def _hybrid(query: str, long: list[str], short: list[str], scope: Q, k: int) -> Ranked:
    """Full text and cosine similarity fused by reciprocal rank (module docstring); the
    full-text ranking alone when no chunk in scope has a vector."""
    source_ids = list(KnowledgeSource.objects.filter(scope).values_list("id", flat=True))
    if not source_ids:
        return Ranked([], FULL_TEXT)
    rows = _vectors(source_ids)
    unembedded = KnowledgeChunk.objects.filter(source_id__in=source_ids).count() - len(rows)
    depth = max(k, CANDIDATES)
    text_hits = _full_text(long, short, scope, depth)
    if not rows:
        return Ranked(text_hits[:k], FULL_TEXT, unembedded)
    ids, vectors = zip(*rows, strict=True)
    nearest = embeddings.cosine_ranking(embeddings.embed_query(query), ids, vectors, depth)
    fused = reciprocal_rank_fusion([[h.chunk.pk for h in text_hits], nearest])[:k]
    chunks = (
        KnowledgeChunk.objects.select_related("source")
        .defer("embedding", "source__document")
        .in_bulk([i for i, _ in fused])
    )
    hits = [Hit(chunks[i], round(score, 6)) for i, score in fused if i in chunks]
    return Ranked(hits, HYBRID, unembedded)


def _vectors(source_ids: list[int]) -> list[tuple[int, bytes]]:
    """``[(chunk id, vector bytes)]`` of the chunks of ``source_ids`` with a vector of the
    current model. Read with one plain query: through the ORM, converting each of 10,000
    2 KB values costs about five times the query itself."""
    marks = ", ".join(["%s"] * len(source_ids))
    sql = (
        f"SELECT id, embedding FROM {KnowledgeChunk._meta.db_table} "
        f"WHERE source_id IN ({marks}) AND embedding_model = %s AND embedding IS NOT NULL"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [*source_ids, embeddings.MODEL_ID])
        return [(row[0], row[1]) for row in cursor.fetchall()]


def reciprocal_rank_fusion(rankings: list[list[int]], k: int = RRF_K) -> list[tuple[int, float]]:
    """``[(id, score)]`` best first: each id scored ``sum 1 / (k + rank)`` over the
    ``rankings`` (lists of ids, best first, rank 1 = first) that hold it. Ties go to the id
    with the better best rank, then the smaller id."""
    scores: dict[int, float] = {}
    best: dict[int, int] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + 1.0 / (k + rank)
            best[item] = min(best.get(item, rank), rank)
    return sorted(scores.items(), key=lambda pair: (-pair[1], best[pair[0]], pair[0]))


def search_in(
    query: str,
    *,
    role: str | None = None,
    skill: str | None = None,
    project: str | None = None,
    k: int = 5,
    within: Q | None = None,
) -> Ranked:
    """``ranked_search`` within one role (name), skill (id) and/or project (slug): the
    sources of any of those given, or every source when none is, and of those only the ones
    ``within`` lets through (the API's and the knowledge page's search pass what the user may
    read, ``monitoring.access.readable_knowledge``; they say which ranking answered)."""
    scoped = bool(role or skill or project)
    return ranked_search(
        query,
        roles=[role] if role else ([] if scoped else None),
        skills=[skill] if skill else ([] if scoped else None),
        projects=[project] if project else ([] if scoped else None),
        k=k,
        within=within,
    )


def _scope(roles: list[str] | None, projects: list[str] | None, skills: list[str] | None = None) -> Q | None:
    """The filter of the sources searched; None when the scope is given but empty."""
    if roles is None and projects is None and skills is None:
        return Q()
    names = [r for r in roles or [] if r]
    slugs = [p for p in projects or [] if p]
    skill_ids = [s for s in skills or [] if s]
    parts = [Q(role__role__in=names)] if names else []
    if slugs:
        parts.append(Q(project__slug__in=slugs))
    if skill_ids:
        parts.append(Q(skill__skill_id__in=skill_ids))
    if not parts:
        return None
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
    chunks = (
        KnowledgeChunk.objects.select_related("source")
        .defer("embedding", "source__document")
        .in_bulk([row[0] for row in ranked])
    )
    return [Hit(chunks[rowid], round(-rank, 4)) for rowid, rank in ranked if rowid in chunks]


def _like(terms: list[str], scope: Q, k: int) -> list[Hit]:
    if not terms:
        return []
    matches = reduce(operator.or_, [Q(text__icontains=t) | Q(heading__icontains=t) for t in terms])
    candidates = (
        KnowledgeChunk.objects.filter(source__in=KnowledgeSource.objects.filter(scope))
        .filter(matches)
        .defer("embedding", "source__document")
        .select_related("source")[:LIKE_CANDIDATES]
    )
    scored = []
    for chunk in candidates:
        haystack = f"{chunk.heading}\n{chunk.text}".lower()
        score = float(sum(haystack.count(term.lower()) for term in terms))
        scored.append(Hit(chunk, score))
    scored.sort(key=lambda hit: (-hit.score, hit.chunk.source_id, hit.chunk.ordinal))
    return scored[:k]


def _like_pattern(term: str) -> str:
    return "%" + term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def _postgresql(terms: list[str], scope: Q, k: int) -> list[Hit]:
    """PostgreSQL: candidates from the index of each chunk's language, ranked by bm25 in one
    query (module docstring)."""
    if not terms:
        return []
    source_ids = list(KnowledgeSource.objects.filter(scope).values_list("id", flat=True))
    if not source_ids:
        return []
    table = KnowledgeChunk._meta.db_table
    words = [t for t in terms if not _CJK_RUN.search(t)]
    params: list[Any] = []
    selects = []
    if words:
        selects.append(
            f"SELECT id FROM {table} WHERE language = %s AND source_id = ANY(%s) "
            f"AND {PG_EN_VECTOR} @@ to_tsquery('simple', %s)"
        )
        params += [ChunkLanguage.ENGLISH.value, source_ids, " | ".join(f"'{w}':*" for w in words)]
    selects.append(
        f"SELECT id FROM {table} WHERE language = %s AND source_id = ANY(%s) AND ("
        + " OR ".join([f"{PG_ZH_TEXT} ILIKE %s"] * len(terms))
        + ")"
    )
    params += [ChunkLanguage.CHINESE.value, source_ids, *(_like_pattern(t) for t in terms)]
    frequencies, documents, scores = [], [], []
    for n, term in enumerate(terms):
        size = len(term)
        frequencies.append(
            f"((length(t) - length(replace(t, %s, ''))) / {size}"
            f" + 2 * ((length(h) - length(replace(h, %s, ''))) / {size}))::float8 AS tf{n}"
        )
        params += [term, term]
        documents.append(f"(count(*) FILTER (WHERE tf{n} > 0) OVER ())::float8 AS df{n}")
        # float8 throughout: numeric's ln and division cost seconds over 25,000 candidates
        scores.append(
            f"ln(1 + (%s::float8 - df{n} + 0.5) / (df{n} + 0.5)) * tf{n} * {BM25_K1 + 1} "
            f"/ (tf{n} + {BM25_K1} * ({1 - BM25_B} + {BM25_B} * len / avglen))"
        )
    # The frequencies' parameters come after the candidates'; the scores' (N per term) last.
    total = KnowledgeChunk.objects.filter(source_id__in=source_ids).count()
    sql = (
        f"WITH candidates AS MATERIALIZED (SELECT c.id, lower(c.heading) AS h, lower(c.text) AS t, "
        f"greatest(length(c.text), 1) AS len FROM {table} AS c WHERE c.id IN ("
        + " UNION ".join(selects)
        + ")), counted AS (SELECT id, len, "
        + ", ".join(frequencies)
        + " FROM candidates), weighed AS (SELECT *, "
        + ", ".join(documents)
        + ", avg(len::float8) OVER () AS avglen FROM counted), scored AS (SELECT id, "
        + " + ".join(scores)
        + " AS score FROM weighed), best AS (SELECT id, score FROM scored ORDER BY score DESC, id LIMIT %s)"
        " SELECT id, score FROM best WHERE score > 0 ORDER BY score DESC, id"
    )
    params += [float(total)] * len(terms) + [k]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        ranked = cursor.fetchall()
    chunks = (
        KnowledgeChunk.objects.select_related("source")
        .defer("embedding", "source__document")
        .in_bulk([row[0] for row in ranked])
    )
    return [Hit(chunks[rowid], round(float(score), 4)) for rowid, score in ranked if rowid in chunks]
