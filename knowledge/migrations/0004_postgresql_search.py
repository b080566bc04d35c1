"""The PostgreSQL indexes of knowledge chunks (PostgreSQL only; see ``knowledge.search``).

PostgreSQL's text-search parsers do not segment Chinese (a run of ideographs is one "word"),
so each chunk is indexed by its ``language``:

- ``en`` chunks: a GIN index on the ``tsvector`` of the ``simple`` configuration (no stemming,
  no stop words: a word matches as itself or, in the query, as a prefix), the heading
  weighted ``A`` and the text ``B``;
- ``zh`` chunks: a GIN ``pg_trgm`` index on the heading and text, so ``ILIKE '%数据库%'``
  finds any substring of three or more characters (English words in them as well).

Both are partial expression indexes: nothing is stored beside the chunk, and the index
changes in the chunk's own transaction. SQLite gets nothing here (it has FTS5, 0002).
"""

from django.db import migrations

EN_VECTOR = (
    "(setweight(to_tsvector('simple'::regconfig, heading), 'A') || "
    "setweight(to_tsvector('simple'::regconfig, text), 'B'))"
)
"""The indexed expression of an ``en`` chunk; ``knowledge.search`` queries exactly this."""
ZH_TEXT = "(heading || ' ' || text)"
"""The indexed expression of a ``zh`` chunk; ``knowledge.search`` queries exactly this."""

CREATE = [
    "CREATE EXTENSION IF NOT EXISTS pg_trgm",
    f"CREATE INDEX knowledge_chunk_en_tsv ON knowledge_knowledgechunk USING GIN ({EN_VECTOR}) WHERE language = 'en'",
    f"CREATE INDEX knowledge_chunk_zh_trgm ON knowledge_knowledgechunk USING GIN ({ZH_TEXT} gin_trgm_ops) "
    "WHERE language = 'zh'",
]
DROP = [
    "DROP INDEX IF EXISTS knowledge_chunk_zh_trgm",
    "DROP INDEX IF EXISTS knowledge_chunk_en_tsv",
]


def _run(statements):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            for statement in statements:
                schema_editor.execute(statement)

    return run


class Migration(migrations.Migration):
    dependencies = [("knowledge", "0003_sources_on_skills_and_folders")]

    operations = [migrations.RunPython(_run(CREATE), _run(DROP))]
