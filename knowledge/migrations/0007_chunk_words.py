"""Knowledge indexed by words (issue 32; ``knowledge.words``): each chunk keeps the words it is
searched by (``heading_words``, ``text_words``: jieba's words for Chinese, Snowball stems for
the rest) and the version of the cutting that made them, and both databases index those words
instead of character trigrams:

- SQLite: the FTS5 table ``knowledge_chunk_fts`` is made again over the two word columns with
  the ``unicode61`` tokenizer (a word per space-separated token, so 表名 is one term), kept by
  the same three triggers, and rebuilt from the chunks; its ``fts5vocab`` table beside it
  says how many chunks hold each word;
- PostgreSQL: migration 0004's two indexes by language are replaced by one GIN expression
  index on the chunk's words as an array (``WORDS_ARRAY``), matched with ``&&`` (no text-search
  parser: words of any script are taken exactly as stored).

Every existing chunk gets its words here, in batches, inside the migration's transaction:
nothing is re-cut from its document and nothing is lost; a later change of the cutting
(``WORDS_VERSION``) is caught up by ``manage.py index_knowledge_words`` (``make run``).

On SQLite adding a column rebuilds ``knowledge_knowledgechunk``, which drops its triggers: the
old ones are dropped first and the new ones made at the end (as 0003 and 0006 do). A later
migration that rebuilds the table must do the same with ``TRIGGERS`` and ``DROP_TRIGGERS`` here.
"""

import importlib

from django.db import migrations, models

old = importlib.import_module("knowledge.migrations.0002_chunk_fts")
pg_old = importlib.import_module("knowledge.migrations.0004_postgresql_search")

FTS = "knowledge_chunk_fts"
TABLE = "knowledge_knowledgechunk"
CREATE_TABLE = (
    f"CREATE VIRTUAL TABLE {FTS} USING fts5(heading_words, text_words, content='{TABLE}', "
    "content_rowid='id', tokenize=\"unicode61 remove_diacritics 0\")"
)
TRIGGERS = [
    f"CREATE TRIGGER knowledge_chunk_fts_insert AFTER INSERT ON {TABLE} BEGIN "
    f"INSERT INTO {FTS}(rowid, heading_words, text_words) VALUES (new.id, new.heading_words, new.text_words); END",
    f"CREATE TRIGGER knowledge_chunk_fts_delete AFTER DELETE ON {TABLE} BEGIN "
    f"INSERT INTO {FTS}({FTS}, rowid, heading_words, text_words) "
    "VALUES ('delete', old.id, old.heading_words, old.text_words); END",
    f"CREATE TRIGGER knowledge_chunk_fts_update AFTER UPDATE ON {TABLE} BEGIN "
    f"INSERT INTO {FTS}({FTS}, rowid, heading_words, text_words) "
    "VALUES ('delete', old.id, old.heading_words, old.text_words); "
    f"INSERT INTO {FTS}(rowid, heading_words, text_words) VALUES (new.id, new.heading_words, new.text_words); END",
]
DROP_TRIGGERS = [
    "DROP TRIGGER IF EXISTS knowledge_chunk_fts_update",
    "DROP TRIGGER IF EXISTS knowledge_chunk_fts_delete",
    "DROP TRIGGER IF EXISTS knowledge_chunk_fts_insert",
]
VOCABULARY = f"CREATE VIRTUAL TABLE {FTS}_vocab USING fts5vocab({FTS}, row)"
"""Each word of the index and how many chunks hold it (``knowledge.search`` reads it for bm25)."""
CREATE = [CREATE_TABLE, *TRIGGERS, VOCABULARY, f"INSERT INTO {FTS}({FTS}) VALUES ('rebuild')"]
DROP = [*DROP_TRIGGERS, f"DROP TABLE IF EXISTS {FTS}_vocab", f"DROP TABLE IF EXISTS {FTS}"]
OLD_CREATE = [*old.CREATE, f"INSERT INTO {FTS}({FTS}) VALUES ('rebuild')"]

WORDS_ARRAY = "(string_to_array(btrim(heading_words || ' ' || text_words), ' '))"
"""The indexed expression on PostgreSQL; ``knowledge.search`` queries exactly this."""
PG_CREATE = [f"CREATE INDEX knowledge_chunk_words ON {TABLE} USING GIN ({WORDS_ARRAY})"]
PG_DROP = ["DROP INDEX IF EXISTS knowledge_chunk_words"]
BATCH = 500


def _sqlite(statements):
    return old._run(statements)


def _postgresql(statements):
    return pg_old._run(statements)


def fill_words(apps, schema_editor):
    """Every chunk's words by the current cutting, ``BATCH`` chunks at a time."""
    words = importlib.import_module("knowledge.words")
    chunk = apps.get_model("knowledge", "KnowledgeChunk")
    last = 0
    while True:
        rows = list(chunk.objects.filter(pk__gt=last).order_by("pk").values_list("pk", "heading", "text")[:BATCH])
        if not rows:
            return
        chunk.objects.bulk_update(
            [
                chunk(
                    pk=pk,
                    heading_words=words.joined_words(heading),
                    text_words=words.joined_words(text),
                    words_version=words.WORDS_VERSION,
                )
                for pk, heading, text in rows
            ],
            ["heading_words", "text_words", "words_version"],
        )
        last = rows[-1][0]


class Migration(migrations.Migration):
    dependencies = [("knowledge", "0006_chunk_embeddings")]

    operations = [
        migrations.RunPython(_sqlite(old.DROP), _sqlite(OLD_CREATE)),
        migrations.RunPython(_postgresql(pg_old.DROP), _postgresql(pg_old.CREATE)),
        migrations.AddField(
            model_name="knowledgechunk",
            name="heading_words",
            field=models.TextField(
                blank=True, default="", editable=False, help_text="The heading's search words, space-separated."
            ),
        ),
        migrations.AddField(
            model_name="knowledgechunk",
            name="text_words",
            field=models.TextField(
                blank=True, default="", editable=False, help_text="The text's search words, space-separated."
            ),
        ),
        migrations.AddField(
            model_name="knowledgechunk",
            name="words_version",
            field=models.PositiveSmallIntegerField(
                default=0, editable=False, help_text="knowledge.words.WORDS_VERSION of the words (0: never cut)."
            ),
        ),
        migrations.RunPython(fill_words, migrations.RunPython.noop),
        migrations.RunPython(_sqlite(CREATE), _sqlite(DROP)),
        migrations.RunPython(_postgresql(PG_CREATE), _postgresql(PG_DROP)),
    ]
