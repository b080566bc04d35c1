"""The invoke and tool permission matrices (PRD §4.7) and their what-if."""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.exceptions import ValidationError
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response

from capabilities.matrices import INVOKE, TOOL, MatrixKind, matrix_document, parse_cells, role_slugs, save_matrix
from monitoring.whatif import DEFAULT_DAYS, MAX_DAYS, what_if
from teamclaw import api_fields
from web.api.governance import PROJECT_PARAM, GovernanceView, body, note_of, version_of
from web.scope import project_scope

MATRIX_SAVE = inline_serializer(
    "MatrixSave",
    {
        "version": api_fields.StrictIntegerField(help_text="The version you loaded."),
        "matrix": serializers.DictField(help_text="{row: {column: value}}; only the cells to set."),
        "note": api_fields.StrictCharField(required=False),
    },
)


class MatrixView(GovernanceView):
    kind: MatrixKind = INVOKE

    def current_document(self, request: Request) -> dict[str, Any] | None:
        return matrix_document(self.kind, project_scope(request))

    def get(self, request: Request) -> Response:
        return Response(matrix_document(self.kind, project_scope(request)))

    def put(self, request: Request) -> Response:
        project = project_scope(request)
        data = body(request, MATRIX_SAVE.fields)
        version = version_of(data)
        note = note_of(data)
        if "matrix" not in data:
            raise ValidationError({"matrix": ["this field is required"]})
        result = save_matrix(
            self.kind, project=project, version=version, matrix=data["matrix"], note=note, actor=request.user
        )
        return Response({**result.document, "changed": bool(result.change)})


class InvokeMatrixView(MatrixView):
    """The invoke permission matrix (PRD §4.7): ``{version, project, roles, matrix: {caller:
    {callee: bool}}}``, plus ``global`` and ``overrides`` for a project. PUT sets the given
    cells (``null`` = reset to global in a project) as one change."""

    kind = INVOKE
    config_actions = {"PUT": "invoke_matrix"}

    @extend_schema(parameters=[PROJECT_PARAM], responses=OpenApiTypes.OBJECT)
    def get(self, request: Request) -> Response:
        return super().get(request)

    @extend_schema(parameters=[PROJECT_PARAM], request=MATRIX_SAVE, responses=OpenApiTypes.OBJECT)
    def put(self, request: Request) -> Response:
        return super().put(request)


class ToolMatrixView(MatrixView):
    """The tool permission matrix (PRD §4.7): ``{version, project, roles, tools, matrix:
    {role: {tool: "allow"|"deny"|"confirm"}}}``; PUT as for the invoke matrix."""

    kind = TOOL
    config_actions = {"PUT": "tool_matrix"}

    @extend_schema(parameters=[PROJECT_PARAM], responses=OpenApiTypes.OBJECT)
    def get(self, request: Request) -> Response:
        return super().get(request)

    @extend_schema(parameters=[PROJECT_PARAM], request=MATRIX_SAVE, responses=OpenApiTypes.OBJECT)
    def put(self, request: Request) -> Response:
        return super().put(request)


def days_param(request: Request) -> int:
    """``?days=`` (1..90, default 7)."""
    raw = request.query_params.get("days") or str(DEFAULT_DAYS)
    if not raw.isdigit() or not 1 <= int(raw) <= MAX_DAYS:
        raise ValidationError({"days": [f"must be a whole number of days between 1 and {MAX_DAYS}"]})
    return int(raw)


WHAT_IF = inline_serializer("WhatIf", {"matrix": serializers.DictField(help_text="{row: {column: value}}")})


class WhatIfView(GovernanceView):
    """What staged cells would have done to the recorded traffic of the last ``days`` days:
    invokes that would now be denied, newly allowed or sent for confirmation, grouped by
    caller -> callee. Reads only; nothing is saved."""

    permission_classes = [IsAuthenticated]
    kind: MatrixKind = INVOKE

    @extend_schema(
        parameters=[PROJECT_PARAM, OpenApiParameter("days", int, description="1..90, default 7")],
        request=WHAT_IF,
        responses=OpenApiTypes.OBJECT,
    )
    def post(self, request: Request) -> Response:
        project = project_scope(request)
        days = days_param(request)
        data = body(request, WHAT_IF.fields)
        cells = parse_cells(self.kind, data.get("matrix", {}), role_slugs(), allow_null=project is not None)
        return Response(what_if(self.kind, project, cells, days))


class InvokeWhatIfView(WhatIfView):
    kind = INVOKE


class ToolWhatIfView(WhatIfView):
    kind = TOOL
