"""Tool confirmations (PRD §4.7 ⚠️): approve or reject a tool use waiting for an operator."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_POST

from monitoring import live_items
from monitoring.access import can_decide_confirmations, visible_tasks
from monitoring.models import ToolConfirmation
from runs.confirmations import ConfirmationError, decide


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
