"""A role's constraints (PRD §4.7 约束), globally or for a project."""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework.request import Request
from rest_framework.response import Response

from capabilities.models import AgentRole
from capabilities.role_constraints import constraints_document, save_constraints
from team.config_schema import constraint_fields_schema, openapi_schema
from teamclaw import api_fields
from web.api.governance import PROJECT_PARAM, GovernanceView
from web.api.lookup import found
from web.scope import project_scope


@extend_schema_field(openapi_schema(constraint_fields_schema(project=True)))
class ConstraintValuesField(api_fields.PassThroughField):
    """``{field: value}`` of some constraint fields (PRD §4.7), handed as sent to
    ``capabilities.role_constraints.check_values`` (400 naming ``constraints.<field>``); the
    document shows the fields, their bounds and where ``null`` is allowed."""


class ConstraintsSaveSerializer(api_fields.ObjectBodySerializer):
    """``{version, constraints: {field: value}, note?}`` (``null`` = inherit, in a project;
    ``memory_tokens: null`` globally = the process default ``TEAMCLAW_MEMORY_TOKENS``)."""

    version = api_fields.DocumentVersionField(help_text="The version you loaded.")
    constraints = ConstraintValuesField(
        allow_null=True,
        error_messages={"required": "this field is required"},
        help_text="Only the fields to set: timeout_s, max_retries, file_scope, token_budget, "
        "max_concurrent_instances, memory_tokens (null = inherit in a project; memory_tokens null "
        "globally = the process default TEAMCLAW_MEMORY_TOKENS).",
    )
    note = api_fields.ChangeNoteField()


class ConstraintsView(GovernanceView):
    """One role's constraints (PRD §4.7 约束条件): ``{version, role, project, constraints,
    global, overrides, bounds, defaults}``. PUT ``{version, constraints: {field: value}, note}``
    sets the given fields (``null`` = inherit, in a project). ``memory_tokens`` (seed 003
    MemoryContext, 100..1,000,000 tokens) overrides ``TEAMCLAW_MEMORY_TOKENS`` for the role;
    ``null`` globally = that process default."""

    parser_classes = api_fields.JSON_BODY_ONLY

    config_actions = {"PUT": "constraints"}

    def current_document(self, request: Request) -> dict[str, Any] | None:
        return constraints_document(found(AgentRole, "role", role=self.kwargs["role"]), project_scope(request))

    @extend_schema(parameters=[PROJECT_PARAM], responses=OpenApiTypes.OBJECT)
    def get(self, request: Request, role: str) -> Response:
        return Response(constraints_document(found(AgentRole, "role", role=role), project_scope(request)))

    @extend_schema(
        parameters=[PROJECT_PARAM],
        request=ConstraintsSaveSerializer,
        responses=OpenApiTypes.OBJECT,
    )
    def put(self, request: Request, role: str) -> Response:
        obj = found(AgentRole, "role", role=role)
        project = project_scope(request)
        data = api_fields.read_body(ConstraintsSaveSerializer, request.data)
        result = save_constraints(
            obj,
            project=project,
            version=data["version"],
            values=data["constraints"],
            note=data["note"],
            actor=request.user,
        )
        return Response({**result.document, "changed": bool(result.change)})
