"""The operator's time zone: pages show dates and times in the browser's zone.

``static/teamclaw/timezone.js`` stores ``Intl.DateTimeFormat().resolvedOptions().timeZone``
(an IANA name such as ``Asia/Shanghai``) in the ``teamclaw_tz`` cookie on every page; this
middleware activates that zone for the request, so ``{{ value|date }}`` and friends render
in it. A missing, malformed or unknown name is ignored and ``settings.TIME_ZONE`` applies.
Stored times stay UTC (``USE_TZ``); only what is shown changes.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from inspect import iscoroutinefunction
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from django.utils import timezone
from django.utils.decorators import sync_and_async_middleware

TIME_ZONE_COOKIE = "teamclaw_tz"
"""The cookie ``timezone.js`` writes: the browser's IANA zone name."""

MAX_NAME_LENGTH = 64
"""Longest zone name accepted (the longest IANA name is 32 characters)."""


@lru_cache(maxsize=256)
def operator_time_zone(name: str) -> ZoneInfo | None:
    """The ``ZoneInfo`` for the IANA ``name``, or None when ``name`` is empty, too long,
    not a plain zone name (a path such as ``../x``) or unknown to ``zoneinfo``."""
    if not name or len(name) > MAX_NAME_LENGTH or name.startswith(("/", ".")) or ".." in name:
        return None
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        return None


def cookie_time_zone(cookies: Mapping[str, str]) -> ZoneInfo | None:
    """The zone the ``teamclaw_tz`` cookie among ``cookies`` (name -> value, as
    ``request.COOKIES``) names, or None when it is missing or refused (``operator_time_zone``).
    Pages (this middleware) and live sockets (``web.sockets.languages``) both ask it."""
    return operator_time_zone(cookies.get(TIME_ZONE_COOKIE, "").strip())


def activate_operator_time_zone(request: Any) -> None:
    """Activate the zone named by the request's ``teamclaw_tz`` cookie, else the default
    (``settings.TIME_ZONE``); ``request.operator_time_zone`` says which name applies."""
    zone = cookie_time_zone(request.COOKIES)
    if zone is None:
        timezone.deactivate()
        request.operator_time_zone = timezone.get_default_timezone_name()
    else:
        timezone.activate(zone)
        request.operator_time_zone = zone.key


@sync_and_async_middleware
def OperatorTimeZoneMiddleware(get_response: Any) -> Any:
    """Runs ``activate_operator_time_zone`` before every request; synchronous or
    asynchronous as the stack around it."""

    if iscoroutinefunction(get_response):

        async def middleware(request: Any) -> Any:
            activate_operator_time_zone(request)
            return await get_response(request)

    else:

        def middleware(request: Any) -> Any:  # type: ignore[misc]
            activate_operator_time_zone(request)
            return get_response(request)

    return middleware
