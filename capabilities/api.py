"""REST API: roles and the capability registry (PRD §4.1, §4.2; US-01, US-02).

``?project=<slug>`` on read endpoints shows that project's effective configuration.
"""

from __future__ import annotations

from typing import Any

from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from capabilities import governance_api
from capabilities.access import CanChangeConfig
from capabilities.models import AgentRole, Project
from capabilities.registry import card_document, filter_capabilities, role_definition
from capabilities.snapshot import build_snapshot
from teamclaw.runtime.config import CATEGORIES, CapabilityType, ConfigSnapshot

PROJECT_PARAM = OpenApiParameter("project", str, description="Project slug: show that project's effective config.")


def snapshot_for_request(request: Request) -> ConfigSnapshot:
    """The effective config for ``?project=``; 404 naming the slug when it does not exist."""
    slug = request.query_params.get("project") or None
    if slug and not Project.objects.filter(slug=slug).exists():
        raise NotFound(f"project '{slug}' does not exist")
    return build_snapshot(slug)


class RoleListView(APIView):
    """All roles as PRD §4.1 AgentRoleDefinitions; POST creates a custom role (US-09)."""

    permission_classes = [CanChangeConfig]
    config_actions = {"POST": "role_create"}

    @extend_schema(parameters=[PROJECT_PARAM], responses=OpenApiTypes.OBJECT)
    def get(self, request: Request) -> Response:
        snapshot = snapshot_for_request(request)
        roles = [role_definition(snapshot, role) for role in AgentRole.objects.all()]
        return Response({"count": len(roles), "roles": roles, "config_version": snapshot.version})

    @extend_schema(request=OpenApiTypes.OBJECT, responses={201: OpenApiTypes.OBJECT})
    def post(self, request: Request) -> Response:
        return governance_api.role_post(request)


class RoleDetailView(APIView):
    """One role's AgentRoleDefinition: capabilities, permissions, constraints, prompt config;
    PATCH edits it (or switches it for ``?project=``), DELETE removes a custom role."""

    permission_classes = [CanChangeConfig]
    config_actions = {"PATCH": "role", "DELETE": "role_delete"}

    @extend_schema(parameters=[PROJECT_PARAM], responses=OpenApiTypes.OBJECT)
    def get(self, request: Request, role: str) -> Response:
        obj = get_object_or_404(AgentRole, role=role)
        return Response(governance_api.role_get(request, obj, role_definition(snapshot_for_request(request), obj)))

    @extend_schema(parameters=[PROJECT_PARAM], request=OpenApiTypes.OBJECT, responses=OpenApiTypes.OBJECT)
    def patch(self, request: Request, role: str) -> Response:
        return governance_api.role_patch(request, role)

    @extend_schema(parameters=[OpenApiParameter("version", int)], responses={204: None})
    def delete(self, request: Request, role: str) -> Response:
        return governance_api.role_delete(request, role)


class CapabilityListView(APIView):
    """The registry: every capability card, filtered by ``role``, ``category``, ``q`` (search),
    ``skillId`` and ``type`` (ENTRY/EXPOSED/INTERNAL)."""

    @extend_schema(
        parameters=[
            PROJECT_PARAM,
            OpenApiParameter("role", str),
            OpenApiParameter("category", str, enum=list(CATEGORIES)),
            OpenApiParameter("q", str, description="Keyword in id, name, description or tags."),
            OpenApiParameter("skillId", str),
            OpenApiParameter("type", str, enum=[t.value for t in CapabilityType]),
        ],
        responses=OpenApiTypes.OBJECT,
    )
    def get(self, request: Request) -> Response:
        params = request.query_params
        category = params.get("category", "")
        if category and category not in CATEGORIES:
            raise ValidationError({"category": [f"must be one of {', '.join(CATEGORIES)}"]})
        capability_type = params.get("type", "")
        if capability_type and capability_type not in {t.value for t in CapabilityType}:
            raise ValidationError({"type": ["must be ENTRY, EXPOSED or INTERNAL"]})
        snapshot = snapshot_for_request(request)
        cards = filter_capabilities(
            snapshot,
            role=params.get("role", ""),
            category=category,
            q=params.get("q", ""),
            skill_id=params.get("skillId", ""),
            capability_type=capability_type,
        )
        return Response({"count": len(cards), "capabilities": [card_document(c) for c in cards]})


class CapabilityDetailView(APIView):
    """One capability card; PATCH edits it or switches it on/off (``?project=``, US-06)."""

    permission_classes = [CanChangeConfig]
    config_actions = {"PATCH": "capability"}

    @extend_schema(parameters=[PROJECT_PARAM], responses=OpenApiTypes.OBJECT)
    def get(self, request: Request, capability_id: str) -> Response:
        snapshot = snapshot_for_request(request)
        card = snapshot.cards.get(capability_id)
        if card is None:
            raise NotFound(f"capability '{capability_id}' does not exist")
        body: dict[str, Any] = card_document(card)
        return Response(governance_api.capability_get(request, capability_id, body))

    @extend_schema(parameters=[PROJECT_PARAM], request=OpenApiTypes.OBJECT, responses=OpenApiTypes.OBJECT)
    def patch(self, request: Request, capability_id: str) -> Response:
        return governance_api.capability_patch(request, capability_id)
