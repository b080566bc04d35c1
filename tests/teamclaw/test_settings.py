"""Settings come from the environment; a bad value is a clear start-up error."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from teamclaw.env import env_bool, env_int, env_list, env_time_zone, env_url, persistent_secret

ROOT = Path(__file__).resolve().parent.parent.parent


def test_env_bool_accepts_the_usual_spellings_and_refuses_others(monkeypatch):
    for raw, expected in [("1", True), ("yes", True), ("On", True), ("0", False), ("false", False), ("", False)]:
        monkeypatch.setenv("X_FLAG", raw)
        assert env_bool("X_FLAG") is expected
    monkeypatch.setenv("X_FLAG", "maybe")
    with pytest.raises(ImproperlyConfigured, match="X_FLAG"):
        env_bool("X_FLAG")


def test_env_int_checks_type_and_bounds(monkeypatch):
    monkeypatch.setenv("X_N", "12")
    assert env_int("X_N", 1, minimum=1, maximum=20) == 12
    monkeypatch.setenv("X_N", "twelve")
    with pytest.raises(ImproperlyConfigured, match="not an integer"):
        env_int("X_N", 1)
    monkeypatch.setenv("X_N", "0")
    with pytest.raises(ImproperlyConfigured, match="below the minimum"):
        env_int("X_N", 1, minimum=1)


def test_env_list_and_url(monkeypatch):
    monkeypatch.setenv("X_HOSTS", " a.example , ,b.example")
    assert env_list("X_HOSTS", []) == ["a.example", "b.example"]
    monkeypatch.setenv("X_DB", "mysql://x/y")
    with pytest.raises(ImproperlyConfigured, match="X_DB must start with one of"):
        env_url("X_DB", {"postgres", "sqlite"})


def test_env_time_zone_takes_iana_names_only(monkeypatch):
    assert env_time_zone("X_TZ", "UTC") == "UTC"
    monkeypatch.setenv("X_TZ", "Asia/Shanghai")
    assert env_time_zone("X_TZ", "UTC") == "Asia/Shanghai"
    for bad in ("Asia/Nowhere", "../etc/passwd"):
        monkeypatch.setenv("X_TZ", bad)
        with pytest.raises(ImproperlyConfigured, match="X_TZ"):
            env_time_zone("X_TZ", "UTC")


def test_secret_is_generated_once_with_mode_600(tmp_path):
    path = tmp_path / "secret"
    first = persistent_secret(path)
    assert persistent_secret(path) == first
    assert oct(path.stat().st_mode & 0o777) == "0o600"


def test_a_secret_another_process_wrote_first_is_kept_not_replaced(tmp_path, monkeypatch):
    """Two processes start at once (pytest-xdist's workers, a server and a worker): both find
    no secret, the other one writes its secret first; this one returns that secret and leaves
    the file as it is, so both sign with the same key. Before, it overwrote the file."""
    path = tmp_path / "secret"
    path.write_text("written-by-the-other-process\n")
    real_exists = Path.exists
    monkeypatch.setattr(Path, "exists", lambda self: False if self == path else real_exists(self))
    assert persistent_secret(path) == "written-by-the-other-process"
    assert path.read_text() == "written-by-the-other-process\n"
    assert [p.name for p in tmp_path.iterdir()] == ["secret"]  # no file of its own left behind


def test_an_empty_secret_file_is_replaced_by_a_generated_secret(tmp_path):
    path = tmp_path / "secret"
    path.write_text("")
    value = persistent_secret(path)
    assert len(value) > 40 and path.read_text() == value + "\n"
    assert oct(path.stat().st_mode & 0o777) == "0o600"


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("DEBUG", "perhaps", "DEBUG"),
        ("DATABASE_URL", "oracle://db", "DATABASE_URL"),
        ("REDIS_URL", "http://x", "REDIS_URL"),
        ("TEAMCLAW_MAILBOX_CAPACITY", "0", "TEAMCLAW_MAILBOX_CAPACITY"),
        ("OPENAI_BASE_URL", "http://user:pw@127.0.0.1:8080/v1", "must not carry a user or password"),
        ("TEAMCLAW_LANGUAGE_CODE", "fr", "TEAMCLAW_LANGUAGE_CODE"),
        ("TEAMCLAW_TIME_ZONE", "Mars/Olympus_Mons", "not a known IANA time zone"),
        ("TEAMCLAW_INSTANCE_LIMIT_PER_PROJECT", "shop, Not A Slug!", "TEAMCLAW_INSTANCE_LIMIT_PER_PROJECT"),
        ("TEAMCLAW_INSTANCE_LIMIT_PER_PROJECT", "shop;hr", "is not a project slug"),
        ("TEAMCLAW_INSTANCE_LIMIT_PER_PROJECT", "s" * 65, "is not a project slug"),
    ],
)
def test_a_bad_value_stops_start_up_with_its_name(tmp_path, name, value, message):
    env = {**os.environ, name: value, "TEAMCLAW_DATA_DIR": str(tmp_path)}
    result = subprocess.run(
        [sys.executable, "manage.py", "check"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode != 0
    assert message in result.stderr


def test_defaults_are_safe(tmp_path):
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in {"DEBUG", "ALLOWED_HOSTS", "REDIS_URL", "DATABASE_URL", "SECRET_KEY"}
    }
    env["TEAMCLAW_DATA_DIR"] = str(tmp_path)
    script = (
        "import django, json; django.setup(); from django.conf import settings as s; "
        "print(json.dumps([s.DEBUG, s.ALLOWED_HOSTS, s.CHANNEL_LAYERS['default']['BACKEND'], "
        "s.DATABASES['default']['ENGINE'], str(s.DATABASES['default']['NAME'])]))"
    )
    result = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        env={**env, "DJANGO_SETTINGS_MODULE": "teamclaw.settings"},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    debug, hosts, layer, engine, name = json.loads(result.stdout)
    assert debug is False
    assert hosts == ["localhost", "127.0.0.1"]
    assert layer.endswith("InMemoryChannelLayer")
    assert engine.endswith("sqlite3")
    assert name == str(tmp_path / "teamclaw.sqlite3")
    assert (tmp_path / "secret_key").stat().st_mode & 0o777 == 0o600


def test_a_start_up_error_never_repeats_a_password(tmp_path):
    env = {
        **os.environ,
        "OPENAI_BASE_URL": "http://user:secret-pw@127.0.0.1:8080/v1",
        "TEAMCLAW_DATA_DIR": str(tmp_path),
    }
    result = subprocess.run(
        [sys.executable, "manage.py", "check"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode != 0
    assert "secret-pw" not in result.stderr + result.stdout
