"""Which page may open a websocket: exactly the origin the socket itself is served from
(scheme + host + port, from the request's ``Host`` header and ``ws``/``wss``, the host one of
``ALLOWED_HOSTS``), or an origin listed in ``CSRF_TRUSTED_ORIGINS`` (compared whole, for a
TLS proxy in front; with TEAMCLAW_SECURE the proxy's ``X-Forwarded-Proto: https`` makes the
socket's own origin the ``https`` one). Another port or scheme of the same host is another origin and is refused
(docs/architecture.md §9); so is a missing or ``null`` origin.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from channels.security.websocket import WebsocketDenier
from django.conf import settings
from django.http.request import split_domain_port, validate_host

DEFAULT_PORTS = {"http": 80, "https": 443}


def _origin_tuple(url: str) -> tuple[str, str, int] | None:
    """``(scheme, host, port)`` of a bare origin (``scheme://host[:port]``), else None."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS or not parts.hostname or parts.username is not None or parts.password is not None:
        return None
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        return None
    return scheme, parts.hostname.lower(), port or DEFAULT_PORTS[scheme]


def origin_allowed(scope: dict[str, Any]) -> bool:
    """Whether the websocket ``scope``'s ``Origin`` is one this site accepts (module docstring)."""
    headers = {name.lower(): value for name, value in scope.get("headers", [])}
    origin = _origin_tuple(headers.get(b"origin", b"").decode("latin-1"))
    if origin is None:
        return False
    trusted = {t for t in map(_origin_tuple, settings.CSRF_TRUSTED_ORIGINS) if t is not None}
    if origin in trusted:
        return True
    host = headers.get(b"host", b"").decode("latin-1")
    domain, _port = split_domain_port(host)
    if not domain or not validate_host(domain, settings.ALLOWED_HOSTS):
        return False
    scheme = "https" if scope.get("scheme") == "wss" or _proxied_tls(headers) else "http"
    return origin == _origin_tuple(f"{scheme}://{host}")


def _proxied_tls(headers: dict[bytes, bytes]) -> bool:
    """Whether a TLS proxy in front says the socket came over TLS, through the header
    ``SECURE_PROXY_SSL_HEADER`` names (trusted only when it is set: TEAMCLAW_SECURE)."""
    proxy_header = getattr(settings, "SECURE_PROXY_SSL_HEADER", None)
    if not proxy_header:
        return False
    name, value = proxy_header
    wire_name = name.removeprefix("HTTP_").replace("_", "-").lower().encode("latin-1")
    return headers.get(wire_name, b"").decode("latin-1").split(",")[0].strip() == value


class ExactOriginValidator:
    """ASGI middleware: a websocket whose origin is not accepted (``origin_allowed``) is
    denied before the consumer runs (403 on the handshake)."""

    def __init__(self, application: Any) -> None:
        self.application = application

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        if scope["type"] == "websocket" and not origin_allowed(scope):
            denier = WebsocketDenier()
            return await denier(scope, receive, send)
        return await self.application(scope, receive, send)
