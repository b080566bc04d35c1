"""Full-text search over knowledge chunks (seed 003 KnowledgeContext; issue 32).

A query is cut into words exactly as the chunks were (``knowledge.words``): Chinese by jieba
(search mode: "表名怎么命名" -> 表名, 命名 once the question word 怎么 is dropped), other
scripts into words reduced to their English stem (``tables`` and ``table`` are one word), minus
the stop words of ``stop_words.yaml``. A chunk matches when it holds any of the query's words;
chunks are ranked by Okapi bm25 (k1 1.2, b 0.75), a word in the heading counting twice.

**SQLite.** The chunks' words are mirrored in an FTS5 table (``unicode61``: one term per stored
word; migration 0007, kept in step by triggers in the same transaction as the chunks) and
ranked by FTS5's ``bm25()`` of each word, rescaled to the inverse document frequency below
(``_fts``), summed per chunk; the scope is applied with the process's table of the chunks'
sources (``knowledge.resident.chunks``), not by a join.

**PostgreSQL** (migration 0007; ``_postgresql``). Candidates come from one GIN index on each
chunk's words as an array (``PG_WORDS``, matched with ``&&``: no text-search parser, so a
Chinese word is matched as stored whatever the database's locale). They are ranked in the same
query by the same bm25: term frequency = occurrences of the word among the chunk's words,
document frequency = candidates holding it, N = chunks in scope (on SQLite: in the table).

The inverse document frequency is Lucene's ``ln(1 + (N - n + 0.5) / (n + 0.5))``, always
positive, so a word most chunks hold still ranks the chunks holding it (FTS5's own floors it
at a millionth, and its scores all read 0.0). ``Hit.score`` is the bm25 (higher is better)
to four significant digits.

**Hybrid ranking** (issue 15; the optional ``embeddings`` extra, ``knowledge.embeddings``).
When embeddings are active and chunks in scope have vectors, the query is embedded too and
two rankings are fused: the full-text one above (its best ``CANDIDATES``, those scoring at
least ``TEXT_FLOOR`` of the best) and the chunks'
cosine similarity to the query (the ``CANDIDATES`` nearest among the scope's vectors, an
exact scan: one matrix product over the process's matrix of every vector,
``knowledge.resident.vectors``, read once and again only after the chunks changed). Reciprocal rank fusion
(Cormack, Clarke and Büttcher, SIGIR 2009) scores a chunk ``sum 1 / (RRF_K + rank)`` over
the rankings holding it (rank 1 = best); ``Hit.score`` is that sum. A passage neither ranking
shares a word with the query can still be found by meaning, and one both agree on comes
first.

*Other language.* When the chunks nearest in meaning are in another language than the query's
(``chunking.chunk_language``: an English question, a Chinese passage), the question is
answered there, and full text cannot see those chunks: they share no word with the query. So
the full-text ranking abstains on them rather than ranking them last: the chunks the vectors
rank above every chunk in the query's language count their vector rank once more, in place of
the full-text rank they could not have (``_stand_ins``). Plain fusion let own-language chunks
sharing one common word with the question ("long", "kept") push the passage the vectors
ranked first out of the top 3: the knowledge bench's cross-language recall@3 was 0.5, with the
abstention 1.0, its same-language recall unchanged (1.0). Counting every other-language chunk
twice, wherever the vectors rank it, put translations above an English paraphrase's own passage.
``ranked_search`` says which ranking answered (``FULL_TEXT`` or ``HYBRID``) and how
many chunks in scope have no vector yet (they are ranked by full text alone until their
source is re-indexed or ``manage.py embed_knowledge`` runs). Without the extra, or with
``TEAMCLAW_KNOWLEDGE_EMBEDDINGS=off``, search is the full-text search alone, as before.
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import reduce
from typing import Any

from django.db import connection
from django.db.models import Q

from knowledge import embeddings, resident
from knowledge.chunking import CJK, chunk_language
from knowledge.models import KnowledgeChunk, KnowledgeSource
from knowledge.words import query_words

_CJK = re.compile(f"[{CJK}]")
FTS_TABLE = "knowledge_chunk_fts"
FTS_VOCABULARY = "knowledge_chunk_fts_vocab"
"""FTS5's vocabulary of ``FTS_TABLE`` (``row``: each word and how many chunks hold it)."""
PG_WORDS = "(string_to_array(btrim(heading_words || ' ' || text_words), ' '))"
"""The expression migration 0007 indexes on PostgreSQL (GIN); queried exactly as written."""
BM25_K1 = 1.2
BM25_B = 0.75
HEADING_WEIGHT = 2.0
"""How many times a word in a chunk's heading counts (once in its text)."""
CHOOSING_ROWS = 3000
"""How many chunk matches a query's choosing words may add up to (``choosing``): each costs
FTS5's ``bm25()`` about 1.3 us; the words past it only score the chunks the others chose."""
BACKOFF_CHARS = 3
BACKOFF_MIN = 4
"""A query word no chunk holds is searched as its longest prefix some chunk holds, at most
``BACKOFF_CHARS`` characters shorter and at least ``BACKOFF_MIN`` long (``_known``)."""
RESCORED = 100
"""How many of the chunks the rarer words of a query chose its common words score (``_fts``)."""
SCOPE_BATCH = 256
"""Ranked rows read at a time when the scope is narrower than every chunk (``_in_scope``)."""
LIKE_CANDIDATES = 2000
"""Most chunks the ``LIKE`` path of other databases scores."""
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
TEXT_FLOOR = 0.25
"""A full-text hit is fused only if its bm25 is at least this share of the best one's. Words
are matched whole (issue 32), so a question's commonest word (席位, "seat") matches hundreds of
chunks far below the passage that holds all of its words; fused by rank alone, those that are
also near in meaning outweighed a passage in the other language that only the vectors find."""


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


