"""Role emoji and display names for the live pages (PRD §4.1 AgentRoleDefinition.emoji).

Read from the database at most every ``TTL_S`` seconds: fragments are rendered by the live
sink for every event, and a role's emoji rarely changes.
"""

from __future__ import annotations

import threading
import time

from django.utils.translation import gettext

from capabilities.models import AgentRole
from capabilities.names import in_language

OPERATOR_EMOJI = "🧑"
"""The operator (a message from ``user``: a task hand-over or a user instruction)."""

TTL_S = 30.0

_lock = threading.Lock()
_cache: tuple[float, dict[str, tuple[str, str, str]]] = (0.0, {})


def role_labels() -> dict[str, tuple[str, str]]:
    """``role -> (emoji, display name)`` for every role, plus ``user`` (the operator), all
    in the active language (a role's Chinese name where it has one, ``capabilities.names``)."""
    global _cache
    loaded_at, labels = _cache
    if not (time.monotonic() - loaded_at < TTL_S and labels):
        rows = AgentRole.objects.values_list("role", "emoji", "display_name", "display_name_zh")
        labels = {role: (emoji, name, name_zh) for role, emoji, name, name_zh in rows}
        with _lock:
            _cache = (time.monotonic(), labels)
    shown = {role: (emoji, in_language(name, name_zh)) for role, (emoji, name, name_zh) in labels.items()}
    return {**shown, "user": (OPERATOR_EMOJI, gettext("Operator"))}


def role_order() -> list[str]:
    """Roles in their display order (``user`` first), for graphs and filters."""

    return ["user", *AgentRole.objects.values_list("role", flat=True)]


def forget() -> None:
    """Drop the cache (tests that create roles)."""
    global _cache
    with _lock:
        _cache = (0.0, {})
