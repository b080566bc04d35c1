"""The test database's starting point: migrated, with the built-in team loaded, once a session.

A test on the ``db`` fixture runs inside a transaction that is rolled back, so it always
starts from this point. A transactional test (``transactional_db``, ``live_server``, the
runtime host, websockets) commits; afterwards Django would empty every table and the next
test would load the team again. Instead the database is put back as it was: on SQLite by
copying the pages of a snapshot taken after the team was loaded (sqlite3's backup API, a few
milliseconds); on PostgreSQL by emptying the tables (Django's flush) and loading the team.
"""

from __future__ import annotations

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

    def capture(self) -> None:
        """Load the built-in team (committed) and, on SQLite, keep a copy of the database."""
        self.counts = load_builtin()
        if connection.vendor == "sqlite":
            connection.ensure_connection()
            self._copy = sqlite3.connect(":memory:", check_same_thread=False)
            connection.connection.backup(self._copy)

    def restore(self, flush: Callable[[], None]) -> None:
        """Put the database back to the starting point after a test that committed."""
        if self._copy is not None:
            connection.ensure_connection()
            try:
                self._copy.backup(connection.connection)
                return
            except sqlite3.OperationalError:  # another connection still holds a lock: start over
                pass
        flush()
        load_builtin()

    def close(self) -> None:
        """Drop the copy."""
        if self._copy is not None:
            self._copy.close()
            self._copy = None


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
