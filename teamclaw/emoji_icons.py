"""Emoji shown as local pictures (issue 32: a browser without an emoji font draws 🦀 and the
roles' icons as empty boxes): the rows of ``emoji_icons.yaml`` beside this file map an emoji
to an SVG under ``static/teamclaw/emoji/`` and to its alt text (English; the Chinese is the
catalog's). ``emoji_icon`` gives the ``<img>``, or the emoji as escaped text when no row
names it (an operator's own emoji). No CDN: the files are served with the other statics."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import yaml
from django.templatetags.static import static
from django.utils.html import escape, format_html
from django.utils.safestring import SafeString
from django.utils.translation import gettext

ROWS = Path(__file__).with_name("emoji_icons.yaml")


@cache
def icons() -> dict[str, tuple[str, str]]:
    """``{emoji: (file, English alt)}`` from ``emoji_icons.yaml``; a row without its emoji
    selector (U+FE0F) is found too."""
    rows = yaml.safe_load(ROWS.read_text("utf-8"))
    found = {}
    for row in rows:
        found[row["emoji"]] = (row["file"], row["alt"])
        found[row["emoji"].replace("\ufe0f", "")] = (row["file"], row["alt"])
    return found


def emoji_icon(text: object, css: str = "emoji-icon") -> SafeString:
    """``<img src=… alt=…>`` for an emoji ``emoji_icons.yaml`` lists (alt in the active
    language), else ``text`` escaped; '' for None or ''."""
    value = str(text or "").strip()
    row = icons().get(value) or icons().get(value.replace("\ufe0f", ""))
    if row is None:
        return escape(value)
    return format_html(
        '<img class="{}" src="{}" alt="{}" width="18" height="18">',
        css,
        static(f"teamclaw/emoji/{row[0]}"),
        gettext(row[1]),
    )
