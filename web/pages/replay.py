"""Debug replay (US-08): a context's snapshots and messages step by step, diffs, the sequence."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.translation import gettext
from django.views.decorators.http import require_GET

from monitoring import replay
from monitoring.models import ExecutionContext, Snapshot
from monitoring.sequence import sequence_diagram
from web.htmx import wants_fragment
from web.pages.contexts import visible_context


@require_GET
def replay_page(request: HttpRequest, context_id: str) -> HttpResponse:
    """``/replay/<context_id>/``: step through a context's snapshots and messages (US-08).

    ``?at=<index>`` (0-based; default: the last step), ``?step=<number>`` (1-based, what
    the page shows and its jump box sends), ``?snapshot=<id>`` jumps to a snapshot,
    ``?a=<id>&b=<id>`` compares two snapshots.
    """
    row = visible_context(request, context_id)
    timeline = replay.build_timeline(row)
    errors: dict[str, str] = {}
    index = None
    if request.GET.get("snapshot"):
        index = timeline.index_of("snapshot", request.GET["snapshot"])
        if index is None:
            errors["snapshot"] = gettext("that snapshot is not part of this context (it may have been pruned)")
    if index is None and request.GET.get("step"):
        try:
            index = replay.step_index(request.GET["step"], timeline)
        except ValueError as exc:
            errors["step"] = str(exc)
    if index is None:
        try:
            index = replay.clamp_index(request.GET.get("at"), timeline)
        except ValueError as exc:
            errors["at"] = str(exc)
            index = replay.clamp_index(None, timeline)
    current = replay.step(timeline, index)
    diff, diff_error = _diff(request, row, timeline, current)
    if diff_error:
        errors["diff"] = diff_error
    context = {
        "nav": "live",
        "ctx": row,
        "timeline": timeline,
        "current": current,
        "diff": diff,
        "seq": sequence_diagram(timeline, current["index"]),
        "errors": errors,
        "window": _window(timeline, current["index"]),
    }
    template = "monitoring/replay.html#main" if wants_fragment(request) else "monitoring/replay.html"
    return render(request, template, context, status=400 if errors else 200)


def _window(timeline: replay.Timeline, index: int, radius: int = 40) -> dict[str, Any]:
    start = max(0, index - radius)
    end = min(len(timeline), index + radius + 1)
    return {"entries": timeline.entries[start:end], "before": start, "after": len(timeline) - end}


def _diff(
    request: HttpRequest, row: ExecutionContext, timeline: replay.Timeline, current: dict[str, Any]
) -> tuple[dict[str, Any] | None, str]:
    """The requested snapshot diff (``a``, ``b``), or by default the current point's snapshot
    against the one before it."""
    a_id, b_id = request.GET.get("a"), request.GET.get("b")
    if a_id or b_id:
        if not (a_id and b_id):
            return None, "choose two snapshots to compare"
        pair = {s.id: s for s in Snapshot.objects.filter(context=row, pk__in=[a_id, b_id])}
        missing = [x for x in (a_id, b_id) if x not in pair]
        if missing:
            return None, f"snapshot {missing[0]} is not part of this context"
        return replay.snapshot_diff(pair[a_id], pair[b_id]), ""
    snapshot = current.get("snapshot")
    if snapshot is None:
        return None, ""
    earlier = [s for s in timeline.snapshots if s.sequence < snapshot.sequence]
    if not earlier:
        return None, ""
    full = {s.id: s for s in Snapshot.objects.filter(pk__in=[earlier[-1].pk, snapshot.pk])}
    return replay.snapshot_diff(full[earlier[-1].pk], full[snapshot.pk]), ""
