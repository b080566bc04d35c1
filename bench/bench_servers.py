"""What the process benchmarks share (``scale_bench``, ``sqlite_handles_bench``): a free port,
``manage.py`` in a given environment, and a data directory set up as ``make run`` sets one up
with a staff API token for the load."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def manage(env: dict[str, str], *args: str) -> str:
    """``python manage.py *args`` with ``env``; its stdout. Raises CalledProcessError."""
    return subprocess.run(
        [PYTHON, "manage.py", *args], cwd=ROOT, env=env, check=True, capture_output=True, text=True
    ).stdout


def prepared_token(env: dict[str, str]) -> str:
    """Migrate the database ``env`` names, load the built-in team, and return the API token
    of a new staff user ``bench``."""
    manage(env, "migrate", "--noinput", "-v0")
    manage(env, "load_builtin")
    printed = manage(
        env,
        "shell",
        "-c",
        "from django.contrib.auth.models import User; from rest_framework.authtoken.models import Token;"
        "u = User.objects.create_user('bench', is_staff=True); print(Token.objects.create(user=u).key)",
    )
    return printed.strip().splitlines()[-1]
