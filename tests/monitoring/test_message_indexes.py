"""Migration 0004: the single-column indexes on Message.type and Message.task_id are gone (the
composite ``message_type_seq`` and ``message_task_seq`` indexes start with those columns), and
migrating back restores an index on each column."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from monitoring.models import Message

pytestmark = pytest.mark.django_db(transaction=True)

TABLE = Message._meta.db_table


def indexed_column_lists() -> list[list[str]]:
    with connection.cursor() as cursor:
        constraints = connection.introspection.get_constraints(cursor, TABLE)
    return [info["columns"] for info in constraints.values() if info["index"] and not info["primary_key"]]


def test_only_the_composite_indexes_cover_type_and_task_id():
    columns = indexed_column_lists()
    assert ["type"] not in columns
    assert ["task_id"] not in columns
    assert ["type", "seq"] in columns
    assert ["task_id", "seq"] in columns


def test_migrating_back_and_forth_restores_then_drops_the_single_column_indexes():
    executor = MigrationExecutor(connection)
    # every app's latest migration: going back in monitoring also unapplies the apps that
    # depend on it (interop, runs), and all of them must come back
    latest = executor.loader.graph.leaf_nodes()
    try:
        executor.migrate([("monitoring", "0003_live_viewer_indexes_and_event_order")])
        assert ["type"] in indexed_column_lists()
        assert ["task_id"] in indexed_column_lists()
    finally:
        executor = MigrationExecutor(connection)
        executor.loader.build_graph()
        executor.migrate(latest)
    assert ["type"] not in indexed_column_lists()
    assert ["task_id"] not in indexed_column_lists()
