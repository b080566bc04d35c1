"""Security headers and deployment switches: the Content-Security-Policy on every response
(teamclaw.middleware) and TEAMCLAW_SECURE for a deployment behind TLS (teamclaw.settings)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent


def directives(response) -> dict[str, str]:
    policy = response["Content-Security-Policy"]
    return {part.split(" ", 1)[0]: part.split(" ", 1)[1] for part in (p.strip() for p in policy.split(";"))}


@pytest.mark.parametrize("path", ["/", "/live/", "/login/", "/api/v1/roles", "/nowhere/"])
def test_every_response_carries_a_self_only_policy(page_client, builtin, path):
    found = directives(page_client.get(path))
    assert found["default-src"] == "'self'"
    assert found["script-src"] == "'self'"
    assert found["style-src"] == "'self'"
    assert found["object-src"] == "'none'"
    assert found["frame-ancestors"] == "'none'"
    assert found["connect-src"] == "'self' ws://testserver"  # sockets only to this site
    assert "unsafe" not in page_client.get(path)["Content-Security-Policy"]


def test_a_tls_request_allows_only_its_own_wss_socket(page_client, builtin):
    found = directives(page_client.get("/", secure=True))
    assert found["connect-src"] == "'self' wss://testserver"


def check_deploy(tmp_path, **extra: str) -> subprocess.Popen[str]:
    """``manage.py check --deploy`` started in its own process with ``extra`` in its
    environment (``communicate()`` gives its output); the runs of a test go side by side."""
    unsafe = {"DEBUG", "SECRET_KEY", "DJANGO_ALLOW_ASYNC_UNSAFE"}  # the browser tests set the last one
    env = {k: v for k, v in os.environ.items() if not k.startswith("TEAMCLAW_") and k not in unsafe}
    env.update({"TEAMCLAW_DATA_DIR": str(tmp_path), **extra})
    return subprocess.Popen(
        [sys.executable, "manage.py", "check", "--deploy"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


TLS_WARNINGS = ["security.W004", "security.W005", "security.W008", "security.W012", "security.W016"]
"""HSTS, HSTS for subdomains, SSL redirect, secure session cookie, secure CSRF cookie."""


def test_check_deploy_with_teamclaw_secure_reports_no_tls_warning(tmp_path):
    plain = check_deploy(tmp_path / "plain")
    secure = check_deploy(tmp_path / "secure", TEAMCLAW_SECURE="1", TEAMCLAW_HSTS_PRELOAD="1")
    plain_out, plain_err = plain.communicate(timeout=120)
    assert [w for w in TLS_WARNINGS if w in plain_err + plain_out] != []
    secure_out, secure_err = secure.communicate(timeout=120)
    assert secure.returncode == 0, secure_err
    assert "no issues" in secure_out, secure_out + secure_err


def test_teamclaw_secure_sets_the_tls_settings(tmp_path):
    script = (
        "import json; from django.conf import settings as s; "  # settings alone, no app loading
        "print(json.dumps([s.SECURE_SSL_REDIRECT, s.SESSION_COOKIE_SECURE, s.CSRF_COOKIE_SECURE, "
        "s.SECURE_HSTS_SECONDS, s.SECURE_HSTS_INCLUDE_SUBDOMAINS, s.SECURE_HSTS_PRELOAD, s.SECURE_PROXY_SSL_HEADER]))"
    )

    def read(**extra: str) -> list:
        env = {k: v for k, v in os.environ.items() if not k.startswith("TEAMCLAW_")}
        env.update({"TEAMCLAW_DATA_DIR": str(tmp_path), "DJANGO_SETTINGS_MODULE": "teamclaw.settings", **extra})
        result = subprocess.run(
            [sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
        )
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout)

    assert read() == [False, False, False, 0, False, False, None]
    assert read(TEAMCLAW_SECURE="1") == [True, True, True, 31_536_000, True, False, ["HTTP_X_FORWARDED_PROTO", "https"]]
    assert read(TEAMCLAW_SECURE="1", TEAMCLAW_HSTS_SECONDS="3600", TEAMCLAW_HSTS_PRELOAD="1")[3:6] == [3600, True, True]


def test_behind_a_tls_proxy_the_socket_origin_is_the_https_one(settings):
    from web.sockets.origins import origin_allowed

    settings.ALLOWED_HOSTS = ["teamclaw.example"]
    settings.CSRF_TRUSTED_ORIGINS = []
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    proxied = {
        "type": "websocket",
        "scheme": "ws",
        "headers": [
            (b"host", b"teamclaw.example"),
            (b"origin", b"https://teamclaw.example"),
            (b"x-forwarded-proto", b"https"),
        ],
    }
    assert origin_allowed(proxied)
    proxied["headers"] = proxied["headers"][:2]  # the proxy did not say TLS: another scheme
    assert not origin_allowed(proxied)
    settings.SECURE_PROXY_SSL_HEADER = None  # without the setting the header is not trusted
    proxied["headers"].append((b"x-forwarded-proto", b"https"))
    assert not origin_allowed(proxied)