def query_terms(query: str) -> list[str]:
    """The words ``query`` is searched with (``knowledge.words.query_words``)."""
    return query_words(query)


def relevance(score: float | None, best: float | None) -> int:
    """How relevant a hit is next to the best hit of the same search, as a whole percent
    (0-100): ``score / best``, rounded; 100 for the best hit itself. ``Hit.score`` is a
    bm25 or reciprocal-rank-fusion sum (``0.032787``) whose size means nothing to a reader;
    its ratio to the best does. 0 when either score is missing or not positive."""
    try:
        score, best = float(score or 0), float(best or 0)
    except (TypeError, ValueError):
        return 0
    if best <= 0 or score <= 0:
        return 0
    return max(0, min(100, round(100 * score / best)))


def significant(score: float) -> float:
    """``score`` to four significant digits (``Hit.score``)."""
    return float(f"{score:.4g}")


def fts_available() -> bool:
    """True on SQLite, where migration 0007 made the FTS5 table."""
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
    None. Best first; ``Hit.score`` is bm25 on SQLite FTS5 and PostgreSQL, the fused
    reciprocal-rank score when the ranking is hybrid (module docstring; ``ranked_search``
    also says which). ``within`` (a filter of the sources, such
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
    terms = query_terms(query)
    scope = _scope(roles, projects, skills)
    if scope is not None and within is not None:
        scope &= within
    if scope is None or k <= 0:
        return Ranked([], FULL_TEXT)
    if embeddings.active() and query.strip():
        return _hybrid(query, terms, scope, k)
    return Ranked(_full_text(terms, scope, k), FULL_TEXT)


def _full_text(terms: list[str], scope: Q, k: int, source_ids: list[int] | None = None) -> list[Hit]:
    """The full-text ranking of this database (module docstring); ``source_ids``: the ids of
    the sources in ``scope`` when the caller has them."""
    if not terms:
        return []
    if connection.vendor == "postgresql":
        return _postgresql(terms, scope, k)
    if fts_available():
        return _fts(terms, _source_ids(scope) if source_ids is None else source_ids, k)
    return _like(terms, scope, k)


def _hybrid(query: str, terms: list[str], scope: Q, k: int) -> Ranked:
    """Full text and cosine similarity fused by reciprocal rank (module docstring); the
    full-text ranking alone when no chunk in scope has a vector. The vectors are the
    process's matrix (``knowledge.resident.vectors``), the query's vector is kept per query
    text (``knowledge.embeddings.embed_query``)."""
    source_ids = _source_ids(scope)
    if not source_ids:
        return Ranked([], FULL_TEXT)
    table = resident.vectors()
    embedded = table.count_in(source_ids)
    unembedded = resident.chunks().count_in(source_ids) - embedded
    depth = max(k, CANDIDATES)
    text_hits = _full_text(terms, scope, depth, source_ids)
    if text_hits:
        text_hits = [h for h in text_hits if h.score >= TEXT_FLOOR * text_hits[0].score]
    if not embedded:
        return Ranked(text_hits[:k], FULL_TEXT, unembedded)
    nearest = table.nearest(embeddings.embed_query(query), source_ids, depth)
    text_ids = [h.chunk.pk for h in text_hits]
    fused = reciprocal_rank_fusion([text_ids, nearest, _stand_ins(query, nearest, text_ids, table)])[:k]
    chunks = _chunks([i for i, _ in fused])
    hits = [Hit(chunks[i], round(score, 6)) for i, score in fused if i in chunks]
    return Ranked(hits, HYBRID, unembedded)


def _stand_ins(query: str, nearest: list[int], text_ids: list[int], table: resident.VectorTable) -> list[int | None]:
    """The full-text ranking's stand-in (module docstring, "Other language"): the chunks the
    vectors rank above every chunk in the query's language (``chunking.chunk_language``), at
    their vector rank, but for those the full-text ranking holds (None in their place)."""
    same = table.in_language(nearest, chunk_language(query))
    leading = nearest[: same.index(True)] if True in same else nearest
    ranked = set(text_ids)
    return [None if chunk in ranked else chunk for chunk in leading]


def _source_ids(scope: Q) -> list[int]:
    """The ids of the sources in ``scope``."""
    return list(KnowledgeSource.objects.filter(scope).values_list("id", flat=True))


def _chunks(ids: list[int]) -> dict[int, KnowledgeChunk]:
    """The chunks of ``ids`` with their sources, in one query (neither the vector nor the
    source's document read)."""
    return KnowledgeChunk.objects.select_related("source").defer("embedding", "source__document").in_bulk(ids)


def reciprocal_rank_fusion(rankings: Sequence[Sequence[int | None]], k: int = RRF_K) -> list[tuple[int, float]]:
    """``[(id, score)]`` best first: each id scored ``sum 1 / (k + rank)`` over the
    ``rankings`` (lists of ids, best first, rank 1 = first; None holds a rank no id takes)
    that hold it. Ties go to the id with the better best rank, then the smaller id."""
    scores: dict[int, float] = {}
    best: dict[int, int] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, start=1):
            if item is None:
                continue
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


