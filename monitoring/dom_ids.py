"""Element ids of the live pages, made here and nowhere else (docs/architecture.md §7).

A live thing (context card, message row, confirmation, snapshot, alert, config change, task
chip, artifact) has the same element id on every page that shows it, and a live payload's
``swap`` names that id, or the container to insert into when the page does not show it yet.
Templates get both through ``monitoring.templatetags.live_tags`` (the ``dom_id`` filter and the
``container_id`` tag); ``monitoring.live_events`` and ``monitoring.live_state`` call the
functions below; the page script only ever reads the ids a payload names.
"""

from __future__ import annotations

from typing import Any

CONTAINERS: dict[str, str] = {
    "context": "context-cards",
    "message": "message-log-rows",
    "confirmation": "confirmations",
    "alert": "alerts",
    "config_change": "config-changes",
    "task": "live-tasks",
    "artifact": "artifacts",
    "graph": "call-graph-box",
    "task_header": "task-header",
    "outcome": "task-outcome",
}
"""Live kind (or page region) -> the id of the element that holds it on a page."""

SNAPSHOT_CONTAINER = "snapshots-{context_id}"
"""A context's snapshot list (in the inspector), one per context."""


def dom_id(kind: str, item: dict[str, Any]) -> str:
    """The element id of the live thing ``item`` (a ``monitoring.live_items`` dict) of ``kind``
    (one of ``monitoring.live_events.LIVE_KINDS``). Raises KeyError for an unknown kind."""
    if kind == "alert":
        return f"alert-{item['key']}"
    if kind == "config_change":
        return f"config-v{item['new_version']}"
    if kind == "artifact":
        return f"artifact-{item['task_id']}-{item['name']}"
    return f"{ITEM_PREFIXES[kind]}-{item['id']}"


ITEM_PREFIXES: dict[str, str] = {
    "context": "ctx",
    "message": "msg",
    "confirmation": "confirmation",
    "snapshot": "snap",
    "task": "task",
}
"""Kinds whose element id is a prefix and the thing's own id."""


def container_id(kind: str, context_id: str = "") -> str:
    """The id of the element that holds things of ``kind``; a snapshot's container is its
    context's (``context_id``). Raises KeyError for an unknown kind."""
    if kind == "snapshot":
        return SNAPSHOT_CONTAINER.format(context_id=context_id)
    return CONTAINERS[kind]
