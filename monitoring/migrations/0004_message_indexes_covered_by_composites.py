"""Drop the single-column indexes on Message.type and Message.task_id.

``message_type_seq`` and ``message_task_seq`` start with those columns, so they answer every
query the single-column ones did; each message insert now updates two B-trees fewer (the
recorder writes thousands of rows a second, bench/runtime_bench.py). The indexes are dropped
by name with DROP INDEX rather than by AlterField, which on SQLite would copy the whole
message table.
"""

from django.db import migrations, models

COLUMNS = ("type", "task_id")


def single_column_indexes(schema_editor, table):
    """Names of the non-unique indexes on exactly one of COLUMNS (Django's ``_idx``/``_like``)."""
    with schema_editor.connection.cursor() as cursor:
        constraints = schema_editor.connection.introspection.get_constraints(cursor, table)
    return [
        name
        for name, info in constraints.items()
        if info["index"] and not info["unique"] and not info["primary_key"]
        if len(info["columns"]) == 1 and info["columns"][0] in COLUMNS
    ]


def drop_indexes(apps, schema_editor):
    table = apps.get_model("monitoring", "Message")._meta.db_table
    for name in single_column_indexes(schema_editor, table):
        schema_editor.execute(f"DROP INDEX {schema_editor.quote_name(name)}")


def restore_indexes(apps, schema_editor):
    table = apps.get_model("monitoring", "Message")._meta.db_table
    quote = schema_editor.quote_name
    for column in COLUMNS:
        name = f"{table}_{column}_single"
        schema_editor.execute(f"CREATE INDEX IF NOT EXISTS {quote(name)} ON {quote(table)} ({quote(column)})")


class Migration(migrations.Migration):
    dependencies = [
        ("monitoring", "0003_live_viewer_indexes_and_event_order"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(model_name="message", name="task_id", field=models.CharField(max_length=64)),
                migrations.AlterField(model_name="message", name="type", field=models.CharField(max_length=24)),
            ],
            database_operations=[migrations.RunPython(drop_indexes, restore_indexes)],
        ),
    ]
