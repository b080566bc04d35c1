"""The replay's sequence diagram: invokes and hooks between agent instances (US-08).

Laid out here, drawn server-side as SVG by ``monitoring/_sequence.html``: one lifeline per
instance (the operator and role-only parties by role), one arrow per message in send order,
each arrow a link to its step of the replay. Positions are pixels.
"""

from __future__ import annotations

from typing import Any

from monitoring.replay import Timeline
from monitoring.role_labels import role_labels

SEQUENCE_TYPES = frozenset(
    {"invoke_request", "invoke_response", "invoke_error", "hook_event", "hook_ack", "status_update", "context_sync"}
)
MAX_ARROWS = 300
COLUMN = 170
ROW = 30
TOP = 64
LEFT = 90


def _party(role: str, instance: str) -> str:
    return instance or role or "?"


def sequence_diagram(timeline: Timeline, current: int | None = None) -> dict[str, Any]:
    """``{width, height, lifelines, arrows, truncated}`` for the context's message entries."""
    labels = role_labels()
    messages = [e for e in timeline.entries if e.kind == "message" and e.ref.type in SEQUENCE_TYPES]
    truncated = len(messages) > MAX_ARROWS
    messages = messages[:MAX_ARROWS]
    columns: dict[str, dict[str, Any]] = {}

    def column(role: str, instance: str) -> dict[str, Any]:
        key = _party(role, instance)
        if key not in columns:
            emoji, _ = labels.get(role, ("", role))
            columns[key] = {
                "key": key,
                "role": role or "?",
                "instance": instance,
                "emoji": emoji,
                "x": LEFT + COLUMN * len(columns),
                "mine": instance == timeline.context.instance_id,
            }
        return columns[key]

    column(timeline.context.role, timeline.context.instance_id)
    arrows = []
    for row, entry in enumerate(messages):
        m = entry.ref
        source, target = column(m.from_role, m.from_instance), column(m.to_role, m.to_instance)
        y = TOP + 24 + row * ROW
        kind = "hook" if m.type in ("hook_event", "hook_ack", "status_update") else "invoke"
        if m.type in ("invoke_response", "invoke_error", "hook_ack", "status_update"):
            kind += " reply"
        if m.status in ("denied", "dropped", "expired") or m.type == "invoke_error":
            kind += " failed"
        arrows.append(
            {
                "index": entry.index,
                "x1": source["x"],
                "x2": target["x"],
                "y": y,
                "self": source is target,
                "label": f"{m.type} {m.capability_id}".strip()[:48],
                "status": m.status,
                "kind": kind,
                "current": entry.index == current,
                "lx": (source["x"] + target["x"]) / 2 if source is not target else source["x"] + 34,
            }
        )
    width = LEFT + COLUMN * max(1, len(columns)) - COLUMN // 2 + 40
    height = TOP + 48 + ROW * max(1, len(arrows))
    return {
        "width": width,
        "height": height,
        "lifelines": list(columns.values()),
        "arrows": arrows,
        "truncated": truncated,
        "line_bottom": height - 10,
    }