def _fts(terms: list[str], source_ids: list[int], k: int) -> list[Hit]:
    """SQLite: bm25 with an always positive inverse document frequency (module docstring),
    over the chunks of ``source_ids``.

    FTS5's ``bm25()`` of a one-word query is ``idf_fts(n) * tf_part``, and of an OR query the
    sum of those; its ``idf_fts`` is floored at 1e-6 for a word in more than half of the
    chunks, which made every chunk tie at 0.0 for such words. So each word is matched on its
    own and its ``bm25()`` rescaled by ``idf(n) / idf_fts(n)`` (``n`` from the FTS5 vocabulary
    table, N the chunks), then summed per chunk: exactly the bm25 PostgreSQL computes.

    Common words (``common``) do not choose chunks: FTS5 would score every chunk holding them
    (``bm25()`` costs about 1.3 us a matching chunk, 12 ms for "change" in 9,000 of 100,000).
    The rarer words choose the best ``RESCORED`` chunks, and the common words' bm25 is added
    to those alone (``_rescore``), as Lucene's common-terms query does: a passage that holds
    the question's common words ("new code", "production *access*") rises among the chunks
    the rare words found, instead of those words being dropped.

    The scope is applied to the summed hits with the process's table of chunk sources
    (``knowledge.resident.chunks``), not by joining the chunks' table: that join looked up
    every matching chunk's row (thousands per query, 2 of every 3 milliseconds of the query
    at 100,000 chunks). When the scope holds every chunk, SQL returns the best ones alone;
    their sources are still checked against the table, since a chunk another process commits
    after the table was read (of any source, in scope or not) is in the full-text index but
    not in the table: it is left out until the next search reads the table again."""
    if not source_ids:
        return []
    table = resident.chunks()
    choosing, scoring = _weighed(terms, len(table))
    if not choosing:
        return []
    arms: list[str] = []
    params: list[Any] = []
    for term, weight in choosing:
        arms.append(
            f"SELECT rowid AS id, bm25({FTS_TABLE}, {HEADING_WEIGHT}, 1.0) * %s AS part "
            f"FROM {FTS_TABLE} WHERE {FTS_TABLE} MATCH %s"
        )
        params += [weight, _quote(term)]
    depth = max(k, RESCORED) if scoring else k
    everything = table.covers(source_ids)
    sql = (
        "WITH matched AS MATERIALIZED ("
        + " UNION ALL ".join(arms)
        + ") SELECT id, sum(part) AS rank FROM matched GROUP BY id ORDER BY rank, id"
        + (" LIMIT %s" if everything else "")
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [*params, depth] if everything else params)
        ranked = [(rowid, -rank) for rowid, rank in _in_scope(cursor, table, source_ids, depth)]
    if scoring:
        ranked = _rescore(ranked, scoring, table.average_words)[:k]
    chunks = _chunks([row[0] for row in ranked])
    return [Hit(chunks[rowid], significant(score)) for rowid, score in ranked if rowid in chunks]


