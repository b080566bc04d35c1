"""The test database's starting point: migrated, with the built-in team loaded, once a session.

A test on the ``db`` fixture runs inside a transaction that is rolled back, so it always
starts from this point. A transactional test (``transactional_db``, ``live_server``, the
runtime host, websockets) commits; afterwards Django would empty every table and the next
test would load the team again. Instead the database is put back as it was: on SQLite by
copying the pages of a snapshot taken after the team was loaded (sqlite3's backup API, a few
milliseconds); on PostgreSQL by emptying every table in one TRUNCATE and copying the rows
back in from a binary COPY taken after the team was loaded, with the sequences where they
were (one transaction; Django's foreign keys are deferred, so table order does not matter).
When a snapshot cannot be used, the tables are flushed and the team loaded again.
"""

from __future__ import annotations

import gc
import sqlite3
from collections.abc import Callable
from typing import Any

from django.db import connection, connections
from django.test import TransactionTestCase

from team.builtin import load_builtin


class PristineDatabase:
    """The session's starting point of the test database (see module docstring)."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self._copy: sqlite3.Connection | None = None
        self._rows: dict[str, bytes] = {}
        self._sequences: dict[str, int | None] = {}

    def capture(self) -> None:
        """Load the built-in team (committed) and keep a copy of the database."""
        self.counts = load_builtin()
        connection.ensure_connection()
        if connection.vendor == "sqlite":
            self._copy = sqlite3.connect(":memory:", check_same_thread=False)
            connection.connection.backup(self._copy)
        elif connection.vendor == "postgresql":
            self._capture_postgresql()

    def restore(self, flush: Callable[[], None]) -> None:
        """Put the database back to the starting point after a test that committed."""
        connection.ensure_connection()
        if self._copy is not None:
            try:
                self._copy.backup(connection.connection)
                return
            except sqlite3.OperationalError:  # another connection still holds a lock: start over
                pass
        elif self._rows:
            self._restore_postgresql()
            return
        flush()
        load_builtin()

    def _capture_postgresql(self) -> None:
        tables = connection.introspection.django_table_names(only_existing=True, include_views=False)
        with connection.connection.cursor() as cursor:
            for table in tables:
                with cursor.copy(f'COPY "{table}" TO STDOUT (FORMAT BINARY)') as copy:
                    self._rows[table] = b"".join(bytes(chunk) for chunk in copy)
            cursor.execute("SELECT sequencename, last_value FROM pg_sequences WHERE schemaname = current_schema()")
            self._sequences = dict(cursor.fetchall())

    def _restore_postgresql(self) -> None:
        raw = connection.connection
        with raw.transaction(), raw.cursor() as cursor:
            cursor.execute("TRUNCATE " + ", ".join(f'"{table}"' for table in self._rows) + " RESTART IDENTITY CASCADE")
            for table, rows in self._rows.items():
                with cursor.copy(f'COPY "{table}" FROM STDIN (FORMAT BINARY)') as copy:
                    copy.write(rows)
            for sequence, last_value in self._sequences.items():
                if last_value is not None:
                    cursor.execute("SELECT setval(%s, %s, true)", [f'"{sequence}"', last_value])

    def close(self) -> None:
        """Drop the copy, and the connections that finished threads left behind (their
        last references sit in cycles that only a collection frees, and the server's heap
        policy collects rarely); PostgreSQL refuses to drop a database still in use."""
        if self._copy is not None:
            self._copy.close()
            self._copy = None
        self._rows.clear()
        gc.collect()


PRISTINE = PristineDatabase()

_flush = TransactionTestCase._fixture_teardown


def restore_instead_of_flush(test_case: Any) -> None:
    """``TransactionTestCase._fixture_teardown`` for this suite: the database goes back to its
    starting point (the built-in team loaded) rather than empty."""
    for alias in test_case._databases_names(include_mirrors=False):
        if alias != "default":
            raise RuntimeError(f"the suite restores the default database only, not {alias!r}")
    connections.close_all()
    PRISTINE.restore(lambda: _flush(test_case))
