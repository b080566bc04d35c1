"""Threads whose every job closes the database connections it opened (issue 17,
docs/architecture.md §3 "SQLite file handles")."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import ParamSpec, TypeVar

from django.db import connections

P = ParamSpec("P")
T = TypeVar("T")


class ConnectionClosingExecutor(ThreadPoolExecutor):
    """The host's worker threads (the runtime loop's default executor, so every
    ``asyncio.to_thread`` of the runtime, the dispatcher, knowledge retrieval and the alert
    rules): each job closes the database connections it opened when it ends, as Channels'
    ``database_sync_to_async`` does around each call.

    Why (issue 17, docs/architecture.md §3 "SQLite file handles"): SQLite keeps the descriptor
    of every connection closed in this process open (and reuses it) while any other
    connection here still holds a lock on the database file, and in WAL mode a connection
    that has read holds its shared lock until it is closed. A worker thread that kept its
    connection between jobs (``close_old_connections`` at the start of the next one) held
    that lock for ever, so the descriptors of a burst of requests (one connection per
    request's thread) stayed open for minutes. The jobs that began with
    ``close_old_connections`` (polls, snapshots, retrieval, alert rules) open no more
    connections than before: with ``CONN_MAX_AGE`` 0 it closed the one left. The others (a
    task's lease release, a command's answer) now open one each; invokes/s did not drop
    (``bench/sqlite_handles_bench.py``)."""

    def submit(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> Future[T]:
        return super().submit(closing_connections, fn, *args, **kwargs)


def closing_connections(fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
    """``fn(*args, **kwargs)``, then close this thread's database connections (even when it
    raised; a PostgreSQL pool gets its connection back)."""
    try:
        return fn(*args, **kwargs)
    finally:
        connections.close_all()
