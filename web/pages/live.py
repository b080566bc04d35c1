"""The live viewer (PRD §4.6, US-04): context cards, the communication log, the call graph."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.template.loader import render_to_string
from django.views.decorators.http import require_GET

from capabilities.models import Project
from monitoring import live_state
from monitoring.access import visible_contexts, visible_tasks
from monitoring.call_graph import call_graph
from monitoring.live_filters import MESSAGE_TYPES, FilterError, LiveFilters
from monitoring.message_log import PAGE_SIZE, message_page, parse_before
from monitoring.role_labels import role_order
from web.pages.contexts import inspector_context


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
                "monitoring/inspector.html", inspector_context(request, row), request=request
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
