"""Pages: the capability registry (PRD §4.2) and card switches (US-06)."""

from __future__ import annotations

import json
from typing import Any

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from capabilities.access import can_change, require_change
from capabilities.card_settings import update_capability
from capabilities.models import AgentRole, CapabilityCard, Project, ProjectCapabilityOverride
from capabilities.registry import card_document, filter_capabilities
from capabilities.versions import document_version
from runs.health import capability_health
from runs.host import get_host
from team.snapshot import build_snapshot
from teamclaw.runtime.config import CATEGORIES
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
