"""Where the ``admin`` user's first password came from, so the login page says what is true
(issue 17: it pointed to ``data/admin_password`` when the password came from the environment
and no such file exists). ``manage.py ensure_admin`` writes the file; this module only reads.
"""

from __future__ import annotations

import os
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model

ENVIRONMENT_VARIABLE = "TEAMCLAW_ADMIN_PASSWORD"
"""The variable ``ensure_admin`` takes the password from when it is set."""


def admin_password_file() -> Path:
    """``<data>/admin_password``: where ``ensure_admin`` keeps a generated password (mode 600)."""
    return Path(settings.DATA_DIR) / "admin_password"


def shown_path(path: Path) -> str:
    """``path`` relative to the project folder when it is inside it (``data/admin_password``),
    else its name only: the login page is public and names no server folder."""
    try:
        return str(path.resolve().relative_to(Path(settings.BASE_DIR).resolve()))
    except ValueError:
        return path.name


def admin_password_source() -> str:
    """Where the admin's password can be found: ``no_admin`` (no ``admin`` user yet),
    ``file`` (a generated password is kept in ``admin_password_file()``), ``environment``
    (no file, and ``TEAMCLAW_ADMIN_PASSWORD`` is set: it was most likely taken from there) or
    ``unknown`` (no file and no variable: the password was set some other way, or the file
    was removed)."""
    if not get_user_model().objects.filter(username="admin").exists():
        return "no_admin"
    if admin_password_file().is_file():
        return "file"
    if os.environ.get(ENVIRONMENT_VARIABLE, "").strip():
        return "environment"
    return "unknown"