def _in_scope(cursor: Any, table: resident.ChunkTable, source_ids: list[int], k: int) -> list[tuple[int, float]]:
    """The first ``k`` rows ``(chunk id, rank)`` of ``cursor`` (best first) whose chunk belongs
    to one of ``source_ids``, read a batch at a time: the rest are never sent to Python."""
    found: list[tuple[int, float]] = []
    while len(found) < k and (rows := cursor.fetchmany(max(4 * k, SCOPE_BATCH))):
        kept = table.in_sources([row[0] for row in rows], source_ids).tolist()
        found += [row for row, keep in zip(rows, kept, strict=True) if keep]
    return found[:k]


def _weighed(terms: list[str], total: int) -> tuple[list[tuple[str, float]], list[tuple[str, float]]]:
    """``(choosing, scoring)``: the ``terms`` some chunk holds, split into the words that
    choose chunks, each with ``idf / idf_fts`` (``_fts``), and the common ones (``choosing``)
    that only score them, each with its ``idf``; ``total``: the chunks (N)."""
    asked = list(dict.fromkeys([*terms, *(p for term in terms for p in _shorter(term))]))
    marks = ", ".join(["%s"] * len(asked))
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT term, doc FROM {FTS_VOCABULARY} WHERE term IN ({marks})", asked)
        found = dict(cursor.fetchall())
    terms = list(dict.fromkeys(_known(term, found) for term in terms))
    documents = {term: found[term] for term in terms if term in found}
    chosen = choosing(documents)
    choosing_words, scoring = [], []
    for term in terms:
        n = documents.get(term)
        if not n:
            continue
        ratio = (total - n + 0.5) / (n + 0.5)
        if term not in chosen:
            scoring.append((term, math.log(1 + ratio)))
        else:
            fts_idf = math.log(ratio) if ratio > 1 else 1e-6  # FTS5's floor
            choosing_words.append((term, math.log(1 + ratio) / fts_idf))
    return choosing_words, scoring


def _shorter(term: str) -> list[str]:
    """The prefixes ``term`` backs off to when no chunk holds it (``_known``), longest first:
    down to ``len(term) - BACKOFF_CHARS`` characters, never below ``BACKOFF_MIN``; none for a
    Chinese word (jieba's words are whole)."""
    if _CJK.search(term):
        return []
    return [term[:n] for n in range(len(term) - 1, max(BACKOFF_MIN, len(term) - BACKOFF_CHARS) - 1, -1)]


def _known(term: str, documents: dict[str, int]) -> str:
    """``term`` if some chunk holds it (``documents``: the chunk count of each word held),
    else its longest prefix (``_shorter``) some chunk holds, else ``term``. The stemmer keeps
    derived words apart from their root ("coverage" is ``coverag``, "cover" ``cover``): a
    question's word the passage says in another form would otherwise match nothing."""
    if term in documents:
        return term
    return next((prefix for prefix in _shorter(term) if prefix in documents), term)


def _spaced(words: str) -> str:
    """Stored ``words`` with every space doubled and one space at each end (``"a b"`` ->
    ``" a  b "``), so ``str.count(" word ")`` counts each occurrence, next ones too."""
    return f" {words.replace(' ', '  ')} " if words else ""


def _rescore(
    ranked: list[tuple[int, float]], scoring: list[tuple[str, float]], average: float
) -> list[tuple[int, float]]:
    """``ranked`` (``[(chunk id, bm25)]``) with the bm25 of the ``scoring`` words (``[(word,
    idf)]``) added to each chunk that holds them, best first (ties: the smaller id). Counted
    in the chunks' stored words as FTS5 counts them: a heading word ``HEADING_WEIGHT`` times,
    the chunk's length in words against ``average`` (the mean over every chunk)."""
    if not ranked:
        return ranked
    table = KnowledgeChunk._meta.db_table
    marks = ", ".join(["%s"] * len(ranked))
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT id, heading_words, text_words FROM {table} WHERE id IN ({marks})", [r[0] for r in ranked]
        )
        words = {row[0]: (_spaced(row[1]), _spaced(row[2])) for row in cursor.fetchall()}
    scored = []
    for rowid, score in ranked:
        heading, text = words.get(rowid, ("", ""))
        length = (heading.count(" ") + text.count(" ")) // 2  # " a  b ": 4 spaces, 2 words
        norm = BM25_K1 * (1 - BM25_B + BM25_B * length / max(average, 1.0))
        for term, idf in scoring:
            tf = HEADING_WEIGHT * heading.count(f" {term} ") + text.count(f" {term} ")
            score += idf * tf * (BM25_K1 + 1) / (tf + norm) if tf else 0.0
        scored.append((rowid, score))
    return sorted(scored, key=lambda pair: (-pair[1], pair[0]))


