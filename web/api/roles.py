"""Roles (PRD §4.1 AgentRoleDefinition): list, one, create (US-09), edit or switch per
project, delete a custom one; and which executor and model run a role (PRD §4.7)."""

from __future__ import annotations

from typing import Any

from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.exceptions import NotFound, PermissionDenied, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from capabilities.access import CanChangeConfig
from capabilities.errors import StaleVersion
from capabilities.executors import model_status, role_executor, role_kinds, set_role_executor
from capabilities.models import AgentRole, Project, RoleExecutor
from capabilities.registry import role_definition
from capabilities.roles import delete_role
from team.roles import create_role, role_document, update_role
from teamclaw import api_fields
from web.api.governance import PROJECT_PARAM, body, note_of, version_of, with_current
from web.scope import project_scope, scoped_snapshot


class RoleListView(APIView):
    """All roles as PRD §4.1 AgentRoleDefinitions; POST creates a custom role (US-09)."""

    permission_classes = [CanChangeConfig]
    config_actions = {"POST": "role_create"}

    @extend_schema(operation_id="roles_list", parameters=[PROJECT_PARAM], responses=OpenApiTypes.OBJECT)
    def get(self, request: Request) -> Response:
        snapshot = scoped_snapshot(request)
        roles = [role_definition(snapshot, role) for role in AgentRole.objects.all()]
        return Response({"count": len(roles), "roles": roles, "config_version": snapshot.version})

    @extend_schema(request=OpenApiTypes.OBJECT, responses={201: OpenApiTypes.OBJECT})
    def post(self, request: Request) -> Response:
        return role_post(request)


class RoleDetailView(APIView):
    """One role's AgentRoleDefinition: capabilities, permissions, constraints, prompt config;
    PATCH edits it (or switches it for ``?project=``), DELETE removes a custom role."""

    permission_classes = [CanChangeConfig]
    config_actions = {"PATCH": "role", "DELETE": "role_delete"}

    @extend_schema(parameters=[PROJECT_PARAM], responses=OpenApiTypes.OBJECT)
    def get(self, request: Request, role: str) -> Response:
        obj = get_object_or_404(AgentRole, role=role)
        return Response(role_get(request, obj, role_definition(scoped_snapshot(request), obj)))

    @extend_schema(parameters=[PROJECT_PARAM], request=OpenApiTypes.OBJECT, responses=OpenApiTypes.OBJECT)
    def patch(self, request: Request, role: str) -> Response:
        return role_patch(request, role)

    @extend_schema(parameters=[OpenApiParameter("version", int)], responses={204: None})
    def delete(self, request: Request, role: str) -> Response:
        return role_delete(request, role)


EXECUTOR_FIELDS = ("executor", "model", "endpoint")


def _executor_body(role: AgentRole, request: Request) -> dict[str, Any]:
    slug = request.query_params.get("project") or None
    snapshot = scoped_snapshot(request)
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


def role_get(request: Request, role: AgentRole, definition: dict[str, Any]) -> dict[str, Any]:
    """The role's definition plus its document ``version`` and enabled layers."""
    return role_document(role, project_scope(request), definition)


def role_post(request: Request) -> Response:
    """``POST /api/v1/roles``: create a custom role (US-09); 201 with its definition."""
    data = body(request, None)  # check_new_role refuses unknown keys
    note = note_of(data)
    result = create_role(data, note=note, actor=request.user)
    return Response(result.document, status=status.HTTP_201_CREATED)


def role_patch(request: Request, role: str) -> Response:
    """``PATCH /api/v1/roles/{role}?project=``: edit a role or switch it for a project."""
    obj = get_object_or_404(AgentRole, role=role)
    project = project_scope(request)
    data = body(request, None)  # check_role_edit refuses unknown keys
    version = version_of(data)
    note = note_of(data)
    try:
        result = update_role(obj, project=project, version=version, data=data, note=note, actor=request.user)
    except StaleVersion as exc:
        raise with_current(exc, role_document(obj, project)) from None
    return Response({**result.document, "changed": bool(result.change)})


def role_delete(request: Request, role: str) -> Response:
    """``DELETE /api/v1/roles/{role}?version=``: delete a custom role (built-in: 400)."""
    obj = get_object_or_404(AgentRole, role=role)
    if request.query_params.get("project"):
        raise ValidationError({"project": ["roles are deleted globally; disable the role for a project instead"]})
    raw = request.query_params.get("version")
    data = {"version": int(raw) if raw and raw.isdigit() else raw}
    if isinstance(request.data, dict):
        api_fields.refuse_unknown_fields(request.data, ("version", "note"))
        data = {**dict(request.data), **{k: v for k, v in data.items() if v is not None}}
    version = version_of(data)
    note = note_of(data)
    try:
        delete_role(obj, version=version, note=note, actor=request.user)
    except StaleVersion as exc:
        raise with_current(exc, role_document(obj)) from None
    return Response(status=status.HTTP_204_NO_CONTENT)
