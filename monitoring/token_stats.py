"""Token statistics: input, output and total tokens and API calls (PRD §4.6 resource_usage, US-11).

Summed from the recorded execution contexts' ``resource_usage`` (each context's usage is what
its model calls charged, PRD §4.7 token budget), grouped by role, task or project, optionally
for contexts started since a point in time. Counts from the ``offline`` executor are
estimates (about 4 characters a token); a row says how many of its contexts are estimated.
Charts are drawn server-side as SVG by pygal (no script, no CDN).
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pygal
from django.db.models import Count, Q, QuerySet, Sum
from django.db.models.functions import TruncDay, TruncHour
from django.utils import timezone
from django.utils.dateparse import parse_date, parse_datetime
from django.utils.translation import gettext, gettext_lazy
from pygal.style import Style

from monitoring.access import visible_contexts
from monitoring.models import ExecutionContext
from monitoring.role_labels import role_labels
from teamclaw.errors import InvalidField

GROUP_BY = ("role", "task", "project")
GROUP_LABELS = {"role": gettext_lazy("role"), "task": gettext_lazy("task"), "project": gettext_lazy("project")}
"""How each ``GROUP_BY`` value reads on the page (the API keeps the values)."""
SERIES_KEYS = 8
"""Groups drawn separately in the time series; the rest are summed as 'other'."""

CHART_STYLE = Style(
    background="transparent",
    plot_background="transparent",
    foreground="#1d2330",
    foreground_strong="#1d2330",
    foreground_subtle="#677085",
    colors=("#2f6fde", "#1f8a4c", "#b7791f", "#c53030", "#5a67d8", "#0f766e", "#9d174d", "#4b5563", "#a16207"),
    font_family="system-ui, sans-serif",
)


class StatsError(InvalidField, ValueError):
    """A bad parameter (400): ``field`` and ``reason``."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(reason, field)


def parse_group_by(raw: str | None) -> str:
    """``role`` (default), ``task`` or ``project``; StatsError otherwise."""
    value = (raw or "role").strip()
    if value not in GROUP_BY:
        raise StatsError("group_by", f"must be one of {', '.join(GROUP_BY)}")
    return value


def parse_since(raw: str | None) -> datetime | None:
    """An ISO 8601 date (``2025-01-31``, midnight UTC) or datetime (``2025-01-31T08:00:00Z``;
    no zone means UTC), returned in UTC; None when empty; StatsError when unreadable or when
    its offset carries it past year 1 or 9999 (a database lookup by it raised OverflowError, 500)."""
    if raw in (None, ""):
        return None
    text = str(raw).strip()
    try:
        moment = parse_datetime(text)
        day = None if moment else parse_date(text)
    except ValueError:
        moment = day = None
    if moment is None and day is None:
        raise StatsError("since", "use an ISO 8601 date or datetime, e.g. 2025-01-31 or 2025-01-31T08:00:00Z")
    if moment is None:
        assert isinstance(day, date)
        moment = datetime(day.year, day.month, day.day, tzinfo=UTC)
    if timezone.is_naive(moment):
        moment = moment.replace(tzinfo=UTC)
    try:  # 9999-12-31T23:59-10:00 or 0001-01-01T00:00+05:00 is past the range of a datetime in UTC
        return moment.astimezone(UTC)
    except OverflowError:
        raise StatsError("since", "the moment is out of range: use a date between 0001-01-02 and 9999-12-30") from None


def _contexts(user: Any, since: datetime | None) -> QuerySet[ExecutionContext]:
    queryset = visible_contexts(user)
    if since is not None:
        queryset = queryset.filter(created_at__gte=since)
    return queryset


_FIELDS = {"role": ("role",), "task": ("task_id", "task__title"), "project": ("project_id", "project__name")}
_SUMS = {
    "input_tokens": Sum("input_tokens"),
    "output_tokens": Sum("output_tokens"),
    "total_tokens": Sum("total_tokens"),
    "api_calls": Sum("api_calls"),
    "contexts": Count("id"),
    "estimated_contexts": Count("id", filter=Q(tokens_estimated=True)),
}


@dataclass(slots=True)
class TokenStats:
    """Rows (largest total first), their totals, and the chart SVGs."""

    group_by: str
    since: datetime | None
    rows: list[dict[str, Any]]
    totals: dict[str, int]


def token_rows(user: Any, group_by: str, since: datetime | None = None) -> list[dict[str, Any]]:
    """``[{key, label, input_tokens, output_tokens, total_tokens, api_calls, contexts,
    estimated_contexts, estimated}]`` per group (tokens, calls), largest total first."""
    fields = _FIELDS[group_by]
    labels = role_labels() if group_by == "role" else {}
    rows = []
    for row in _contexts(user, since).values(*fields).annotate(**_SUMS).order_by("-total_tokens", fields[0]):
        key = row[fields[0]]
        if group_by == "role":
            emoji, name = labels.get(key, ("", key))
            label = f"{emoji} {name}".strip()
        elif group_by == "task":
            label = row["task__title"] or key
        else:
            label = row["project__name"] or "(no project)"
        rows.append(
            {
                "key": key,
                "label": label,
                "input_tokens": row["input_tokens"] or 0,
                "output_tokens": row["output_tokens"] or 0,
                "total_tokens": row["total_tokens"] or 0,
                "api_calls": row["api_calls"] or 0,
                "contexts": row["contexts"],
                "estimated_contexts": row["estimated_contexts"],
                "estimated": row["estimated_contexts"] > 0,
            }
        )
    return rows


