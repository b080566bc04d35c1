"""The inspector of one execution context (PRD §4.6, US-05): its state, an instruction to a
running agent, a manual snapshot."""

from __future__ import annotations

from typing import Any

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET, require_POST

from monitoring import live_items
from monitoring.access import can_operate_task, visible_contexts
from monitoring.models import ExecutionContext, ToolConfirmation
from runs import context_actions
from runs.context_actions import ContextActionError, state_from_row
from web.htmx import fragment_or_page

INSPECTOR_SNAPSHOTS = 20


def visible_context(request: HttpRequest, context_id: str) -> ExecutionContext:
    row = visible_contexts(request.user).select_related("task").filter(pk=context_id).first()
    if row is None:
        raise Http404(f"there is no execution context {context_id}")
    return row


def inspector_context(request: HttpRequest, row: ExecutionContext) -> dict[str, Any]:
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
    row = visible_context(request, context_id)
    context = inspector_context(request, row)
    return fragment_or_page(request, "monitoring/inspector.html", context, parts=("state",))


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
