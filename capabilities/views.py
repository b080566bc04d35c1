"""Pages: roles (US-01) and the capability registry (PRD §4.2)."""

from __future__ import annotations

import json

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render

from capabilities.executors import model_status, role_executor
from capabilities.governance_views import capability_governance, role_governance
from capabilities.models import AgentRole, CapabilityCard
from capabilities.registry import card_document, filter_capabilities, role_definition
from runs.host import get_host
from team.snapshot import build_snapshot
from teamclaw.runtime.config import CATEGORIES, TOOLS


def role_list(request: HttpRequest) -> HttpResponse:
    """Every role with its responsibilities and capabilities."""
    snapshot = build_snapshot()
    roles = [role_definition(snapshot, role) for role in AgentRole.objects.all()]
    return render(request, "capabilities/role_list.html", {"nav": "roles", "roles": roles})


def role_detail(request: HttpRequest, role: str) -> HttpResponse:
    """One role: capabilities, permissions, tool bindings, constraints and prompt config."""
    obj = get_object_or_404(AgentRole, role=role)
    snapshot = build_snapshot()
    definition = role_definition(snapshot, obj)
    executor = role_executor(snapshot, role)
    runs_on = {row["capability_id"]: row["executor"] for row in executor["capabilities"]}
    cards = [{**card_document(snapshot.cards[c]), "runs_on": runs_on.get(c)} for c in definition["capabilities"]]
    return render(
        request,
        "capabilities/role_detail.html",
        {
            "nav": "roles",
            "role": obj,
            "definition": definition,
            "cards": cards,
            "tools": TOOLS,
            "executor": executor,
            "model": model_status(),
            **role_governance(request, obj),
        },
    )


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
    from runs.health import capability_health  # the runtime's view of availability

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
