"""Tool confirmations (PRD §4.7 ⚠️): approve or reject a tool use waiting for an operator."""

from __future__ import annotations

from django import forms
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_POST

from monitoring import live_items
from monitoring.access import can_decide_confirmations, visible_tasks
from monitoring.models import ToolConfirmation
from runs.confirmations import ConfirmationError, decide

APPROVE_VALUES = {"true": True, "1": True, "false": False, "0": False}
"""What the Approve / Reject buttons (or a client) may send as ``approve`` -> the decision."""


class _AnyCaseChoiceField(forms.TypedChoiceField):
    """A choice read without surrounding blanks, in lower case (``TRUE`` is ``true``)."""

    def to_python(self, value: object) -> str:
        return str(super().to_python(value)).strip().lower()


class DecisionForm(forms.Form):
    """A tool confirmation's decision: ``approve`` true or false (``1`` / ``0``; any case)."""

    approve = _AnyCaseChoiceField(
        choices=[(value, value) for value in APPROVE_VALUES],
        coerce=APPROVE_VALUES.__getitem__,
        label=gettext_lazy("Decision"),
        error_messages={
            "required": gettext_lazy("Approve or reject: say true or false."),
            "invalid_choice": gettext_lazy("Approve or reject: say true or false."),
        },
    )


@require_POST
def live_confirmation(request: HttpRequest, confirmation_id: str) -> HttpResponse:
    """Approve or reject a tool confirmation (PRD §4.7 ⚠️); answers with its fragment: a
    decision that is neither true nor false (``DecisionForm``) with the reason under the
    buttons (400), before the staff check (403), as before."""
    row = ToolConfirmation.objects.filter(pk=confirmation_id).first()
    task = visible_tasks(request.user).filter(pk=row.task_id).first() if row is not None else None
    if row is None or task is None:
        raise Http404(f"there is no tool confirmation {confirmation_id}")
    item = live_items.confirmation_item(row)
    form = DecisionForm(request.POST)
    if not form.is_valid():
        return render(request, "monitoring/_confirmation.html", {"cf": item, "form": form}, status=400)
    if not can_decide_confirmations(request.user):
        error = _("Not allowed: only staff may approve or reject tool use.")
        return render(request, "monitoring/_confirmation.html", {"cf": item, "error": error}, status=403)
    try:
        decided = decide(confirmation_id, form.cleaned_data["approve"], request.user)
    except ConfirmationError as exc:
        row.refresh_from_db()
        return render(
            request,
            "monitoring/_confirmation.html",
            {"cf": live_items.confirmation_item(row), "error": exc.message},
            status=exc.status,
        )
    return render(request, "monitoring/_confirmation.html", {"cf": live_items.confirmation_item(decided)})
