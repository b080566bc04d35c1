"""A role's constraints (PRD §4.7 约束), globally or for a project."""

from __future__ import annotations

from typing import Any

from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from capabilities.models import AgentRole
from capabilities.role_constraints import constraints_document, save_constraints
from teamclaw import api_fields
from web.api.governance import PROJECT_PARAM, GovernanceView, body, note_of, version_of
from web.scope import project_scope

CONSTRAINTS_SAVE = inline_serializer(
    "ConstraintsSave",
    {
        "version": api_fields.StrictIntegerField(),
        "constraints": serializers.DictField(),
        "note": api_fields.StrictCharField(required=False),
    },
)


class ConstraintsView(GovernanceView):
    """One role's constraints (PRD §4.7 约束条件): ``{version, role, project, constraints,
    global, overrides, bounds, defaults}``. PUT ``{version, constraints: {field: value}, note}``
    sets the given fields (``null`` = inherit, in a project)."""

    config_actions = {"PUT": "constraints"}

    def current_document(self, request: Request) -> dict[str, Any] | None:
        return constraints_document(get_object_or_404(AgentRole, role=self.kwargs["role"]), project_scope(request))

    @extend_schema(parameters=[PROJECT_PARAM], responses=OpenApiTypes.OBJECT)
    def get(self, request: Request, role: str) -> Response:
        return Response(constraints_document(get_object_or_404(AgentRole, role=role), project_scope(request)))

    @extend_schema(
        parameters=[PROJECT_PARAM],
        request=CONSTRAINTS_SAVE,
        responses=OpenApiTypes.OBJECT,
    )
    def put(self, request: Request, role: str) -> Response:
        obj = get_object_or_404(AgentRole, role=role)
        project = project_scope(request)
        data = body(request, CONSTRAINTS_SAVE.fields)
        version = version_of(data)
        note = note_of(data)
        if "constraints" not in data:
            raise ValidationError({"constraints": ["this field is required"]})
        result = save_constraints(
            obj, project=project, version=version, values=data["constraints"], note=note, actor=request.user
        )
        return Response({**result.document, "changed": bool(result.change)})
