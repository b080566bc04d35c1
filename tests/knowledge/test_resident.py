"""What a process keeps of the knowledge index in memory (``knowledge.resident``, migration
0008): the chunks' sources and the vectors' matrix are read once and kept, and a chunk added,
changed or removed is found, changed or gone at the very next search, whether this
connection, a transaction of its own or another connection wrote it. Runs on SQLite and on
PostgreSQL (``DATABASE_URL``)."""

from __future__ import annotations

import pytest
from django.db import connection, transaction

from capabilities.models import AgentRole
from knowledge import embeddings, resident
from knowledge.models import KnowledgeChunk
from knowledge.search import HYBRID, ranked_search, search
from knowledge.sources import Upload, add_source
from knowledge.words import joined_words
from tests.knowledge.helpers import librarian

needs_extra = pytest.mark.skipif(not embeddings.installed(), reason="the embeddings extra is not installed")


def _add(role: str, name: str, text: str):
    return add_source(Upload(name, "text/markdown", text.encode()), role=role, project=None, load_level="basic")


def _texts(query: str, role: str = "librarian") -> list[str]:
    return sorted(h.chunk.text for h in search(query, roles=[role], k=5))


def _other_role() -> None:
    """A source of another role, so searching the librarian's filters by source."""
    other = AgentRole.objects.create(role="archivist", display_name="Archivist")
    _add(other.role, "o.md", "Zebra and giraffe elsewhere.")


def _vector(axis: int):
    vector = embeddings.numpy.zeros(embeddings.DIMENSIONS, dtype="<f4")
    vector[axis] = 1.0
    return vector


def _store(source, axis: int) -> None:
    """Give ``source``'s chunks the vector of ``axis``, in place."""
    vector = _vector(axis).tobytes()
    KnowledgeChunk.objects.filter(source=source).update(embedding=vector, embedding_model=embeddings.MODEL_ID)


@pytest.mark.django_db
def test_the_tables_are_kept_until_a_chunk_changes():
    role = librarian()
    source = _add(role.role, "a.md", "Zebra crossings.")
    first = resident.chunks()
    assert resident.chunks() is first  # nothing changed: the same table, not read again
    assert len(first) == 1
    for change in (
        lambda: _add(role.role, "b.md", "Giraffe necks."),
        lambda: KnowledgeChunk.objects.filter(source=source).update(text="Okapi."),
        lambda: KnowledgeChunk.objects.filter(source=source).delete(),
    ):
        before = resident.generation()
        kept = resident.chunks()
        change()
        assert resident.generation() != before
        assert resident.chunks() is not kept


# (the role searched, whether another role has a source): searched within one role while
# another role has sources (the scope is filtered), and over every source (it is not).
SCOPES = [("librarian", True), (None, False)]


@pytest.mark.django_db
@pytest.mark.parametrize(("role_scope", "other_role"), SCOPES)
def test_a_chunk_added_changed_or_removed_is_found_or_not_at_the_next_full_text_search(role_scope, other_role):
    role = librarian()
    if other_role:
        other = AgentRole.objects.create(role="archivist", display_name="Archivist")
        _add(other.role, "o.md", "Zebra stripes elsewhere.")

    def found(query: str) -> list[str]:
        hits = search(query, roles=[role_scope] if role_scope else None, k=5)
        return sorted(h.chunk.text for h in hits if h.chunk.source.role_id == role.pk)

    assert found("zebra") == []
    source = _add(role.role, "a.md", "Zebra crossings.")
    assert found("zebra") == ["Zebra crossings."]  # added after the table was kept
    KnowledgeChunk.objects.filter(source=source).update(
        text="Giraffe necks.", text_words=joined_words("Giraffe necks.")
    )
    assert found("zebra") == [] and found("giraffe") == ["Giraffe necks."]
    second = _add(role.role, "b.md", "Giraffe spots.")
    assert found("giraffe") == ["Giraffe necks.", "Giraffe spots."]
    second.delete()
    assert found("giraffe") == ["Giraffe necks."]
    if other_role:  # the other role's chunk never leaks into the role's scope
        assert [h.chunk.text for h in search("zebra", roles=["librarian"])] == []


