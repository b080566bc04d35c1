"""Pages of the live execution viewer, debug replay and token statistics (PRD §4.6, US-04/05/08/11).

Thin views: parse, authorize (``monitoring.access``; any partial can be requested on its own),
call a service, render. Fragments are the templates the websocket pushes.
"""

from __future__ import annotations

from typing import Any

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.template.loader import render_to_string
from django.views.decorators.http import require_GET, require_POST

from capabilities.models import Project
from monitoring import live_items, live_state, replay, token_stats
from monitoring.access import can_decide_confirmations, can_operate_task, visible_contexts, visible_tasks
from monitoring.call_graph import call_graph
from monitoring.live_filters import MESSAGE_TYPES, FilterError, LiveFilters
from monitoring.message_log import PAGE_SIZE, message_page, parse_before
from monitoring.models import Artifact, ExecutionContext, Snapshot, ToolConfirmation
from monitoring.role_labels import role_order
from monitoring.sequence import sequence_diagram
from runs import context_actions
from runs.confirmations import ConfirmationError, decide
from runs.context_actions import ContextActionError, state_from_row

INSPECTOR_SNAPSHOTS = 20


def _filters(request: HttpRequest) -> tuple[LiveFilters, dict[str, list[str]]]:
    try:
        return LiveFilters.parse(request.GET), {}
    except FilterError as exc:
        return LiveFilters(), exc.errors


def _filter_choices() -> dict[str, Any]:
    return {"roles": role_order(), "types": MESSAGE_TYPES, "projects": list(Project.objects.only("slug", "name"))}


@require_GET
def live(request: HttpRequest) -> HttpResponse:
    """``/live/``: agent cards, communication log, call graph, confirmations, alerts, config
    changes, context inspector; updated over ``/ws/live/`` with the same filters."""
    filters, errors = _filters(request)
    if filters.task and not visible_tasks(request.user).filter(pk=filters.task).exists():
        # The socket would refuse it too; say so instead of showing an empty page that never connects.
        errors = {**errors, "task": [f"there is no task {filters.task}"]}
        filters = LiveFilters(role=filters.role, type=filters.type, project=filters.project)
    context = live_state.live_page_context(request.user, filters)
    context.update(nav="live", filter_errors=errors, filter_choices=_filter_choices())
    inspect = request.GET.get("inspect")
    if inspect:
        row = visible_contexts(request.user).filter(pk=inspect).select_related("task").first()
        if row is not None:
            context["inspector"] = render_to_string(
                "monitoring/inspector.html", _inspector_context(request, row), request=request
            )
    return render(request, "monitoring/live.html", context, status=400 if errors else 200)


@require_GET
def live_log(request: HttpRequest) -> HttpResponse:
    """The whole communication log, filtered, 50 a page (keyset pagination, ``before=<seq>``)."""
    filters, errors = _filters(request)
    try:
        before = parse_before(request.GET.get("before"))
    except ValueError as exc:
        errors = {**errors, "before": [str(exc)]}
        before = None
    page = message_page(request.user, filters, before)
    return render(
        request,
        "monitoring/message_log.html",
        {
            "nav": "live",
            "page": page,
            "filters": filters,
            "filter_errors": errors,
            "filter_choices": _filter_choices(),
            "page_size": PAGE_SIZE,
        },
        status=400 if errors else 200,
    )


@require_GET
def live_graph(request: HttpRequest) -> HttpResponse:
    """The call-relationship graph fragment (refreshed by the live page after new invokes/hooks)."""
    filters, errors = _filters(request)
    if errors:
        return HttpResponse("; ".join(f"{k}: {v[0]}" for k, v in errors.items()), status=400)
    return render(request, "monitoring/_call_graph.html", {"graph": call_graph(request.user, filters)})


def _visible_context(request: HttpRequest, context_id: str) -> ExecutionContext:
    row = visible_contexts(request.user).select_related("task").filter(pk=context_id).first()
    if row is None:
        raise Http404(f"there is no execution context {context_id}")
    return row


def _inspector_context(request: HttpRequest, row: ExecutionContext) -> dict[str, Any]:
    snapshots = list(row.snapshots.defer("state").order_by("-sequence")[:INSPECTOR_SNAPSHOTS])
    snapshots.reverse()
    confirmations = ToolConfirmation.objects.filter(context_id=row.id, status="pending").order_by("-created_at")
    return {
        "ctx": row,
        "state": state_from_row(row),
        "snapshots": [live_items.snapshot_item(s) for s in snapshots],
        "snapshot_count": row.snapshots.count(),
        "confirmations": [live_items.confirmation_item(c) for c in confirmations],
        "can_operate": can_operate_task(request.user, row.task),
        "live": row.status not in live_items.FINAL_CONTEXT_STATUSES,
    }


