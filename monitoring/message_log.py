"""The communication log: recorded AgentMessages, newest first, filtered and paginated (US-04).

Pages are keyset-paginated on the message's send order (``seq``): ``before=<seq>`` gives the
next older page, so page 2,000 costs what page 1 does (an index range scan, never an
``OFFSET``). Filters use the indexes on ``(task_id, seq)``, ``(type, seq)``,
``(from_role, seq)`` and ``(to_role, seq)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db.models import Q, QuerySet

from monitoring.access import sees_every_task, visible_tasks
from monitoring.live_filters import LiveFilters
from monitoring.live_items import message_item_from_row
from monitoring.models import Message

PAGE_SIZE = 50
MAX_PAGE_SIZE = 200

ROW_FIELDS = (
    "id",
    "seq",
    "type",
    "from_role",
    "from_instance",
    "to_role",
    "to_instance",
    "capability_id",
    "task_id",
    "project_id",
    "priority",
    "status",
    "reason",
    "timestamp_ms",
    "payload",
)


def visible_messages(user: Any) -> QuerySet[Message]:
    """The messages of the tasks ``user`` may see (``monitoring.access``)."""
    if sees_every_task(user):
        return Message.objects.all()
    return Message.objects.filter(task_id__in=visible_tasks(user).values("id"))


def filtered_messages(user: Any, filters: LiveFilters) -> QuerySet[Message]:
    """Visible messages passing ``filters`` (role: sender or receiver)."""
    queryset = visible_messages(user)
    if filters.task:
        queryset = queryset.filter(task_id=filters.task)
    if filters.project:
        queryset = queryset.filter(project_id=filters.project)
    if filters.type:
        queryset = queryset.filter(type=filters.type)
    if filters.role:
        queryset = queryset.filter(Q(from_role=filters.role) | Q(to_role=filters.role))
    return queryset


@dataclass(slots=True)
class MessagePage:
    """One page of the log: ``rows`` (live_items message dicts, newest first) and the
    ``before`` cursor of the next older page (None on the last page)."""

    rows: list[dict[str, Any]]
    older: int | None
    before: int | None

    @property
    def is_newest(self) -> bool:
        return self.before is None


def message_page(user: Any, filters: LiveFilters, before: int | None = None, size: int = PAGE_SIZE) -> MessagePage:
    """The page of messages older than ``before`` (newest when None). ``size`` rows, 1-200."""
    size = max(1, min(MAX_PAGE_SIZE, int(size)))
    if filters.role:
        # "sender or receiver" as two index range scans merged here: an OR would make the
        # database gather and sort every message of the role before taking one page.
        rest = LiveFilters(type=filters.type, task=filters.task, project=filters.project)
        base = _page_query(filtered_messages(user, rest), before)
        sent = list(base.filter(from_role=filters.role)[: size + 1])
        received = list(base.filter(to_role=filters.role).exclude(from_role=filters.role)[: size + 1])
        rows = sorted(sent + received, key=lambda r: r.seq, reverse=True)[: size + 1]
    else:
        rows = list(_page_query(filtered_messages(user, filters), before)[: size + 1])
    older = rows[size - 1].seq if len(rows) > size else None
    return MessagePage([message_item_from_row(r) for r in rows[:size]], older, before)


def _page_query(queryset: QuerySet[Message], before: int | None) -> QuerySet[Message]:
    queryset = queryset.only(*ROW_FIELDS).order_by("-seq")
    return queryset.filter(seq__lt=before) if before is not None else queryset


def parse_before(raw: str | None) -> int | None:
    """The ``before`` cursor: a positive integer, or None. Raises ValueError with the reason."""
    if raw in (None, ""):
        return None
    try:
        value = int(str(raw))
    except ValueError:
        raise ValueError("before must be a message sequence number (a positive integer)") from None
    if not 1 <= value < 2**63:  # a database integer: a larger one is no message's either
        raise ValueError("before must be a message sequence number (a positive integer)")
    return value