@pytest.mark.django_db
def test_a_rolled_back_change_leaves_nothing_behind():
    role = librarian()
    _other_role()
    _add(role.role, "a.md", "Zebra crossings.")
    assert _texts("zebra") == ["Zebra crossings."]
    with pytest.raises(RuntimeError), transaction.atomic():
        _add(role.role, "b.md", "Zebra stripes.")
        assert _texts("zebra") == ["Zebra crossings.", "Zebra stripes."]  # seen inside its transaction
        raise RuntimeError("roll back")
    assert _texts("zebra") == ["Zebra crossings."]
    _add(role.role, "c.md", "Zebra herds.")  # a later change never takes the rolled-back one's generation
    assert _texts("zebra") == ["Zebra crossings.", "Zebra herds."]


@pytest.mark.django_db(transaction=True)
def test_a_change_written_by_another_connection_is_seen():
    role = librarian()
    _other_role()
    source = _add(role.role, "a.md", "Zebra crossings.")
    assert _texts("zebra") == ["Zebra crossings."]
    chunk_id = KnowledgeChunk.objects.get(source=source).pk
    table = KnowledgeChunk._meta.db_table
    other = connection.copy()  # a second connection to the same database, as another process has
    try:
        with other.cursor() as cursor:
            cursor.execute(
                f"INSERT INTO {table} (source_id, ordinal, heading, text, language, embedding_model, "
                "heading_words, text_words, words_version) VALUES (%s, 1, '', %s, 'en', '', '', %s, 1)",
                [source.pk, "Giraffe necks.", joined_words("Giraffe necks.")],
            )
            cursor.execute(
                f"UPDATE {table} SET text = %s, text_words = %s WHERE id = %s", ["Okapi.", "okapi", chunk_id]
            )
        if not other.get_autocommit():
            other.commit()
    finally:
        other.close()
    assert _texts("zebra") == [] and _texts("okapi") == ["Okapi."]
    assert _texts("giraffe") == ["Giraffe necks."]


@needs_extra
@pytest.mark.django_db
def test_a_vector_added_changed_or_removed_is_ranked_or_not_at_the_next_hybrid_search(settings, monkeypatch):
    """Vectors written straight into the chunks (no model needed): the query's vector is one
    axis, so the chunk holding that axis is the nearest exactly when the kept matrix is the
    database's."""
    settings.TEAMCLAW = {**settings.TEAMCLAW, "KNOWLEDGE_EMBEDDINGS": "auto"}
    monkeypatch.setattr(embeddings, "embed_query", lambda query: _vector(7))
    monkeypatch.setattr(embeddings, "embed", lambda texts: [_vector(0).tobytes() for _ in texts])
    role = librarian()
    first = _add(role.role, "a.md", "Alpha.")
    second = _add(role.role, "b.md", "Beta.")
    KnowledgeChunk.objects.update(embedding=None, embedding_model="")

    def nearest() -> tuple[str, int]:
        ranked = ranked_search("qqq", roles=[role.role], k=1)  # shares no word: the vectors alone rank
        return (ranked.hits[0].chunk.text if ranked.hits else "", ranked.unembedded)

    assert nearest() == ("", 2)  # no vector: full text, which finds nothing
    _store(first, 7)
    _store(second, 3)
    assert ranked_search("qqq", roles=[role.role], k=1).ranking == HYBRID
    assert nearest() == ("Alpha.", 0)
    _store(first, 1)
    _store(second, 7)
    assert nearest() == ("Beta.", 0)  # changed in place: the matrix is read again
    second.delete()
    assert nearest() == ("Alpha.", 0)  # removed
    third = _add(role.role, "c.md", "Gamma.")
    _store(third, 7)
    assert nearest() == ("Gamma.", 0)  # added


@pytest.mark.django_db
def test_a_chunk_committed_after_the_table_was_read_never_leaks_out_of_scope(monkeypatch):
    """SQLite full text: the table covers every chunk the searcher may see, and another
    process commits a chunk of a source out of scope before the full-text query runs (here:
    the table as read before that commit). The chunk is in the FTS index but not the table: it
    must not be returned to a searcher without access to its source."""
    if connection.vendor != "sqlite":
        pytest.skip("the scope is applied in SQL on PostgreSQL")
    role = librarian()
    _add(role.role, "a.md", "Zebra crossings.")
    table = resident.chunks()
    other = AgentRole.objects.create(role="archivist", display_name="Archivist")
    _add(other.role, "o.md", "Zebra secrets of the archive.")
    monkeypatch.setattr(resident, "chunks", lambda: table)
    assert _texts("zebra") == ["Zebra crossings."]