@require_GET
def live_context(request: HttpRequest, context_id: str) -> HttpResponse:
    """The context inspector (US-05); ``?part=state`` is its self-refreshing state part."""
    row = _visible_context(request, context_id)
    context = _inspector_context(request, row)
    if request.GET.get("part") == "state":
        return render(request, "monitoring/inspector.html#state", context)
    return render(request, "monitoring/inspector.html", context)


def _action_result(request: HttpRequest, *, note: str = "", error: ContextActionError | None = None) -> HttpResponse:
    body = {"note": note} if error is None else {"error": error.reason, "field": error.field}
    return render(request, "monitoring/_action_result.html", body, status=200 if error is None else error.status)


@require_POST
def live_context_instruction(request: HttpRequest, context_id: str) -> HttpResponse:
    """Send a user instruction to a running agent (recorded as a snapshot trigger, PRD §4.6)."""
    try:
        snapshot = context_actions.send_user_instruction(request.user, context_id, request.POST.get("text"))
    except ContextActionError as exc:
        return _action_result(request, error=exc)
    return _action_result(request, note=f"Instruction sent; snapshot #{snapshot['sequence']} recorded.")


@require_POST
def live_context_snapshot(request: HttpRequest, context_id: str) -> HttpResponse:
    """Take a manual snapshot (PRD §4.6 用户手动触发) with an optional label."""
    try:
        snapshot = context_actions.take_manual_snapshot(request.user, context_id, request.POST.get("label"))
    except ContextActionError as exc:
        return _action_result(request, error=exc)
    label = f" “{snapshot['label']}”" if snapshot["label"] else ""
    return _action_result(request, note=f"Manual snapshot #{snapshot['sequence']}{label} taken.")


@require_POST
def live_confirmation(request: HttpRequest, confirmation_id: str) -> HttpResponse:
    """Approve or reject a tool confirmation (PRD §4.7 ⚠️); answers with its fragment."""
    row = ToolConfirmation.objects.filter(pk=confirmation_id).first()
    task = visible_tasks(request.user).filter(pk=row.task_id).first() if row is not None else None
    if row is None or task is None:
        raise Http404(f"there is no tool confirmation {confirmation_id}")
    item = live_items.confirmation_item(row)
    raw = (request.POST.get("approve") or "").strip().lower()
    if raw not in ("true", "false", "1", "0"):
        return render(
            request, "monitoring/_confirmation.html", {"cf": item, "error": "approve: say true or false"}, status=400
        )
    if not can_decide_confirmations(request.user):
        error = "only staff may approve or reject tool use"
        return render(request, "monitoring/_confirmation.html", {"cf": item, "error": error}, status=403)
    try:
        decided = decide(confirmation_id, raw in ("true", "1"), request.user)
    except ConfirmationError as exc:
        row.refresh_from_db()
        return render(
            request,
            "monitoring/_confirmation.html",
            {"cf": live_items.confirmation_item(row), "error": exc.message},
            status=exc.status,
        )
    return render(request, "monitoring/_confirmation.html", {"cf": live_items.confirmation_item(decided)})


@require_GET
def replay_page(request: HttpRequest, context_id: str) -> HttpResponse:
    """``/replay/<context_id>/``: step through a context's snapshots and messages (US-08).

    ``?at=<step>`` (default: the last step), ``?snapshot=<id>`` jumps to a snapshot,
    ``?a=<id>&b=<id>`` compares two snapshots.
    """
    row = _visible_context(request, context_id)
    timeline = replay.build_timeline(row)
    errors: dict[str, str] = {}
    index = None
    if request.GET.get("snapshot"):
        index = timeline.index_of("snapshot", request.GET["snapshot"])
        if index is None:
            errors["snapshot"] = "that snapshot is not part of this context (it may have been pruned)"
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
    template = "monitoring/replay.html#main" if request.htmx and not request.htmx.boosted else "monitoring/replay.html"
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
            "groups": token_stats.GROUP_BY,
            "since_raw": request.GET.get("since", ""),
            "errors": errors,
            "usage_svg": token_stats.usage_chart(stats) if stats.rows else "",
            "series_svg": token_stats.series_chart(series),
        },
        status=400 if errors else 200,
    )


@require_GET
def task_artifact(request: HttpRequest, task_id: str, name: str) -> HttpResponse:
    """One artifact's whole content as text (the pages show the first 20,000 characters)."""
    task = visible_tasks(request.user).filter(pk=task_id).first()
    artifact = Artifact.objects.filter(task=task, name=name).first() if task else None
    if artifact is None:
        raise Http404(f"task {task_id} has no artifact {name}")
    response = HttpResponse(artifact.content, content_type="text/plain; charset=utf-8")
    response["Content-Disposition"] = f'inline; filename="{artifact.name}"'
    return response
