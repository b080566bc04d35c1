"""Debug replay of one execution context from what the recorder stored (PRD §4.6, US-08).

The timeline interleaves the context's snapshots (auto / error / manual, with their trigger:
``start``, ``before invoke X``, ``after invoke X``, ``user_instruction``, ``error``,
``manual``) and the messages its agent instance sent or received in that task, in the order
they happened. Stepping to any point shows the full context state at that point: the state
of the latest snapshot at or before it. Any two snapshots can be compared.

Works for any recorded context, including ones from before a server restart: it reads only
the database (docs/architecture.md §4).
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db.models import Q
from django.utils.translation import gettext, ngettext

from monitoring.live_items import from_epoch, message_summary
from monitoring.models import ExecutionContext, Message, Snapshot, full_state

MAX_TIMELINE = 5000
"""Timeline entries shown; a longer history is cut at this many (the page says so)."""

MESSAGE_FIELDS = (
    "id",
    "seq",
    "type",
    "from_role",
    "from_instance",
    "to_role",
    "to_instance",
    "capability_id",
    "status",
    "reason",
    "timestamp_ms",
    "task_id",
    "event_seq",
)


@dataclass(slots=True)
class Entry:
    """One point of the timeline: a snapshot or a message (``ref`` is its row, without payload)."""

    index: int
    kind: str
    at: datetime
    ref: Any

    @property
    def id(self) -> str:
        return self.ref.id

    @property
    def title(self) -> str:
        if self.kind == "snapshot":
            return self.ref.trigger
        return f"{self.ref.type} {self.ref.capability_id}".strip()


@dataclass(slots=True)
class Timeline:
    """The ordered entries of a context; ``truncated`` when more than MAX_TIMELINE exist."""

    context: ExecutionContext
    entries: list[Entry] = field(default_factory=list)
    snapshots: list[Snapshot] = field(default_factory=list)
    truncated: bool = False

    def __len__(self) -> int:
        return len(self.entries)

    @property
    def step_count(self) -> int:
        """How many steps the replay has: the one count the page's header and stepper show
        (steps are numbered 1..step_count on the page; ``?at=`` takes the 0-based index)."""
        return len(self.entries)

    def snapshot_before(self, index: int) -> Snapshot | None:
        """The latest snapshot at or before entry ``index``."""
        for entry in reversed(self.entries[: index + 1]):
            if entry.kind == "snapshot":
                return entry.ref
        return None

    def index_of(self, kind: str, object_id: str) -> int | None:
        for entry in self.entries:
            if entry.kind == kind and entry.id == object_id:
                return entry.index
        return None


def _ordered(keyed: list[tuple[Any, str, datetime, Any]]) -> list[tuple[Any, str, datetime, Any]]:
    """Order entries by their runtime events' emit order (``event_seq``: exact, even within a
    millisecond); entries recorded without one (manual snapshots taken from the database,
    rows from older versions) are merged in by time."""
    exact = sorted((k for k in keyed if k[3].event_seq is not None), key=lambda k: k[3].event_seq)
    loose = sorted((k for k in keyed if k[3].event_seq is None), key=lambda k: k[0])
    merged: list[tuple[Any, str, datetime, Any]] = []
    i = j = 0
    while i < len(exact) or j < len(loose):
        if j >= len(loose) or (i < len(exact) and exact[i][0] <= loose[j][0]):
            merged.append(exact[i])
            i += 1
        else:
            merged.append(loose[j])
            j += 1
    return merged


def context_messages(context: ExecutionContext) -> Any:
    """The messages the context's instance sent or received in its task, in send order."""
    return (
        Message.objects.filter(task_id=context.task_id)
        .filter(Q(from_instance=context.instance_id) | Q(to_instance=context.instance_id))
        .only(*MESSAGE_FIELDS)
        .order_by("seq")
    )


def build_timeline(context: ExecutionContext) -> Timeline:
    """Snapshots and messages of ``context`` in the order they happened (see module docstring)."""
    snapshots = list(context.snapshots.defer("stored_state").order_by("sequence", "created_at"))
    messages = list(context_messages(context)[: MAX_TIMELINE + 1])
    keyed: list[tuple[Any, str, datetime, Any]] = []
    for snap in snapshots:
        keyed.append(((snap.created_at.timestamp(), 1, snap.sequence), "snapshot", snap.created_at, snap))
    for message in messages[:MAX_TIMELINE]:
        at = from_epoch(message.timestamp_ms / 1000)
        assert at is not None
        keyed.append(((message.timestamp_ms / 1000, 0, message.seq), "message", at, message))
    keyed = _ordered(keyed)
    truncated = len(messages) > MAX_TIMELINE or len(keyed) > MAX_TIMELINE
    entries = [Entry(i, kind, at, ref) for i, (_, kind, at, ref) in enumerate(keyed[:MAX_TIMELINE])]
    return Timeline(context, entries, snapshots, truncated)


