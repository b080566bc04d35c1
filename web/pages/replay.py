"""Debug replay (US-08): a context's snapshots and messages step by step, diffs, the sequence."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from django.http import Http404, HttpRequest, HttpResponse
from django.utils.translation import gettext
from django.views.decorators.http import require_GET

from monitoring import replay, task_replay
from monitoring.access import visible_tasks
from monitoring.models import ExecutionContext, Snapshot
from monitoring.sequence import sequence_diagram
from teamclaw.whole_numbers import whole_number_or_none
from web.htmx import fragment_or_page
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
    return fragment_or_page(request, "monitoring/replay.html", context, part="main", status=400 if errors else 200)


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
            return None, gettext("choose two snapshots to compare")
        pair = {s.id: s for s in Snapshot.objects.filter(context=row, pk__in=[a_id, b_id])}
        missing = [x for x in (a_id, b_id) if x not in pair]
        if missing:
            return None, gettext("snapshot %(id)s is not part of this context") % {"id": missing[0]}
        return replay.snapshot_diff(pair[a_id], pair[b_id]), ""
    snapshot = current.get("snapshot")
    if snapshot is None:
        return None, ""
    earlier = [s for s in timeline.snapshots if s.sequence < snapshot.sequence]
    if not earlier:
        return None, ""
    full = {s.id: s for s in Snapshot.objects.filter(pk__in=[earlier[-1].pk, snapshot.pk])}
    return replay.snapshot_diff(full[earlier[-1].pk], full[snapshot.pk]), ""


@require_GET
def task_replay_page(request: HttpRequest, task_id: str) -> HttpResponse:
    """``/tasks/<task_id>/replay/``: every agent's steps of a task on one timeline
    (``monitoring.task_replay``), each labelled with its round; the state of the step's agent
    at that step; from any step, its trace node and a fork from there.

    ``?at=<index>`` (0-based; default: the last step) or ``?step=<number>`` (1-based);
    ``?agent=<context id>`` and ``?kind=<step kind>`` narrow the list of steps shown (the
    numbering stays the task's). A step that is not a whole number is a 400 naming it.
    """
    task = visible_tasks(request.user).filter(pk=task_id).first()
    if task is None:
        raise Http404(f"there is no task {task_id}")
    timeline = task_replay.build_task_timeline(task)
    errors: dict[str, str] = {}
    index = _task_index(request, timeline, errors)
    current = task_replay.task_step(timeline, index)
    agent, kind = request.GET.get("agent", ""), request.GET.get("kind", "")
    shown = [
        s
        for s in timeline.steps
        if (not agent or (s.context and s.context.id == agent)) and (not kind or s.step_kind == kind)
    ]
    context = {
        "nav": "tasks",
        "task": task,
        "timeline": timeline,
        "current": current,
        "errors": errors,
        "window": _shown_window(shown, index),
        "agent": agent,
        "kind": kind,
        "kinds": sorted({s.step_kind for s in timeline.steps}),
        "can_fork": task.status not in ("queued", "running") and bool(task.run_spec),
        "query": _filter_query(agent, kind),
    }
    return fragment_or_page(request, "monitoring/task_replay.html", context, part="main", status=400 if errors else 200)


def _task_index(request: HttpRequest, timeline: task_replay.TaskTimeline, errors: dict[str, str]) -> int:
    last = max(0, len(timeline) - 1)
    for name, base in (("step", 1), ("at", 0)):
        raw = request.GET.get(name)
        if raw in (None, ""):
            continue
        number = whole_number_or_none(raw)
        if number is None:
            errors[name] = gettext("must be a step number (a whole number)")
            return last
        return max(0, min(number - base, last))
    return last


def _shown_window(shown: list[task_replay.TaskStep], index: int, radius: int = 60) -> dict[str, Any]:
    """The shown steps nearest step ``index``: ``{entries, before, after}`` (counts left out)."""
    middle = next((i for i, s in enumerate(shown) if s.index >= index), len(shown))
    start = max(0, middle - radius)
    end = min(len(shown), middle + radius + 1)
    return {"entries": shown[start:end], "before": start, "after": len(shown) - end}


def _filter_query(agent: str, kind: str) -> str:
    """The filters as a query-string tail (``&agent=...&kind=...``) for the step links."""
    return "".join(f"&{name}={quote(value)}" for name, value in (("agent", agent), ("kind", kind)) if value)
