"""Snapshot message references stored once (``SnapshotMessage``); ``Snapshot.state`` keeps
its column and becomes ``stored_state`` in the model (``Snapshot.state`` reads it whole)."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("monitoring", "0012_open_point_answer")]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.RenameField(model_name="snapshot", old_name="state", new_name="stored_state"),
                migrations.AlterField(
                    model_name="snapshot", name="stored_state", field=models.JSONField(db_column="state")
                ),
            ],
            database_operations=[],
        ),
        migrations.CreateModel(
            name="SnapshotMessage",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("context_id", models.CharField(db_index=True, max_length=64)),
                ("stream", models.CharField(max_length=64)),
                ("position", models.PositiveIntegerField()),
                ("ref", models.JSONField()),
            ],
            options={
                "constraints": [
                    models.UniqueConstraint(fields=("stream", "position"), name="snapshot_message_pos")
                ],
            },
        ),
    ]
