"""Sources of a skill and of a project's folder, the kept document, chunk languages.

On SQLite, adding a NOT NULL column rebuilds ``knowledge_knowledgechunk``, which drops its
FTS5 triggers (migration 0002): they are dropped first and made again at the end (the FTS5
table's rows keep pointing at the same chunk ids). Existing chunks get their language, and
existing sources a document made of their indexed chunks.
"""

import importlib

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

from knowledge.chunking import chunk_language


fts = importlib.import_module("knowledge.migrations.0002_chunk_fts")
TRIGGERS = [statement for statement in fts.CREATE if statement.startswith("CREATE TRIGGER")]
DROP_TRIGGERS = [statement for statement in fts.DROP if statement.startswith("DROP TRIGGER")]


def fill(apps, schema_editor):
    chunk_model = apps.get_model("knowledge", "KnowledgeChunk")
    source_model = apps.get_model("knowledge", "KnowledgeSource")
    for chunk in chunk_model.objects.all().iterator():
        language = chunk_language(f"{chunk.heading} {chunk.text}")
        if language != chunk.language:
            chunk_model.objects.filter(pk=chunk.pk).update(language=language)
    for source in source_model.objects.filter(document=""):
        parts = []
        for chunk in chunk_model.objects.filter(source=source).order_by("ordinal"):
            parts.append(f"# {chunk.heading}\n\n{chunk.text}" if chunk.heading else chunk.text)
        document = "\n\n".join(parts)
        source_model.objects.filter(pk=source.pk).update(
            document=document, byte_size=len(document.encode()), indexed_at=source.created_at
        )


class Migration(migrations.Migration):

    dependencies = [
        ('capabilities', '0007_config_refusals'),
        ('knowledge', '0002_chunk_fts'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.RunPython(fts._run(DROP_TRIGGERS), fts._run(TRIGGERS)),
        migrations.RemoveConstraint(
            model_name='knowledgesource',
            name='knowledge_source_role_xor_project',
        ),
        migrations.AddField(
            model_name='knowledgechunk',
            name='language',
            field=models.CharField(choices=[('en', 'English (and other spaced scripts)'), ('zh', 'Chinese')], default='en', max_length=2),
        ),
        migrations.AddField(
            model_name='knowledgesource',
            name='byte_size',
            field=models.PositiveIntegerField(default=0, help_text='Bytes of the document as uploaded or read.'),
        ),
        migrations.AddField(
            model_name='knowledgesource',
            name='document',
            field=models.TextField(blank=True, help_text="The document's text as uploaded or read (re-indexing reads it)."),
        ),
        migrations.AddField(
            model_name='knowledgesource',
            name='indexed_at',
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='knowledgesource',
            name='origin',
            field=models.CharField(choices=[('upload', 'Uploaded'), ('folder', 'Project folder')], default='upload', max_length=8),
        ),
        migrations.AddField(
            model_name='knowledgesource',
            name='path',
            field=models.CharField(blank=True, help_text="A folder source's path relative to the project's folder.", max_length=1000),
        ),
        migrations.AddField(
            model_name='knowledgesource',
            name='skill',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='knowledge', to='capabilities.skill'),
        ),
        migrations.AlterField(
            model_name='knowledgesource',
            name='content_type',
            field=models.CharField(choices=[('md', 'Markdown'), ('txt', 'Plain text'), ('html', 'HTML'), ('rst', 'reStructuredText'), ('code', 'Source code')], max_length=4),
        ),
        migrations.AddIndex(
            model_name='knowledgesource',
            index=models.Index(fields=['project', 'origin', 'path'], name='knowledge_source_folder_path'),
        ),
        migrations.AddConstraint(
            model_name='knowledgesource',
            constraint=models.CheckConstraint(condition=models.Q(models.Q(('role__isnull', False), ('skill__isnull', True), ('project__isnull', True)), models.Q(('role__isnull', True), ('skill__isnull', False), ('project__isnull', True)), models.Q(('role__isnull', True), ('skill__isnull', True), ('project__isnull', False)), _connector='OR'), name='knowledge_source_one_owner'),
        ),
        migrations.AddConstraint(
            model_name='knowledgesource',
            constraint=models.CheckConstraint(condition=models.Q(('origin', 'upload'), ('project__isnull', False), _connector='OR'), name='knowledge_folder_source_of_a_project'),
        ),
        migrations.RunPython(fts._run(TRIGGERS), fts._run(DROP_TRIGGERS)),
        migrations.RunPython(fill, migrations.RunPython.noop),
    ]
