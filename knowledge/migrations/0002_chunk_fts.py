"""The FTS5 index of knowledge chunks (SQLite only; see ``knowledge.search``).

An external-content FTS5 table over ``knowledge_knowledgechunk`` (``heading``, ``text``)
with the ``trigram`` tokenizer, kept in step by triggers, so every insert, update and
delete of a chunk changes the index in the same transaction. Other databases get nothing
here and search with ``LIKE``.
"""

from django.db import migrations

CREATE = [
    "CREATE VIRTUAL TABLE knowledge_chunk_fts USING fts5("
    "heading, text, content='knowledge_knowledgechunk', content_rowid='id', tokenize='trigram')",
    "CREATE TRIGGER knowledge_chunk_fts_insert AFTER INSERT ON knowledge_knowledgechunk BEGIN "
    "INSERT INTO knowledge_chunk_fts(rowid, heading, text) VALUES (new.id, new.heading, new.text); END",
    "CREATE TRIGGER knowledge_chunk_fts_delete AFTER DELETE ON knowledge_knowledgechunk BEGIN "
    "INSERT INTO knowledge_chunk_fts(knowledge_chunk_fts, rowid, heading, text) "
    "VALUES ('delete', old.id, old.heading, old.text); END",
    "CREATE TRIGGER knowledge_chunk_fts_update AFTER UPDATE ON knowledge_knowledgechunk BEGIN "
    "INSERT INTO knowledge_chunk_fts(knowledge_chunk_fts, rowid, heading, text) "
    "VALUES ('delete', old.id, old.heading, old.text); "
    "INSERT INTO knowledge_chunk_fts(rowid, heading, text) VALUES (new.id, new.heading, new.text); END",
]
DROP = [
    "DROP TRIGGER IF EXISTS knowledge_chunk_fts_update",
    "DROP TRIGGER IF EXISTS knowledge_chunk_fts_delete",
    "DROP TRIGGER IF EXISTS knowledge_chunk_fts_insert",
    "DROP TABLE IF EXISTS knowledge_chunk_fts",
]


def _run(statements):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor == "sqlite":
            for statement in statements:
                schema_editor.execute(statement)

    return run


class Migration(migrations.Migration):
    dependencies = [("knowledge", "0001_initial")]

    operations = [migrations.RunPython(_run(CREATE), _run(DROP))]
