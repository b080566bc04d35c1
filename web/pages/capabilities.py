"""Pages: the capability registry (PRD §4.2), card switches (US-06) and trying an ENTRY
capability from the dashboard (a form from its input schema, a real invoke)."""

from __future__ import annotations

import json
from typing import Any

from asgiref.sync import async_to_sync
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.utils.translation import gettext
from django.views.decorators.http import require_http_methods, require_POST

from capabilities.access import can_change, require_change
from capabilities.card_settings import update_capability
from capabilities.matrices import INVOKE, matrix_document
from capabilities.models import AgentRole, CapabilityCard, Project, ProjectCapabilityOverride
from capabilities.registry import card_document, filter_capabilities
from capabilities.versions import document_version
from runs.commands import call_anywhere
from runs.health import capability_health
from runs.host import get_host
from team.snapshot import build_snapshot
from teamclaw.runtime.config import CATEGORIES
from web.capability_input_form import WHOLE_PARAMS, input_fields, read_params
from web.forms import apply_switch


def capability_list(request: HttpRequest) -> HttpResponse:
    """The registry with search (``q``) and filters (``role``, ``category``)."""
    snapshot = build_snapshot()
    filters = {key: request.GET.get(key, "") for key in ("q", "role", "category")}
    if filters["category"] and filters["category"] not in CATEGORIES:
        filters["category"] = ""
    cards = [card_document(c) for c in filter_capabilities(snapshot, **filters)]
    return render(
        request,
        "capabilities/capability_list.html",
        {
            "nav": "capabilities",
            "cards": cards,
            "filters": filters,
            "categories": CATEGORIES,
            "roles": AgentRole.objects.all(),
        },
    )


def capability_detail(request: HttpRequest, capability_id: str) -> HttpResponse:
    """One card with its schemas."""
    snapshot = build_snapshot()
    card = snapshot.cards.get(capability_id)
    if card is None:
        raise Http404(f"no capability {capability_id}")
    document = card_document(card)

    return render(
        request,
        "capabilities/capability_detail.html",
        {
            "nav": "capabilities",
            "card": document,
            "health": capability_health(get_host(), snapshot, capability_id),
            "input_schema": json.dumps(document["input_schema"], indent=2, ensure_ascii=False),
            "output_schema": json.dumps(document["output_schema"], indent=2, ensure_ascii=False),
            **capability_governance(request, get_object_or_404(CapabilityCard, capability_id=capability_id)),
        },
    )


# --------------------------------------------------------------------------- capabilities
def capability_governance(request: HttpRequest, card: CapabilityCard) -> dict[str, Any]:
    """Extra context for the capability page: its switches globally and per project."""
    overrides = {o.project_id: o.enabled for o in ProjectCapabilityOverride.objects.filter(card=card)}
    return {
        "card_version": document_version(f"capability:{card.capability_id}"),
        "card_global_enabled": card.enabled,
        "can_edit_card": can_change(request.user, "capability") and not card.skill_id,
        "card_project_switches": [
            {
                "project": p,
                "value": overrides.get(p.pk),
                "effective": card.enabled if overrides.get(p.pk) is None else overrides[p.pk],
                "version": document_version(f"capability:{card.capability_id}", p),
            }
            for p in Project.objects.all()
        ],
    }


@require_POST
def capability_switch(request: HttpRequest, capability_id: str) -> HttpResponse:
    """Enable/disable a capability globally or for a project (US-06)."""
    card = get_object_or_404(CapabilityCard, capability_id=capability_id)
    require_change(request.user, "capability")
    fallback = reverse("capability-detail", args=[card.capability_id])
    return apply_switch(request, card, save=update_capability, subject=card.capability_id, fallback=fallback)


# --------------------------------------------------------------------------- trying an entry point
TRY_FROM_ROLE = "from_role"


def _callers_of(owner: str) -> list[str]:
    """Roles the global effective invoke matrix lets invoke ``owner`` (PRD §4.7), in order."""
    matrix = matrix_document(INVOKE)["matrix"]
    return [caller for caller, cells in matrix.items() if cells.get(owner)]


@require_http_methods(["GET", "POST"])
def capability_try(request: HttpRequest, capability_id: str) -> HttpResponse:
    """Try an ENTRY capability (seed 003: the user-facing entry points the dashboard lists)
    with a form built from its ``input_schema`` (``web.capability_input_form``). POST checks
    the params with jsonschema, showing each reason by its field (400, nothing invoked), then
    runs a real invoke (PRD §4.4) through the runtime as the chosen role, under the invoke
    matrix like any other call, and shows the ``InvokeResult``: the data, or the error code
    and message. Staff only, as ``POST /api/v1/capabilities/invoke``. Any other card's page
    says it is not an entry point and offers no form (a POST is a 400, nothing invoked)."""
    if not request.user.is_staff:
        raise PermissionDenied(gettext("trying a capability acts as an agent and needs a staff account"))
    card = get_object_or_404(CapabilityCard, capability_id=capability_id)
    if card.capability_type != "ENTRY":  # agents invoke the others; the page says so, invoking nothing
        return render(
            request,
            "capabilities/capability_try.html",
            {"nav": "dashboard", "card": card, "not_entry": True},
            status=400 if request.method == "POST" else 200,
        )
    owners = list(card.owner_roles.values_list("role", flat=True))
    callers = _callers_of(owners[0]) if owners else []
    roles = list(AgentRole.objects.filter(enabled=True).values_list("role", flat=True))
    fields = input_fields(card.input_schema)
    posted: dict[str, str] = {}
    errors: dict[str, list[str]] = {}
    result: dict[str, Any] | None = None
    status = 200
    from_role = callers[0] if callers else (roles[0] if roles else "")
    if request.method == "POST":
        posted = {key: request.POST.get(key, "") for key in request.POST}
        from_role = request.POST.get(TRY_FROM_ROLE, "")
        params, errors = read_params(card.input_schema, request.POST)
        if from_role not in roles:
            errors.setdefault(TRY_FROM_ROLE, []).append(gettext("choose an enabled role to act as"))
        if errors:
            status = 400
        else:
            payload = {"capability": card.capability_id, "params": params, "from_role": from_role}
            body, refusal = async_to_sync(call_anywhere)("invoke", payload)
            if refusal is not None:
                errors = dict(refusal.get("errors") or {}) or {"params": [str(refusal["detail"])]}
                status = 400
            else:
                result = body
    return render(
        request,
        "capabilities/capability_try.html",
        {
            "nav": "dashboard",
            "card": card,
            "owners": owners,
            "callers": callers,
            "roles": roles,
            "from_role": from_role,
            "fields": [(f, posted.get(f.html_name, ""), errors.get(f.name, [])) for f in fields],
            "whole_params": WHOLE_PARAMS if not fields else "",
            "posted_params": posted.get(WHOLE_PARAMS, "{}"),
            "errors": errors,
            "field_names": {f.name for f in fields} | {TRY_FROM_ROLE},
            "result": result,
            "result_json": json.dumps(result.get("data"), indent=2, ensure_ascii=False) if result else "",
        },
        status=status,
    )