def choosing(documents: dict[str, int]) -> set[str]:
    """The words of a query that choose its chunks (``_fts``), from ``documents`` (each word's
    number of chunks, 0 or more): the rarest first while their counts add up to at most
    ``CHOOSING_ROWS``, and always the rarest one (ties: the first in ``documents``). The rest
    only score the chunks these chose, like Lucene's common-terms query: ranking every chunk
    holding 时候 or "code" (10,000 of 100,000) cost 100 ms; the question's rarer words find
    its passage, the common ones order what they found. A base smaller than
    ``CHOOSING_ROWS`` lets every word choose."""
    chosen: set[str] = set()
    rows = 0
    for term in sorted((t for t, n in documents.items() if n), key=lambda t: documents[t]):
        rows += documents[term]
        if chosen and rows > CHOOSING_ROWS:
            break
        chosen.add(term)
    return chosen


def _like(terms: list[str], scope: Q, k: int) -> list[Hit]:
    """Databases other than SQLite and PostgreSQL: chunks holding any of ``terms`` among their
    words, scored by how many times (``LIKE_CANDIDATES`` at most are scored)."""
    matches = reduce(operator.or_, [Q(text_words__contains=t) | Q(heading_words__contains=t) for t in terms])
    candidates = (
        KnowledgeChunk.objects.filter(source__in=KnowledgeSource.objects.filter(scope))
        .filter(matches)
        .defer("embedding", "source__document")
        .select_related("source")[:LIKE_CANDIDATES]
    )
    scored = []
    for chunk in candidates:
        words = f"{chunk.heading_words} {chunk.text_words}".split()
        score = float(sum(words.count(term) for term in terms))
        scored.append(Hit(chunk, score))
    scored.sort(key=lambda hit: (-hit.score, hit.chunk.source_id, hit.chunk.ordinal))
    return scored[:k]


def _postgresql(terms: list[str], scope: Q, k: int) -> list[Hit]:
    """PostgreSQL: candidates from the GIN index of the chunks' words, ranked by bm25 in one
    query (module docstring)."""
    source_ids = list(KnowledgeSource.objects.filter(scope).values_list("id", flat=True))
    if not source_ids:
        return []
    table = KnowledgeChunk._meta.db_table
    params: list[Any] = [source_ids, terms]
    frequencies, documents, scores = [], [], []
    for n, term in enumerate(terms):
        frequencies.append(
            f"(cardinality(array_positions(t, %s)) + {HEADING_WEIGHT} * cardinality(array_positions(h, %s)))"
            f"::float8 AS tf{n}"
        )
        params += [term, term]
        documents.append(f"(count(*) FILTER (WHERE tf{n} > 0) OVER ())::float8 AS df{n}")
        scores.append(
            f"ln(1 + (%s::float8 - df{n} + 0.5) / (df{n} + 0.5)) * tf{n} * {BM25_K1 + 1} "
            f"/ (tf{n} + {BM25_K1} * ({1 - BM25_B} + {BM25_B} * len / avglen))"
        )
    # The frequencies' parameters come after the candidates'; the scores' (N per term) last.
    total = KnowledgeChunk.objects.filter(source_id__in=source_ids).count()
    sql = (
        f"WITH candidates AS MATERIALIZED (SELECT id, string_to_array(heading_words, ' ') AS h, "
        f"string_to_array(text_words, ' ') AS t FROM {table} "
        f"WHERE source_id = ANY(%s) AND {PG_WORDS} && %s::text[]), "
        "counted AS (SELECT id, greatest(cardinality(t), 1) AS len, "
        + ", ".join(frequencies)
        + " FROM candidates), weighed AS (SELECT *, "
        + ", ".join(documents)
        + ", avg(len::float8) OVER () AS avglen FROM counted), scored AS (SELECT id, "
        + " + ".join(scores)
        + " AS score FROM weighed)"
        " SELECT id, score FROM scored WHERE score > 0 ORDER BY score DESC, id LIMIT %s"
    )
    params += [float(total)] * len(terms) + [k]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        ranked = cursor.fetchall()
    chunks = _chunks([row[0] for row in ranked])
    return [Hit(chunks[rowid], significant(float(score))) for rowid, score in ranked if rowid in chunks]
