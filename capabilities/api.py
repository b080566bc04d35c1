"""REST API: roles and the capability registry (PRD §4.1, §4.2; US-01, US-02).

``?project=<slug>`` on read endpoints shows that project's effective configuration.
"""

from __future__ import annotations

from typing import Any

from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.exceptions import NotFound, PermissionDenied, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from capabilities import governance_api
from capabilities.access import CanChangeConfig
from capabilities.executors import model_status, role_executor, role_kinds, set_role_executor
from capabilities.models import AgentRole, Project, RoleExecutor
from capabilities.registration import RegistrationError, register_capability
from capabilities.registry import card_document, filter_capabilities, role_definition
from team.snapshot import build_snapshot
from teamclaw import api_fields
from teamclaw.api_errors import error_response
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

    @extend_schema(operation_id="roles_list", parameters=[PROJECT_PARAM], responses=OpenApiTypes.OBJECT)
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
    ``skillId`` and ``type`` (ENTRY/EXPOSED/INTERNAL); POST registers a plugin card (US-12, staff)."""

    @extend_schema(
        operation_id="capabilities_list",
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

    @extend_schema(request=OpenApiTypes.OBJECT, responses={201: OpenApiTypes.OBJECT})
    def post(self, request: Request) -> Response:
        if not request.user.is_staff:
            raise PermissionDenied("registering capabilities needs a staff account")
        if not isinstance(request.data, dict):
            raise ValidationError({"non_field_errors": ["send a JSON object (a capability card)"]})
        try:
            card = register_capability(dict(request.data), actor=request.user)
        except RegistrationError as exc:
            first_field, reasons = next(iter(exc.errors.items()))
            return error_response(f"{first_field}: {reasons[0]}", exc.errors, exc.status)
        return Response(card_document(card), status=201)


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


EXECUTOR_FIELDS = ("executor", "model", "endpoint")


def _executor_body(role: AgentRole, request: Request) -> dict[str, Any]:
    slug = request.query_params.get("project") or None
    snapshot = snapshot_for_request(request)
    rows = RoleExecutor.objects.filter(role=role)
    row = (rows.filter(project__slug=slug) if slug else rows.filter(project__isnull=True)).first()
    return {
        **role_executor(snapshot, role.role),
        "project": slug,
        "choice": {name: getattr(row, name) if row else "" for name in EXECUTOR_FIELDS},
        "available": role_kinds(),
        "model_status": model_status(),
        "config_version": snapshot.version,
    }


class RoleExecutorView(APIView):
    """A role's executor (DESIGN.md §5): what runs each of its capabilities and on which model,
    globally or for ``?project=``. PUT ``{executor, model, endpoint}`` (blank = inherit) changes
    the choice (staff only; audited, PRD §4.8). Keys are never part of the answer."""

    @extend_schema(parameters=[PROJECT_PARAM], responses=OpenApiTypes.OBJECT)
    def get(self, request: Request, role: str) -> Response:
        return Response(_executor_body(get_object_or_404(AgentRole, role=role), request))

    @extend_schema(parameters=[PROJECT_PARAM], request=OpenApiTypes.OBJECT, responses=OpenApiTypes.OBJECT)
    def put(self, request: Request, role: str) -> Response:
        if not request.user.is_staff:
            raise PermissionDenied("changing the configuration needs staff permission")
        obj = get_object_or_404(AgentRole, role=role)
        slug = request.query_params.get("project") or None
        project = Project.objects.filter(slug=slug).first() if slug else None
        if slug and project is None:
            raise NotFound(f"project '{slug}' does not exist")
        if not isinstance(request.data, dict):
            raise ValidationError({"non_field_errors": ["send a JSON object with executor, model and endpoint"]})
        api_fields.refuse_unknown_fields(request.data, EXECUTOR_FIELDS)
        values = {
            name: request.data.get(name) if request.data.get(name) is not None else "" for name in EXECUTOR_FIELDS
        }
        set_role_executor(obj, project, actor=request.user, **values)
        return Response(_executor_body(obj, request))
