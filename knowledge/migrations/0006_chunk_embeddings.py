"""Each chunk's optional vector (the ``embeddings`` extra, ``knowledge.embeddings``): a binary
column of 512 float32 and the model that made it. Existing chunks get none here; re-indexing
a source, or ``manage.py embed_knowledge``, fills them.

On SQLite, adding the NOT NULL ``embedding_model`` column rebuilds ``knowledge_knowledgechunk``,
which drops its FTS5 triggers (migration 0002): as in 0003 they are dropped first and made
again at the end (the FTS5 table's rows keep pointing at the same chunk ids).
"""

import importlib

from django.db import migrations, models

fts = importlib.import_module("knowledge.migrations.0002_chunk_fts")
TRIGGERS = [statement for statement in fts.CREATE if statement.startswith("CREATE TRIGGER")]
DROP_TRIGGERS = [statement for statement in fts.DROP if statement.startswith("DROP TRIGGER")]


class Migration(migrations.Migration):

    dependencies = [
        ('knowledge', '0005_folder_file_state'),
    ]

    operations = [
        migrations.RunPython(fts._run(DROP_TRIGGERS), fts._run(TRIGGERS)),
        migrations.AddField(
            model_name='knowledgechunk',
            name='embedding',
            field=models.BinaryField(blank=True, help_text="The chunk's vector (512 float32, little-endian) when the embeddings extra is on.", null=True),
        ),
        migrations.AddField(
            model_name='knowledgechunk',
            name='embedding_model',
            field=models.CharField(blank=True, editable=False, help_text='The model that made the vector (empty: none).', max_length=40),
        ),
        migrations.RunPython(fts._run(TRIGGERS), fts._run(DROP_TRIGGERS)),
    ]
