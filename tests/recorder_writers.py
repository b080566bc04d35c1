"""Writers the recorder-process tests give the child (``RecorderProcess(writer=...)``): the
child imports them by dotted path, so they live in a module of their own (importing a test
module would import pytest and its fixtures into the child)."""

from __future__ import annotations

import os
import signal
import sys
from typing import Any

from django.db import OperationalError, connection

from monitoring.recorder_process import WIRE_EVENT, WireWriter

DIE_AFTER_COMMIT = "die_after_commit"
"""The alert kind that makes ``DiesAfterCommitWriter`` kill its process once it committed it."""


def in_child() -> bool:
    """Whether this is a recorder child process (not the runtime's process writing on a thread)."""
    return "record_events" in sys.argv


class FailsOnceWriter(WireWriter):
    """Its first batch fails as after a database restart: the connection dies underneath."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def write(self, batch: list[Any]) -> None:
        self.calls += 1
        if self.calls == 1:
            connection.ensure_connection()
            connection.connection.close()
            raise OperationalError("server closed the connection unexpectedly")
        super().write(batch)


class DiesAfterCommitWriter(WireWriter):
    """Kills its process with SIGKILL right after committing a batch holding an alert of kind
    ``DIE_AFTER_COMMIT``: the batch is in the database, its acknowledgement never sent."""

    def write(self, batch: list[Any]) -> None:
        super().write(batch)
        if any(item[0] == WIRE_EVENT and getattr(item[3], "alert_kind", "") == DIE_AFTER_COMMIT for item in batch):
            os.kill(os.getpid(), signal.SIGKILL)


class AlwaysDiesWriter(WireWriter):
    """In a child process, kills it before writing anything; on a thread of the runtime's
    process (the fallback) it writes as usual."""

    def write(self, batch: list[Any]) -> None:
        if in_child():
            os.kill(os.getpid(), signal.SIGKILL)
        super().write(batch)
