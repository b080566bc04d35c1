"""The knowledge index's generation (issue 32; ``knowledge.resident``): one number that changes
whenever a chunk is inserted, updated or deleted, in the same transaction, so a process that
holds the chunks' vectors and sources in memory can tell in one indexed read whether they are
still the database's.

``knowledge_index_generation`` is one row (``id`` 1) outside Django's models, so a test
database's flush never empties it. The number is never repeated, so a transaction that was
rolled back cannot leave a process holding what it saw under a number the database reaches
again:

- SQLite: triggers on each inserted, updated or deleted chunk set it to ``random()`` (64 bits);
- PostgreSQL: a statement-level trigger sets it to the next value of a sequence (sequences do
  not go back on rollback) after each ``INSERT``, ``UPDATE``, ``DELETE`` or ``TRUNCATE`` of
  chunks. Writers of chunks queue on that one row until they commit (indexing already
  queues on the sources' rows).

Other databases get nothing and ``knowledge.resident`` reads the chunks again for every search.

On SQLite adding a column to ``knowledge_knowledgechunk`` rebuilds the table, which drops its
triggers: a later migration that does so must drop ``TRIGGERS`` here first and make them again
at the end (as 0007 does with the FTS5 triggers).
"""

from django.db import migrations

TABLE = "knowledge_knowledgechunk"
GENERATION = "knowledge_index_generation"

TRIGGERS = [
    f"CREATE TRIGGER knowledge_chunk_generation_{event.lower()} AFTER {event} ON {TABLE} BEGIN "
    f"UPDATE {GENERATION} SET generation = random() WHERE id = 1; END"
    for event in ("INSERT", "UPDATE", "DELETE")
]
DROP_TRIGGERS = [f"DROP TRIGGER IF EXISTS knowledge_chunk_generation_{e}" for e in ("insert", "update", "delete")]
CREATE = [
    f"CREATE TABLE {GENERATION} (id INTEGER PRIMARY KEY CHECK (id = 1), generation INTEGER NOT NULL)",
    f"INSERT INTO {GENERATION} (id, generation) VALUES (1, random())",
    *TRIGGERS,
]
DROP = [*DROP_TRIGGERS, f"DROP TABLE IF EXISTS {GENERATION}"]

PG_CREATE = [
    f"CREATE SEQUENCE {GENERATION}_seq",
    f"CREATE TABLE {GENERATION} (id smallint PRIMARY KEY CHECK (id = 1), generation bigint NOT NULL)",
    f"INSERT INTO {GENERATION} (id, generation) VALUES (1, nextval('{GENERATION}_seq'))",
    f"CREATE FUNCTION {GENERATION}_next() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
    f"UPDATE {GENERATION} SET generation = nextval('{GENERATION}_seq') WHERE id = 1; RETURN NULL; END $$",
    f"CREATE TRIGGER knowledge_chunk_generation AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON {TABLE} "
    f"FOR EACH STATEMENT EXECUTE FUNCTION {GENERATION}_next()",
]
PG_DROP = [
    f"DROP TRIGGER IF EXISTS knowledge_chunk_generation ON {TABLE}",
    f"DROP FUNCTION IF EXISTS {GENERATION}_next()",
    f"DROP TABLE IF EXISTS {GENERATION}",
    f"DROP SEQUENCE IF EXISTS {GENERATION}_seq",
]


def _run(vendor, statements):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor == vendor:
            for statement in statements:
                schema_editor.execute(statement)

    return run


class Migration(migrations.Migration):
    dependencies = [("knowledge", "0007_chunk_words")]

    operations = [
        migrations.RunPython(_run("sqlite", CREATE), _run("sqlite", DROP)),
        migrations.RunPython(_run("postgresql", PG_CREATE), _run("postgresql", PG_DROP)),
    ]
