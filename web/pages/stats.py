"""Token statistics (US-11): tokens and API calls by role, task or project, with charts."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from monitoring import token_stats


@require_GET
def token_stats_page(request: HttpRequest) -> HttpResponse:
    """``/stats/tokens/``: totals and time series by role, task or project (US-11), with charts."""
    errors: dict[str, str] = {}
    try:
        group_by = token_stats.parse_group_by(request.GET.get("group_by"))
    except token_stats.StatsError as exc:
        errors[exc.field], group_by = exc.reason, "role"
    try:
        since = token_stats.parse_since(request.GET.get("since"))
    except token_stats.StatsError as exc:
        errors[exc.field], since = exc.reason, None
    stats = token_stats.token_stats(request.user, group_by, since)
    series = token_stats.token_series(request.user, group_by, since, {r["key"]: r["label"] for r in stats.rows})
    return render(
        request,
        "monitoring/token_stats.html",
        {
            "nav": "stats",
            "stats": stats,
            "group_by": group_by,
            "groups": list(token_stats.GROUP_LABELS.items()),
            "group_label": token_stats.GROUP_LABELS[group_by],
            "since_raw": request.GET.get("since", ""),
            "errors": errors,
            "usage_svg": token_stats.usage_chart(stats) if stats.rows else "",
            "series_svg": token_stats.series_chart(series),
        },
        status=400 if errors else 200,
    )