def totals(rows: list[dict[str, Any]]) -> dict[str, int]:
    """Column sums of ``rows``."""
    keys = ("input_tokens", "output_tokens", "total_tokens", "api_calls", "contexts", "estimated_contexts")
    return {k: sum(r[k] for r in rows) for k in keys}


def token_stats(user: Any, group_by: str, since: datetime | None = None) -> TokenStats:
    """Rows and totals for the API and the page."""
    rows = token_rows(user, group_by, since)
    return TokenStats(group_by, since, rows, totals(rows))


def token_series(
    user: Any, group_by: str, since: datetime | None = None, labels: dict[Any, str] | None = None
) -> dict[str, Any]:
    """Total tokens per time bucket and group: ``{buckets: [datetime], unit: hour|day,
    series: {label: [tokens per bucket]}}`` (contexts counted in the bucket they started in).
    ``labels`` (key -> label, from ``token_rows``) saves looking them up again."""
    queryset = _contexts(user, since)
    first = since or queryset.order_by("created_at").values_list("created_at", flat=True).first()
    if first is None:
        return {"buckets": [], "unit": "day", "series": {}}
    hourly = timezone.now() - first <= timedelta(days=3)
    trunc = TruncHour("created_at", tzinfo=UTC) if hourly else TruncDay("created_at", tzinfo=UTC)
    field = _FIELDS[group_by][0]
    rows = queryset.annotate(bucket=trunc).values("bucket", field).annotate(tokens=Sum("total_tokens")).order_by()
    by_key: dict[Any, int] = {}
    cells: dict[tuple[Any, Any], int] = {}
    buckets: set[datetime] = set()
    for row in rows:
        key, bucket, tokens = row[field], row["bucket"], row["tokens"] or 0
        by_key[key] = by_key.get(key, 0) + tokens
        cells[(bucket, key)] = cells.get((bucket, key), 0) + tokens
        buckets.add(bucket)
    top = sorted(by_key, key=lambda k: -by_key[k])[:SERIES_KEYS]
    ordered = sorted(buckets)
    if labels is None:
        labels = {r["key"]: r["label"] for r in token_rows(user, group_by, since)}
    series: dict[str, list[int]] = {}
    for key in top:
        series[labels.get(key, str(key))] = [cells.get((b, key), 0) for b in ordered]
    rest = [k for k in by_key if k not in top]
    if rest:
        series["other"] = [sum(cells.get((b, k), 0) for k in rest) for b in ordered]
    return {"buckets": ordered, "unit": "hour" if hourly else "day", "series": series}


def _config(**extra: Any) -> dict[str, Any]:
    return {
        "js": [],  # pygal's tooltip script lives on a CDN: never load it
        "disable_xml_declaration": True,
        "style": CHART_STYLE,
        "height": 320,
        "width": 760,
        "legend_at_bottom": True,
        "truncate_legend": 40,
        "truncate_label": 24,
        **extra,
    }


def _data_uri(chart: Any) -> str:
    """The chart's SVG as a base64 ``data:`` URI (the pages' CSP allows ``img-src data:``)."""
    svg = chart.render(is_unicode=True).encode("utf-8")
    return "data:image/svg+xml;base64," + base64.b64encode(svg).decode("ascii")


def usage_chart(stats: TokenStats, limit: int = 15) -> str:
    """Stacked bars of input and output tokens per group (the largest ``limit``), as an SVG
    ``data:`` URI for an ``<img>``, its title and series named in the active language.

    An image, not inline SVG: pygal's SVG carries a ``<style>`` and a ``<script>`` element that
    the pages' Content-Security-Policy (``style-src 'self'``, ``script-src 'self'``) blocks
    inline, which drew the charts as black boxes. Inside an image the styles apply and no
    script runs."""
    chart = pygal.StackedBar(**_config(x_label_rotation=20 if len(stats.rows) > 6 else 0))
    chart.title = gettext("Tokens by %(group_by)s") % {"group_by": GROUP_LABELS[stats.group_by]}
    rows = stats.rows[:limit]
    chart.x_labels = [r["label"] for r in rows]
    chart.add(gettext("input tokens"), [r["input_tokens"] for r in rows])
    chart.add(gettext("output tokens"), [r["output_tokens"] for r in rows])
    return _data_uri(chart)


def series_chart(series: dict[str, Any]) -> str:
    """Total tokens over time per group, as an SVG ``data:`` URI like :func:`usage_chart`
    (empty string when there is no data)."""
    if not series["buckets"]:
        return ""
    fmt = "%m-%d %H:00" if series["unit"] == "hour" else "%Y-%m-%d"
    chart = pygal.Line(**_config(x_label_rotation=30, show_minor_x_labels=False, dots_size=2))
    if series["unit"] == "hour":
        chart.title = gettext("Total tokens per hour (contexts by start time)")
    else:
        chart.title = gettext("Total tokens per day (contexts by start time)")
    chart.x_labels = [b.strftime(fmt) for b in series["buckets"]]
    step = max(1, len(chart.x_labels) // 12)
    chart.x_labels_major = chart.x_labels[::step]
    for label, values in series["series"].items():
        chart.add(label, values)
    return _data_uri(chart)
