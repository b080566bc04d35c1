"""``python manage.py record_events FD``: the recorder process of a runtime process.

Started by ``monitoring.recorder_process.RecorderProcess`` (``TEAMCLAW_RECORDER=process``),
never by hand: ``FD`` is its end of a socket pair with the runtime's process. The first
message on it is the configuration (the recorder's stream id, writer class, batch size and
the runtime's effective database settings, so a test database is the one written); then
frames of events until a stop message or the end of the socket (``recorder_process.serve``).

Ctrl-C and SIGTERM are ignored: they reach the whole process group, and the runtime's
process stops its recorder itself once it has written everything (a stop message), or the
socket ends when that process is gone.
"""

from __future__ import annotations

import pickle
import signal
from multiprocessing.connection import Connection
from typing import Any

from django.core.management.base import BaseCommand, CommandParser
from django.db import connections

from monitoring.recorder_process import serve


class Command(BaseCommand):
    help = "Internal: write a runtime process's events to the database (started by that process)."
    requires_system_checks: list[str] = []  # started often (each runtime host); the parent ran the checks

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("fd", type=int, help="this process's end of the socket pair")

    def handle(self, *args: Any, **options: Any) -> None:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        conn = Connection(options["fd"])
        config = pickle.loads(conn.recv_bytes())
        database = connections["default"]
        database.close()
        database.settings_dict.update(config["database"])
        serve(conn, config)
