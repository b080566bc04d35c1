"""The login page says where the admin password really is (issue 17: it pointed to
data/admin_password, which does not exist when the password came from the environment)."""

from __future__ import annotations

import io

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client


@pytest.fixture
def data_dir(settings, tmp_path):
    settings.DATA_DIR = tmp_path
    return tmp_path


def hint() -> str:
    html = Client().get("/login/").content.decode()
    return html.split('id="admin-password-hint"')[1].split("</p>")[0]


def test_a_password_from_the_environment_is_named_as_such_and_no_file_is_claimed(db, data_dir, monkeypatch):
    get_user_model().objects.filter(username="admin").delete()
    assert 'data-source="no_admin"' in hint()
    monkeypatch.setenv("TEAMCLAW_ADMIN_PASSWORD", "from-the-environment")
    call_command("ensure_admin", stdout=io.StringIO())
    assert not (data_dir / "admin_password").exists()
    shown = hint()
    assert 'data-source="environment"' in shown
    assert "<code>TEAMCLAW_ADMIN_PASSWORD</code>" in shown and "no password file was written" in shown
    assert "admin_password</code>" not in shown
    assert "from-the-environment" not in shown  # never the password itself
    monkeypatch.delenv("TEAMCLAW_ADMIN_PASSWORD")
    unknown = hint()
    assert 'data-source="unknown"' in unknown and "does not exist" in unknown and "changepassword" in unknown


def test_a_generated_password_points_to_its_file(db, data_dir, monkeypatch):
    get_user_model().objects.filter(username="admin").delete()
    monkeypatch.delenv("TEAMCLAW_ADMIN_PASSWORD", raising=False)
    call_command("ensure_admin", stdout=io.StringIO())
    assert (data_dir / "admin_password").is_file()
    shown = hint()
    assert 'data-source="file"' in shown
    assert "<code>admin_password</code>" in shown or "admin_password</code>" in shown