def clamp_index(raw: Any, timeline: Timeline) -> int:
    """A step index from the query string, clamped to the timeline (last step by default).
    Raises ValueError for something that is not a whole number."""
    if raw in (None, ""):
        return max(0, len(timeline) - 1)
    try:
        index = int(str(raw))
    except ValueError:
        raise ValueError(gettext("must be a step number (a whole number)")) from None
    return max(0, min(index, len(timeline) - 1))


def step_index(raw: Any, timeline: Timeline) -> int:
    """The 0-based index of step number ``raw`` (1..step_count, what the page shows and its
    jump box sends as ``?step=``), clamped to the timeline. Raises ValueError for something
    that is not a whole number."""
    try:
        number = int(str(raw))
    except ValueError:
        raise ValueError(gettext("must be a step number (a whole number)")) from None
    return max(0, min(number - 1, timeline.step_count - 1))


def step(timeline: Timeline, index: int) -> dict[str, Any]:
    """What the page shows at step ``index`` (0-based): the entry, the state at that point
    (from the latest snapshot at or before it) and, for a message, its full payload; its
    ``number`` (index + 1) of ``count`` (``Timeline.step_count``)."""
    if not timeline.entries:
        return {"entry": None, "snapshot": None, "state": None, "message": None, "index": 0, "number": 0, "count": 0}
    entry = timeline.entries[index]
    snapshot = timeline.snapshot_before(index)
    state = None
    if snapshot:
        state = full_state(Snapshot.objects.values_list("stored_state", flat=True).get(pk=snapshot.pk))
    message = None
    if entry.kind == "message":
        row = Message.objects.get(pk=entry.ref.pk)
        message = {
            "row": row,
            "summary": message_summary(row.type, row.payload),
            "payload": json.dumps(row.payload, indent=2, ensure_ascii=False, sort_keys=True, default=str),
        }
    return {
        "entry": entry,
        "snapshot": snapshot,
        "state": state,
        "message": message,
        "index": index,
        "previous": index - 1 if index > 0 else None,
        "next": index + 1 if index + 1 < len(timeline) else None,
        "last": len(timeline) - 1,
        "number": index + 1,
        "count": timeline.step_count,
    }


def _items(count: int) -> str:
    """ "3 items" in the active language: how long a list in a snapshot is."""
    return ngettext("%(count)s item", "%(count)s items", count) % {"count": count}


def _walk(before: Any, after: Any, path: str, out: list[dict[str, Any]]) -> None:
    if isinstance(before, dict) and isinstance(after, dict):
        for key in sorted(set(before) | set(after), key=str):
            _walk(before.get(key), after.get(key), f"{path}.{key}" if path else str(key), out)
        return
    if isinstance(before, list) and isinstance(after, list):
        if before != after:
            added = len(after) - len(before)
            out.append(
                {
                    "path": path,
                    "old": _items(len(before)),
                    "new": _items(len(after)),
                    "note": f"{added:+d}" if added else gettext("changed"),
                }
            )
        return
    if before != after:
        out.append({"path": path, "old": before, "new": after, "note": ""})


def state_changes(before: dict[str, Any], after: dict[str, Any]) -> list[dict[str, Any]]:
    """Field-by-field changes between two states: ``[{path, old, new, note}]`` (lists by length)."""
    out: list[dict[str, Any]] = []
    _walk(before, after, "", out)
    return [c for c in out if c["path"] not in ("updated_at",)]


def snapshot_diff(first: Snapshot, second: Snapshot) -> dict[str, Any]:
    """Compare two snapshots of one context: ``{first, second, changes, lines}`` where
    ``lines`` is a unified diff of their pretty-printed states as ``(kind, text)`` pairs,
    kind one of ``add``, ``del``, ``hunk``, ``ctx``."""
    a = json.dumps(first.state, indent=2, ensure_ascii=False, sort_keys=True, default=str).splitlines()
    b = json.dumps(second.state, indent=2, ensure_ascii=False, sort_keys=True, default=str).splitlines()
    lines = []
    for line in difflib.unified_diff(
        a, b, f"#{first.sequence} {first.trigger}", f"#{second.sequence} {second.trigger}", n=3, lineterm=""
    ):
        if line.startswith(("---", "+++")):
            continue
        kind = (
            "hunk" if line.startswith("@@") else "add" if line.startswith("+") else "del" if line[:1] == "-" else "ctx"
        )
        lines.append((kind, line))
    return {
        "first": first,
        "second": second,
        "changes": state_changes(first.state or {}, second.state or {}),
        "lines": lines,
    }
