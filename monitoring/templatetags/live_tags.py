"""Template filters of the live viewer, replay and token statistics pages."""

from __future__ import annotations

import json
from datetime import datetime

from django import template

from monitoring.role_labels import role_labels

register = template.Library()


@register.filter
def role_emoji(role: str) -> str:
    """The role's emoji (PRD §4.1), or an empty string for an unknown role."""
    return role_labels().get(role or "", ("", ""))[0]


@register.filter
def role_name(role: str) -> str:
    """The role's display name, or the slug itself when unknown."""
    return role_labels().get(role or "", ("", role))[1] or role


@register.filter
def short_id(value: str, length: int = 8) -> str:
    """The first ``length`` characters of an id (the full id goes in a title attribute)."""
    return str(value or "")[: int(length)]


@register.filter
def clock(value: datetime | None) -> str:
    """``HH:MM:SS.mmm`` (UTC) of a datetime, for message-log rows."""
    if value is None:
        return ""
    return value.strftime("%H:%M:%S.") + f"{value.microsecond // 1000:03d}"


@register.filter
def thousands(value: int | None) -> str:
    """An integer with thousands separators (token counts)."""
    try:
        return f"{int(value or 0):,}"
    except (TypeError, ValueError):
        return str(value)


@register.filter
def pretty_json(value: object) -> str:
    """Indented JSON (autoescaped by the template like any string)."""
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True, default=str)
