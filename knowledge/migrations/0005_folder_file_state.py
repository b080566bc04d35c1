"""What a folder source's file was when indexed (size was already ``byte_size``): its
modification time and the SHA-256 of its text, so the folder's changes since indexing are
seen (``knowledge.folder_changes``). Existing folder sources get the digest of their kept
document; their time stays NULL, so the first look compares their text."""

import hashlib

from django.db import migrations, models


def fill(apps, schema_editor):
    source_model = apps.get_model("knowledge", "KnowledgeSource")
    for source in source_model.objects.filter(origin="folder").only("pk", "document").iterator():
        digest = hashlib.sha256(source.document.encode()).hexdigest()
        source_model.objects.filter(pk=source.pk).update(content_sha256=digest)


class Migration(migrations.Migration):

    dependencies = [
        ('knowledge', '0004_postgresql_search'),
    ]

    operations = [
        migrations.AddField(
            model_name='knowledgesource',
            name='content_sha256',
            field=models.CharField(blank=True, help_text="SHA-256 (hex) of a folder source's text when indexed.", max_length=64),
        ),
        migrations.AddField(
            model_name='knowledgesource',
            name='file_mtime_ns',
            field=models.BigIntegerField(blank=True, help_text="A folder source's file modification time when indexed (ns since the epoch).", null=True),
        ),
        migrations.RunPython(fill, migrations.RunPython.noop),
    ]
