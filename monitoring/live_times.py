"""Times in live fragments, in each viewer's time zone (issue 17; docs/architecture.md "Translations").

Every time a fragment template shows (``clock``, ``clock_zone``, ``short_time_zone``: the
``live_tags`` filters) is rendered as an element that carries the instant itself::

    <time datetime="2026-12-01T22:52:13.123456+00:00" data-format="clock" title="...">22:52:13.123</time>

``datetime`` is the instant in UTC (ISO 8601), ``data-format`` the name of its format in
``FORMATS``, and the text and ``title`` the instant in the active zone and language
(``teamclaw.time_zones``). A page or a socket's state frame renders under the operator's
zone, so its text is right at once. The live sink renders each pushed event once per
language, in the server's zone (``settings.TIME_ZONE``), for every reader at once (with Redis
those readers may be in other processes, in any zone); a socket whose operator is in another
zone passes each event's text through ``in_zone``, which formats every ``<time>`` element of
the fragment again from its ``datetime`` with the very functions the page uses. So a pushed
time reads exactly as the page shows it, in both languages (Django's month names included),
with no script and whatever the channel layer.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import UTC, datetime, tzinfo
from functools import lru_cache
from html import escape

from django.template.defaultfilters import date as date_filter
from django.utils import timezone, translation
from django.utils.safestring import SafeString, mark_safe

from monitoring.live_events import HTML_FIELD


def zone_name(zone: tzinfo) -> str:
    """The name a zone is shown by, as ``timezone.get_current_timezone_name`` gives it for the
    active one: a ``ZoneInfo``'s IANA key (``Asia/Shanghai``), ``UTC``."""
    return zone.tzname(None) or str(zone)


def _clock(value: datetime, zone: str) -> str:
    return value.strftime("%H:%M:%S.") + f"{value.microsecond // 1000:03d}"


def _clock_zone(value: datetime, zone: str) -> str:
    return f"{_clock(value, zone)} {zone}"


def _short_zone(value: datetime, zone: str) -> str:
    return f"{date_filter(value, 'MONTH_DAY_TIME_FORMAT')} {zone}"


def _moment_zone(value: datetime, zone: str) -> str:
    return f"{date_filter(value, 'MONTH_DAY_SECONDS_FORMAT')} {zone}"


FORMATS: dict[str, Callable[[datetime, str], str]] = {
    "clock": _clock,
    "clock_zone": _clock_zone,
    "short_zone": _short_zone,
    "moment_zone": _moment_zone,
}
"""How a time is worded, by the name ``data-format`` carries; each gets the instant already
in the zone it is shown in and that zone's name (``zone_name``), and words it in the active
language:

- ``clock``: ``HH:MM:SS.mmm`` (24 h; message-log rows, cards' times);
- ``clock_zone``: the clock, a space and the zone's IANA name (``12:00:00.000 Asia/Shanghai``);
- ``short_zone``: the language's ``MONTH_DAY_TIME_FORMAT`` (``teamclaw.formats``: ``Dec 1, 22:52``,
  ``12月1日 22:52``) and the zone;
- ``moment_zone``: the same to the second (``MONTH_DAY_SECONDS_FORMAT``: ``Dec 1, 22:52:13``,
  ``12月1日 22:52:13``) and the zone (the replay pages' step times)."""

WORDED_FORMATS = frozenset({"short_zone", "moment_zone"})
"""The formats whose text depends on the active language."""


def _element(value: datetime, time_format: str, zone: tzinfo) -> str:
    """The element for the aware ``value`` shown in ``zone`` (see ``time_element``); the
    ``title`` is ISO 8601 in that zone (what Django's ``date:"c"`` gives)."""
    local = value.astimezone(zone)
    text = FORMATS[time_format](local, zone_name(zone))
    instant = value.astimezone(UTC).isoformat()
    return f'<time datetime="{instant}" data-format="{time_format}" title="{local.isoformat()}">{escape(text)}</time>'


def time_element(value: datetime | None, time_format: str = "clock") -> SafeString:
    """The ``<time>`` element of the module docstring for ``value`` in the active zone and
    language; '' for None. A naive datetime (never one of the live items, which hold aware
    UTC times) is worded as it is, without ``datetime``, so nothing rewords it. Raises
    KeyError for a format not in ``FORMATS``."""
    if value is None:
        return mark_safe("")
    if timezone.is_naive(value):
        text = FORMATS[time_format](value, timezone.get_current_timezone_name())
        return mark_safe(f'<time data-format="{time_format}">{escape(text)}</time>')
    return mark_safe(_element(value, time_format, timezone.get_current_timezone()))


_ESCAPED_ELEMENT = re.compile(
    r'<time datetime=\\"(?P<instant>[0-9T:.+\-]{10,40})\\" data-format=\\"(?P<format>\w+)\\"[^<>]*>[^<>]*</time>'
)
"""A time element as it reads inside a JSON string (its quotes escaped)."""


def _rewording(zone: tzinfo) -> Callable[[re.Match[str]], str]:
    def reworded(match: re.Match[str]) -> str:
        """The JSON-escaped element of ``match`` rendered again in ``zone`` (the active
        language), or the match unchanged when its instant or format is not one
        ``time_element`` writes."""
        time_format = match["format"]
        if time_format not in FORMATS:
            return match[0]
        try:
            instant = datetime.fromisoformat(match["instant"])
            if instant.tzinfo is None:
                return match[0]
            element = _element(instant, time_format, zone)
        except (ValueError, OverflowError):
            return match[0]
        return json.dumps(element, ensure_ascii=False)[1:-1]

    return reworded


@lru_cache(maxsize=4096)
def in_zone(text: str, zone: tzinfo, language: str) -> str:
    """A live payload's JSON ``text`` (``live_events.LiveEvent.texts``) with every time element
    of its fragment worded in ``zone`` (a ``zoneinfo.ZoneInfo``) and ``language`` (a code of
    ``settings.LANGUAGES``), as a page in that zone and language shows it. Text without time
    elements comes back as it is (the same object); so does an element this module did not
    write. Never raises on what the text holds.

    Each socket of a zone calls this for each event it sends; the result is kept for the
    last 4,096 (text, zone, language), so sockets sharing a zone (the in-memory layer hands
    them the same text) reword an event once, even a few seconds apart."""
    start = text.rfind(HTML_FIELD)
    if start < 0 or "<time datetime=" not in text[start:]:
        return text
    fragment = text[start:]
    if any(f'data-format=\\"{name}\\"' in fragment for name in WORDED_FORMATS):
        with translation.override(language):
            return text[:start] + _ESCAPED_ELEMENT.sub(_rewording(zone), fragment)
    return text[:start] + _ESCAPED_ELEMENT.sub(_rewording(zone), fragment)
