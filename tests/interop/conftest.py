"""Fixtures of the protocol tests."""

from __future__ import annotations

import pytest
from rest_framework.authtoken.models import Token

from tests.processes import Server, process_env


@pytest.fixture
def server(builtin, staff_user, tmp_path):
    """A real daphne process on this test's database (tests/processes.py), with the built-in
    team and a staff API token; a test file may define its own ``server`` (other settings)."""
    running = Server(process_env(), tmp_path / "server.log", Token.objects.create(user=staff_user).key)
    try:
        yield running
    finally:
        running.stop()
