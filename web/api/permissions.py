"""The invoke and tool permission matrices (PRD §4.7) and their what-if."""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_field
from rest_framework.exceptions import ValidationError
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response

from capabilities.matrices import INVOKE, TOOL, MatrixKind, matrix_document, parse_cells, role_slugs, save_matrix
from monitoring.whatif import DEFAULT_DAYS, MAX_DAYS, what_if
from teamclaw import api_fields
from teamclaw.api_query import integer, query_parameters
from teamclaw.whole_numbers import whole_number_problem
from web.api.governance import PROJECT_PARAM, GovernanceView
from web.scope import project_scope

REQUIRED = {"required": "this field is required"}


@extend_schema_field(
    {
        "type": "object",
        "additionalProperties": {"type": "object"},
        "description": "{row: {column: value}}: rows and columns are existing roles (and tools, in the tool "
        "matrix), values the matrix's choices; a row or column that names nothing is refused with 400 naming "
        "matrix.<row> or matrix.<row>.<column>.",
    }
)
class MatrixField(api_fields.PassThroughField):
    """Matrix cells ``{row: {column: value}}``: an object of objects (``parse_cells`` names a
    row or column that is no role, or a value outside the matrix's choices)."""


class MatrixSaveSerializer(api_fields.ObjectBodySerializer):
    """``{version, matrix, note?}``: the cells to set as one change."""

    version = api_fields.DocumentVersionField(help_text="The version you loaded.")
    matrix = MatrixField(error_messages=REQUIRED, help_text="{row: {column: value}}; only the cells to set.")
    note = api_fields.ChangeNoteField()


class WhatIfSerializer(api_fields.ObjectBodySerializer):
    """``{matrix?}``: the staged cells to replay against the recorded traffic."""

    matrix = MatrixField(required=False, default=dict, help_text="{row: {column: value}}")


class MatrixView(GovernanceView):
    parser_classes = api_fields.JSON_BODY_ONLY
    kind: MatrixKind = INVOKE

    def current_document(self, request: Request) -> dict[str, Any] | None:
        return matrix_document(self.kind, project_scope(request))

    def get(self, request: Request) -> Response:
        return Response(matrix_document(self.kind, project_scope(request)))

    def put(self, request: Request) -> Response:
        project = project_scope(request)
        data = api_fields.read_body(MatrixSaveSerializer, request.data)
        result = save_matrix(
            self.kind,
            project=project,
            version=data["version"],
            matrix=data["matrix"],
            note=data["note"],
            actor=request.user,
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

    @extend_schema(parameters=[PROJECT_PARAM], request=MatrixSaveSerializer, responses=OpenApiTypes.OBJECT)
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

    @extend_schema(parameters=[PROJECT_PARAM], request=MatrixSaveSerializer, responses=OpenApiTypes.OBJECT)
    def put(self, request: Request) -> Response:
        return super().put(request)


def days_param(request: Request) -> int:
    """``?days=`` (1..90, default 7)."""
    raw = request.query_params.get("days") or str(DEFAULT_DAYS)
    if whole_number_problem(raw, 1, MAX_DAYS):
        raise ValidationError({"days": [f"must be a whole number of days between 1 and {MAX_DAYS}"]})
    return int(raw)


class WhatIfView(GovernanceView):
    """What staged cells would have done to the recorded traffic of the last ``days`` days:
    invokes that would now be denied, newly allowed or sent for confirmation, grouped by
    caller -> callee. Reads only; nothing is saved.

    Any logged-in user may ask, but the counts cover only the traffic they may see
    (``monitoring.whatif``, "Who sees which traffic"): staff, superusers and holders of
    ``monitoring.view_task`` get all recorded traffic (``"traffic": "all"``), anyone else
    only the tasks they started (``"traffic": "your tasks"``)."""

    parser_classes = api_fields.JSON_BODY_ONLY

    permission_classes = [IsAuthenticated]
    kind: MatrixKind = INVOKE

    @extend_schema(request=WhatIfSerializer, responses=OpenApiTypes.OBJECT)
    @query_parameters(PROJECT_PARAM, OpenApiParameter("days", integer(1, MAX_DAYS), description="1..90, default 7"))
    def post(self, request: Request) -> Response:
        project = project_scope(request)
        days = days_param(request)
        data = api_fields.read_body(WhatIfSerializer, request.data)
        cells = parse_cells(self.kind, data["matrix"], role_slugs(), allow_null=project is not None, project=project)
        return Response(what_if(self.kind, project, cells, days, viewer=request.user))


class InvokeWhatIfView(WhatIfView):
    kind = INVOKE


class ToolWhatIfView(WhatIfView):
    kind = TOOL
