"""Roles' and capabilities' names and descriptions in the page's language (issue 32).

A role (``AgentRole``) and a capability card (``CapabilityCard``) are configuration: the
operator writes their name and description, in English (``display_name``/``name``,
``description``, ``responsibilities``) and, optionally, in Chinese (the ``*_zh`` fields; the
built-in team ships both, ``capabilities/builtin/*.yaml``). A page shows the text of its
language, and the English where the Chinese is blank. The runtime, the API's ``name`` and
``description`` fields, prompts and exports keep the English; the API also carries the
``*_zh`` fields to read and edit them.

Pages that hold a card or a role as a document (a dict from ``capabilities.registry``, or
only an id on a live fragment) ask ``role_name``/``card_text`` here: both read the
database at most every ``TTL_S`` seconds."""

from __future__ import annotations

import threading
import time
from typing import TypeVar

from django.apps import apps
from django.utils.translation import get_language

T = TypeVar("T")

TTL_S = 30.0

_lock = threading.Lock()
_cache: dict[str, tuple[float, dict[str, tuple[str, ...]]]] = {}


def chinese() -> bool:
    """Whether the active language is Chinese (``zh-hans``)."""
    return (get_language() or "").lower().startswith("zh")


def in_language(english: T, chinese_text: T) -> T:
    """``chinese_text`` on a Chinese page when it is set, else ``english``."""
    return chinese_text if chinese() and chinese_text else english


def _table(kind: str) -> dict[str, tuple[str, ...]]:
    """``id -> (english name, chinese name, english description, chinese description)`` of
    every role (``kind`` "role") or card ("card"), cached for ``TTL_S``."""
    loaded_at, rows = _cache.get(kind, (0.0, {}))
    if time.monotonic() - loaded_at < TTL_S and rows:
        return rows
    model, fields = (
        ("AgentRole", ("role", "display_name", "display_name_zh"))
        if kind == "role"
        else ("CapabilityCard", ("capability_id", "name", "name_zh"))
    )
    query = apps.get_model("capabilities", model).objects.values_list(*fields, "description", "description_zh")
    rows = {row[0]: tuple(row[1:]) for row in query}
    with _lock:
        _cache[kind] = (time.monotonic(), rows)
    return rows


def role_name(role: str, default: str = "") -> str:
    """The display name of ``role`` in the active language; ``default`` (or the slug) for
    an unknown one."""
    row = _table("role").get(role)
    return in_language(row[0], row[1]) if row else (default or role)


def role_description(role: str, default: str = "") -> str:
    """The description of ``role`` in the active language; ``default`` for an unknown one."""
    row = _table("role").get(role)
    return in_language(row[2], row[3]) if row else default


def card_text(capability_id: str, field: str, default: str = "") -> str:
    """A card's ``name`` or ``description`` in the active language; ``default`` for an
    unknown card. Raises ValueError for another ``field``."""
    if field not in ("name", "description"):
        raise ValueError(f"field must be name or description, not {field!r}")
    row = _table("card").get(capability_id)
    if row is None:
        return default
    return in_language(row[0], row[1]) if field == "name" else in_language(row[2], row[3])


def forget() -> None:
    """Drop the cache (after an edit, and in tests)."""
    with _lock:
        _cache.clear()
