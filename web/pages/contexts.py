"""The inspector of one execution context (PRD §4.6, US-05): its state, an instruction to a
running agent, a manual snapshot."""

from __future__ import annotations

from typing import Any

from django import forms
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_GET, require_POST

from monitoring import live_items
from monitoring.access import can_operate_task, visible_contexts
from monitoring.models import ExecutionContext, ToolConfirmation
from runs import context_actions
from runs.context_actions import MAX_INSTRUCTION_CHARS, MAX_LABEL_CHARS, ContextActionError, state_from_row
from web.htmx import fragment_or_page

INSPECTOR_SNAPSHOTS = 20


def visible_context(request: HttpRequest, context_id: str) -> ExecutionContext:
    row = visible_contexts(request.user).select_related("task").filter(pk=context_id).first()
    if row is None:
        raise Http404(f"there is no execution context {context_id}")
    return row


def inspector_context(request: HttpRequest, row: ExecutionContext) -> dict[str, Any]:
    snapshots = list(row.snapshots.defer("stored_state").order_by("-sequence")[:INSPECTOR_SNAPSHOTS])
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


class InstructionForm(forms.Form):
    """An instruction to a running agent: 1..2,000 characters (``runs.context_actions``
    checks it again, and that the agent still runs)."""

    text = forms.CharField(
        max_length=MAX_INSTRUCTION_CHARS,
        label=gettext_lazy("Send an instruction to this agent"),
        error_messages={"required": gettext_lazy("Write the instruction first.")},
    )


class SnapshotForm(forms.Form):
    """A manual snapshot's label: optional, at most 300 characters."""

    label = forms.CharField(required=False, max_length=MAX_LABEL_CHARS, label=gettext_lazy("label (optional)"))


def _action_result(
    request: HttpRequest, *, note: str = "", error: ContextActionError | None = None, refused: forms.Form | None = None
) -> HttpResponse:
    """The inspector's result line: ``note``, a domain refusal (its status), or a form the
    checks refused (400, the reasons as next to a field: ``forms/_field_errors.html``)."""
    if refused is not None:
        name = next(iter(refused.errors))
        return render(request, "monitoring/_action_result.html", {"field": refused[name]}, status=400)
    body = {"note": note} if error is None else {"error": error.reason, "field_name": error.field}
    return render(request, "monitoring/_action_result.html", body, status=200 if error is None else error.status)


def _operable(request: HttpRequest, context_id: str) -> bool:
    """True when the user may act on this context's agent (a context the user may not see is
    a 404); else the action is left to ``runs.context_actions`` to refuse, as before."""
    return can_operate_task(request.user, visible_context(request, context_id).task)


@require_POST
def live_context_instruction(request: HttpRequest, context_id: str) -> HttpResponse:
    """Send a user instruction to a running agent (recorded as a snapshot trigger, PRD §4.6);
    an empty or too long one (``InstructionForm``) is refused with the reason (400)."""
    form = InstructionForm(request.POST)
    text: object = form["text"].value()
    if _operable(request, context_id):
        if not form.is_valid():
            return _action_result(request, refused=form)
        text = form.cleaned_data["text"]
    try:
        snapshot = context_actions.send_user_instruction(request.user, context_id, text)
    except ContextActionError as exc:
        return _action_result(request, error=exc)
    return _action_result(request, note=_("Instruction sent; snapshot #%(n)s recorded.") % {"n": snapshot["sequence"]})


@require_POST
def live_context_snapshot(request: HttpRequest, context_id: str) -> HttpResponse:
    """Take a manual snapshot (PRD §4.6 用户手动触发) with an optional label (``SnapshotForm``)."""
    form = SnapshotForm(request.POST)
    label: object = form["label"].value()
    if _operable(request, context_id):
        if not form.is_valid():
            return _action_result(request, refused=form)
        label = form.cleaned_data["label"]
    try:
        snapshot = context_actions.take_manual_snapshot(request.user, context_id, label)
    except ContextActionError as exc:
        return _action_result(request, error=exc)
    if snapshot["label"]:
        note = _("Manual snapshot #%(n)s “%(label)s” taken.") % {"n": snapshot["sequence"], "label": snapshot["label"]}
    else:
        note = _("Manual snapshot #%(n)s taken.") % {"n": snapshot["sequence"]}
    return _action_result(request, note=note)
