"""Template filters for the governance pages: config values and change keys for people."""

from __future__ import annotations

import json
from typing import Any

from django import template
from django.utils.translation import gettext, gettext_lazy

from teamclaw.labels import label

register = template.Library()

MODE_LABELS = {"allow": gettext_lazy("✅ allow"), "deny": gettext_lazy("❌ deny"), "confirm": gettext_lazy("⚠️ confirm")}


@register.filter
def config_value(value: Any) -> str:
    """``True`` -> ✅, ``False`` -> ❌, ``None`` -> "inherit (global)", modes with their PRD
    symbols, lists joined, anything else as compact JSON."""
    if value is True:
        return gettext("✅ allowed / on")
    if value is False:
        return gettext("❌ denied / off")
    if value is None:
        return gettext("inherit (global)")
    if isinstance(value, str):
        return str(MODE_LABELS.get(value, value))
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return ", ".join(value) or gettext("(none)")
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 200 else text[:197] + "..."


@register.filter
def change_label(key: str) -> str:
    """``invoke_matrix.coderA.dba`` -> ``invoke permission coderA → dba``; other keys read as
    paths, each part worded in the page's language where it is a word of the configuration
    (``teamclaw.labels`` "config"), ids as they are."""
    parts = key.split(".")
    if parts[0] == "invoke_matrix" and len(parts) == 3:
        return f"{label('permission', 'config')} {parts[1]} → {parts[2]}"
    if parts[0] == "tool_matrix" and len(parts) == 3:
        return f"{label('tool_binding', 'config')} {parts[1]} · {label(parts[2], 'tool')}"
    return " · ".join(label(part, "config") for part in parts)


@register.filter
def get_item(mapping: Any, key: Any) -> Any:
    """``mapping[key]`` or None."""
    try:
        return mapping.get(key)
    except AttributeError:
        return None


@register.filter
def coverage_asked(rows: Any) -> int:
    """How many questions an interview's coverage map (``[{category, asked, answered, ...}]``,
    ``teamclaw.workflows.clarify.coverage_map``) counts as asked over all its rows: 0 means
    nothing is covered yet, and the page says so above the map (whose rows say "not asked
    yet" instead of ``0 / 0``)."""
    try:
        return sum(int(row.get("asked") or 0) for row in rows)
    except (AttributeError, TypeError, ValueError):
        return 0
