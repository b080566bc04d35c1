"""Websockets accept exactly the page's own origin (scheme + host + port, the host one of
ALLOWED_HOSTS) or one listed in CSRF_TRUSTED_ORIGINS; another port or scheme of the same host
is refused (web.sockets.origins)."""

from __future__ import annotations

import pytest

from tests.live_helpers import close, open_socket
from web.sockets.origins import origin_allowed


def scope(origin: str | None, host: str | None = "localhost:8000", scheme: str = "ws") -> dict:
    headers = []
    if origin is not None:
        headers.append((b"origin", origin.encode()))
    if host is not None:
        headers.append((b"host", host.encode()))
    return {"type": "websocket", "scheme": scheme, "headers": headers}


@pytest.mark.parametrize(
    ("origin", "host", "scheme"),
    [
        ("http://localhost:8000", "localhost:8000", "ws"),
        ("HTTP://LocalHost:8000", "localhost:8000", "ws"),
        ("https://localhost", "localhost", "wss"),
        ("https://localhost:443", "localhost", "wss"),
        ("http://127.0.0.1:8000", "127.0.0.1:8000", "ws"),
    ],
)
def test_the_pages_own_origin_is_accepted(settings, origin, host, scheme):
    settings.ALLOWED_HOSTS = ["localhost", "127.0.0.1"]
    assert origin_allowed(scope(origin, host, scheme))


@pytest.mark.parametrize(
    ("origin", "host", "scheme"),
    [
        ("http://localhost:8001", "localhost:8000", "ws"),  # another port
        ("http://localhost", "localhost:8000", "ws"),  # the default port is another port
        ("https://localhost:8000", "localhost:8000", "ws"),  # another scheme
        ("http://localhost", "localhost", "wss"),  # a plain page opening a TLS socket
        ("http://evil.example:8000", "localhost:8000", "ws"),
        ("http://evil.example", "evil.example", "ws"),  # a host not in ALLOWED_HOSTS
        ("null", "localhost:8000", "ws"),
        (None, "localhost:8000", "ws"),
        ("http://localhost:8000", None, "ws"),
        ("http://localhost:8000/path", "localhost:8000", "ws"),
        ("http://user@localhost:8000", "localhost:8000", "ws"),
    ],
)
def test_other_origins_are_refused(settings, origin, host, scheme):
    settings.ALLOWED_HOSTS = ["localhost", "127.0.0.1"]
    settings.CSRF_TRUSTED_ORIGINS = []
    assert not origin_allowed(scope(origin, host, scheme))


def test_a_trusted_origin_behind_a_proxy_is_accepted_exactly(settings):
    settings.ALLOWED_HOSTS = ["teamclaw.example"]
    settings.CSRF_TRUSTED_ORIGINS = ["https://teamclaw.example"]
    assert origin_allowed(scope("https://teamclaw.example", "teamclaw.example", "ws"))
    assert not origin_allowed(scope("https://teamclaw.example:8443", "teamclaw.example", "ws"))


async def test_a_socket_from_another_port_of_the_same_host_is_refused(runtime_host, staff_user):
    other_port = (b"origin", b"http://localhost:8001")
    _, connected, _ = await open_socket("/ws/live/", staff_user, origin=other_port)
    assert not connected
    communicator, connected, _ = await open_socket("/ws/live/", staff_user)
    assert connected
    await close(communicator)
