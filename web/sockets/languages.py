"""The language and time zone a live socket shows its fragments in (docs/architecture.md
"Translations").

A page's language comes from ``LocaleMiddleware``; a websocket has no request, but its
handshake carries the same cookie and header a page request does. ``socket_language`` hands
them to Django's own choice (``translation.get_language_from_request``), so a socket and
the page that opened it always agree: the ``django_language`` cookie the language switcher
sets (Django 4+ keeps the choice in that cookie only, not in the session), then
``Accept-Language``, then ``LANGUAGE_CODE``. Its time zone is the ``teamclaw_tz`` cookie's,
as ``teamclaw.time_zones.OperatorTimeZoneMiddleware`` takes it for a page.
"""

from __future__ import annotations

from typing import Any
from zoneinfo import ZoneInfo

from django.conf import settings
from django.http import HttpRequest
from django.http.cookie import parse_cookie
from django.utils import translation

from teamclaw.time_zones import cookie_time_zone


def _header(scope: dict[str, Any], name: bytes) -> str:
    """Every value of header ``name`` (lower-case bytes) in an ASGI scope, joined by commas
    as HTTP allows for repeated list headers; '' when absent."""
    return ",".join(value.decode("latin-1") for key, value in scope.get("headers", ()) if key.lower() == name)


def _handshake(scope: dict[str, Any]) -> HttpRequest:
    """A request carrying the ``Cookie`` and ``Accept-Language`` headers of the handshake."""
    handshake = HttpRequest()
    handshake.COOKIES = parse_cookie(_header(scope, b"cookie"))
    handshake.META["HTTP_ACCEPT_LANGUAGE"] = _header(scope, b"accept-language")
    return handshake


def socket_language(scope: dict[str, Any]) -> str:
    """The language code (one of ``settings.LANGUAGES``, e.g. ``"zh-hans"``) for the socket
    of ASGI ``scope``: what ``LocaleMiddleware`` would choose for a page request carrying the
    handshake's ``Cookie`` and ``Accept-Language`` headers. Unknown or malformed values fall
    through to the next source, never raise; the last resort is ``LANGUAGE_CODE``."""
    language = translation.get_language_from_request(_handshake(scope))
    try:  # the cookie may spell a code in another case (``zh-Hans``), which pages show too
        variant = translation.get_supported_language_variant(language)
    except LookupError:
        return settings.LANGUAGE_CODE
    canonical = {code.lower(): code for code, _name in settings.LANGUAGES}
    return canonical.get(variant.lower(), settings.LANGUAGE_CODE)


def socket_time_zone(scope: dict[str, Any]) -> ZoneInfo | None:
    """The operator's zone for the socket of ASGI ``scope``: the one its handshake's
    ``teamclaw_tz`` cookie names (``static/teamclaw/timezone.js`` wrote it on the page that
    opened the socket), or None (``settings.TIME_ZONE`` applies) when it is missing, unknown
    or malformed. Never raises."""
    return cookie_time_zone(parse_cookie(_header(scope, b"cookie")))
