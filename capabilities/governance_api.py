"""REST API for governance (issue 5): matrices, constraints, role and card edits, projects,
the audit trail and the what-if analysis (PRD §4.1, §4.7, §4.8; US-06, US-07, US-09).

Reads need a login; writes need the staff flag or the matching Django permission
(``capabilities.access``). Every write takes the ``version`` the client loaded and answers
409 with the changes saved since when it is stale; bad input is a 400 naming each field.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.http import HttpResponse
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.pagination import PageNumberPagination
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from capabilities.access import CanChangeConfig
from capabilities.audit import change_document, filter_changes
from capabilities.card_settings import capability_document, update_capability
from capabilities.errors import ConfigInvalid, StaleVersion
from capabilities.matrices import INVOKE, TOOL, MatrixKind, matrix_document, parse_cells, role_slugs, save_matrix
from capabilities.models import AgentRole, CapabilityCard, Project
from capabilities.role_constraints import constraints_document, save_constraints
from capabilities.roles import delete_role
from capabilities.safe_yaml import DocumentError, guess_format, load_document, max_config_bytes
from capabilities.whatif import DEFAULT_DAYS, MAX_DAYS, what_if
from team.config_export import dump, export_document
from team.config_import import import_config
from team.config_schema import config_document_schema
from team.projects import create_project, project_document, update_project
from team.roles import create_role, role_document, update_role
from teamclaw import api_fields
from teamclaw.api_errors import error_response
from teamclaw.json_types import json_type_name

PROJECT_PARAM = OpenApiParameter("project", str, description="Project slug: that project's layer (overrides).")
NOTE_MAX = 2000


def project_param(request: Request) -> Project | None:
    """The project named by ``?project=`` (None when absent); 404 naming an unknown slug."""
    slug = request.query_params.get("project") or None
    if slug is None:
        return None
    project = Project.objects.filter(slug=slug).first()
    if project is None:
        raise NotFound(f"project '{slug}' does not exist")
    return project


def body(request: Request, fields: Iterable[str] | None) -> dict[str, Any]:
    """The JSON object body; 400 when it is not an object or has a key outside ``fields``.

    ``fields`` are the envelope's keys (what each value holds is checked by the domain code it
    goes to); None when that domain code refuses unknown keys itself, listed with every other
    problem of the body (roles, cards, projects)."""
    data = request.data
    if not isinstance(data, dict):
        raise ValidationError({"non_field_errors": ["the body must be a JSON object"]})
    if fields is not None:
        api_fields.refuse_unknown_fields(data, fields)
    return dict(data)


def version_of(data: dict[str, Any], field: str = "version") -> int:
    """The client's document version; 400 when missing or not a whole number >= 0."""
    value = data.pop(field, None)
    if value is None:
        raise ValidationError({field: ["this field is required: the version you loaded (optimistic concurrency)"]})
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValidationError({field: ["must be a whole number >= 0"]})
    return value


def note_of(data: dict[str, Any]) -> str:
    """The change note (optional, up to 2,000 characters)."""
    note = data.pop("note", "") or ""
    if not isinstance(note, str):
        raise ValidationError({"note": [f"must be a string, not {json_type_name(note)}"]})
    if len(note) > NOTE_MAX:
        raise ValidationError({"note": [f"must be at most {NOTE_MAX} characters"]})
    return note.strip()


def stale_response(exc: StaleVersion, current: dict[str, Any] | None = None) -> Response:
    """409 in the API error shape, with ``current_version``, ``your_version``, the
    ``changes`` saved since and, when given, the ``current`` document."""
    extra: dict[str, Any] = {"current_version": exc.current, "your_version": exc.expected, "changes": exc.changes}
    if current is not None:
        extra["current"] = current
    return error_response(str(exc), code=status.HTTP_409_CONFLICT, **extra)


class GovernanceView(APIView):
    """Base view: ``CanChangeConfig`` and ConfigInvalid -> 400, StaleVersion -> 409."""

    permission_classes = [CanChangeConfig]
    config_actions: dict[str, str] = {}

    def current_document(self, request: Request) -> dict[str, Any] | None:
        return None

    def handle_exception(self, exc: Exception) -> Response:
        if isinstance(exc, ConfigInvalid):
            return error_response(exc.detail, exc.errors)
        if isinstance(exc, StaleVersion):
            return stale_response(exc, self.current_document(self.request))
        return super().handle_exception(exc)


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
        return matrix_document(self.kind, project_param(request))

    def get(self, request: Request) -> Response:
        return Response(matrix_document(self.kind, project_param(request)))

    def put(self, request: Request) -> Response:
        project = project_param(request)
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
        project = project_param(request)
        days = days_param(request)
        data = body(request, WHAT_IF.fields)
        cells = parse_cells(self.kind, data.get("matrix", {}), role_slugs(), allow_null=project is not None)
        return Response(what_if(self.kind, project, cells, days))


class InvokeWhatIfView(WhatIfView):
    kind = INVOKE


class ToolWhatIfView(WhatIfView):
    kind = TOOL


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
        return constraints_document(get_object_or_404(AgentRole, role=self.kwargs["role"]), project_param(request))

    @extend_schema(parameters=[PROJECT_PARAM], responses=OpenApiTypes.OBJECT)
    def get(self, request: Request, role: str) -> Response:
        return Response(constraints_document(get_object_or_404(AgentRole, role=role), project_param(request)))

    @extend_schema(
        parameters=[PROJECT_PARAM],
        request=CONSTRAINTS_SAVE,
        responses=OpenApiTypes.OBJECT,
    )
    def put(self, request: Request, role: str) -> Response:
        obj = get_object_or_404(AgentRole, role=role)
        project = project_param(request)
        data = body(request, CONSTRAINTS_SAVE.fields)
        version = version_of(data)
        note = note_of(data)
        if "constraints" not in data:
            raise ValidationError({"constraints": ["this field is required"]})
        result = save_constraints(
            obj, project=project, version=version, values=data["constraints"], note=note, actor=request.user
        )
        return Response({**result.document, "changed": bool(result.change)})


def role_get(request: Request, role: AgentRole, definition: dict[str, Any]) -> dict[str, Any]:
    """The role's definition plus its document ``version`` and enabled layers."""
    return role_document(role, project_param(request), definition)


def capability_get(request: Request, capability_id: str, document: dict[str, Any]) -> dict[str, Any]:
    """The card plus its ``document_version`` and enabled layers."""
    card = get_object_or_404(CapabilityCard, capability_id=capability_id)
    return capability_document(card, project_param(request), document)


def role_post(request: Request) -> Response:
    """``POST /api/v1/roles``: create a custom role (US-09); 201 with its definition."""
    data = body(request, None)  # check_new_role refuses unknown keys
    note = note_of(data)
    try:
        result = create_role(data, note=note, actor=request.user)
    except ConfigInvalid as exc:
        return error_response(exc.detail, exc.errors)
    return Response(result.document, status=status.HTTP_201_CREATED)


def role_patch(request: Request, role: str) -> Response:
    """``PATCH /api/v1/roles/{role}?project=``: edit a role or switch it for a project."""
    obj = get_object_or_404(AgentRole, role=role)
    project = project_param(request)
    data = body(request, None)  # check_role_edit refuses unknown keys
    version = version_of(data)
    note = note_of(data)
    try:
        result = update_role(obj, project=project, version=version, data=data, note=note, actor=request.user)
    except ConfigInvalid as exc:
        return error_response(exc.detail, exc.errors)
    except StaleVersion as exc:
        return stale_response(exc, role_document(obj, project))
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
    except ConfigInvalid as exc:
        return error_response(exc.detail, exc.errors)
    except StaleVersion as exc:
        return stale_response(exc, role_document(obj))
    return Response(status=status.HTTP_204_NO_CONTENT)


def capability_patch(request: Request, capability_id: str) -> Response:
    """``PATCH /api/v1/capabilities/{id}?project=``: edit a card or switch it (US-06).
    The concurrency field is ``document_version`` (``version`` is the card's SemVer)."""
    card = CapabilityCard.objects.filter(capability_id=capability_id).first()
    if card is None:
        raise NotFound(f"capability '{capability_id}' does not exist")
    project = project_param(request)
    data = body(request, None)  # check_card_edit refuses unknown keys
    version = version_of(data, "document_version")
    note = note_of(data)
    try:
        result = update_capability(card, project=project, version=version, data=data, note=note, actor=request.user)
    except ConfigInvalid as exc:
        return error_response(exc.detail, exc.errors)
    except StaleVersion as exc:
        return stale_response(exc, capability_document(card, project))
    return Response({**result.document, "changed": bool(result.change)})


class ProjectListView(GovernanceView):
    """Projects (``GET``) and creating one (``POST {slug, name, description, tech_stack,
    working_directory, note}`` -> 201)."""

    config_actions = {"POST": "project_create"}

    @extend_schema(operation_id="projects_list", responses=OpenApiTypes.OBJECT)
    def get(self, request: Request) -> Response:
        projects = [project_document(p) for p in Project.objects.all()]
        return Response({"count": len(projects), "projects": projects})

    @extend_schema(
        request=inline_serializer(
            "ProjectCreate",
            {
                "slug": api_fields.StrictSlugField(),
                "name": api_fields.StrictCharField(),
                "description": api_fields.StrictCharField(required=False),
                "tech_stack": api_fields.StrictCharField(required=False),
                "working_directory": api_fields.StrictCharField(required=False),
                "note": api_fields.StrictCharField(required=False),
            },
        ),
        responses={201: OpenApiTypes.OBJECT},
    )
    def post(self, request: Request) -> Response:
        data = body(request, None)  # projects.check_fields refuses unknown keys
        note = note_of(data)
        result = create_project(data, note=note, actor=request.user)
        return Response(result.document, status=status.HTTP_201_CREATED)


class ProjectDetailView(GovernanceView):
    """One project with its override counts; ``PATCH {version, name?, description?,
    tech_stack?, working_directory?, note?}``."""

    config_actions = {"PATCH": "project"}

    def current_document(self, request: Request) -> dict[str, Any] | None:
        return project_document(get_object_or_404(Project, slug=self.kwargs["slug"]))

    @extend_schema(responses=OpenApiTypes.OBJECT)
    def get(self, request: Request, slug: str) -> Response:
        return Response(project_document(get_object_or_404(Project, slug=slug)))

    @extend_schema(request=OpenApiTypes.OBJECT, responses=OpenApiTypes.OBJECT)
    def patch(self, request: Request, slug: str) -> Response:
        project = get_object_or_404(Project, slug=slug)
        data = body(request, None)  # projects.check_fields refuses unknown keys
        version = version_of(data)
        note = note_of(data)
        result = update_project(project, version=version, data=data, note=note, actor=request.user)
        return Response({**result.document, "changed": bool(result.change)})


class ChangePagination(PageNumberPagination):
    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 200


class ConfigChangeListView(GovernanceView):
    """The audit trail (PRD §4.8), newest first, 50 a page: who, when, type, role, project,
    old -> new version, changed fields, ``changes {field: {old, new}}`` and the note.
    Filters: ``config_type``, ``project``, ``role``, ``actor``, ``since_version``."""

    @extend_schema(
        parameters=[
            OpenApiParameter("config_type", str),
            OpenApiParameter("project", str, description="Project slug, or 'global' for global changes only."),
            OpenApiParameter("role", str),
            OpenApiParameter("actor", str, description="Username"),
            OpenApiParameter("since_version", int, description="Only changes with a newer version."),
            OpenApiParameter("page", int),
            OpenApiParameter("page_size", int),
        ],
        responses=OpenApiTypes.OBJECT,
    )
    def get(self, request: Request) -> Response:
        rows = filter_changes(request.query_params)
        paginator = ChangePagination()
        page = paginator.paginate_queryset(rows, request, view=self)
        return paginator.get_paginated_response([change_document(c) for c in page or []])


def _flag(request: Request, name: str, default: bool) -> bool:
    raw = (request.query_params.get(name) or "").strip().lower()
    if not raw:
        return default
    if raw in {"true", "1", "yes"}:
        return True
    if raw in {"false", "0", "no"}:
        return False
    raise ValidationError({name: ["must be true or false"]})


class DocumentFormatNegotiation(DefaultContentNegotiation):
    """Here ``?format=`` names the document format (yaml/json), not a DRF renderer:
    answer with the default (JSON) renderer whatever it says."""

    def select_renderer(self, request: Request, renderers: list[Any], format_suffix: str | None = None) -> Any:
        return renderers[0], renderers[0].media_type


class ConfigSchemaView(APIView):
    """The JSON Schema (2020-12) of import/export documents (US-10)."""

    @extend_schema(responses=OpenApiTypes.OBJECT)
    def get(self, request: Request) -> Response:
        return Response(config_document_schema())


class ConfigExportView(APIView):
    """Export roles, capabilities, matrices, constraints and prompts as YAML or JSON (US-10):
    globally, or one project's overrides (``?project=``); ``history=true`` adds every prompt
    version. Never contains executor settings or any secret."""

    content_negotiation_class = DocumentFormatNegotiation

    @extend_schema(
        parameters=[
            OpenApiParameter("format", str, enum=["yaml", "json"], description="default yaml"),
            PROJECT_PARAM,
            OpenApiParameter("history", bool, description="include every prompt version"),
        ],
        responses={(200, "application/yaml"): OpenApiTypes.STR, (200, "application/json"): OpenApiTypes.OBJECT},
    )
    def get(self, request: Request) -> HttpResponse:
        fmt = request.query_params.get("format") or "yaml"
        if fmt not in {"yaml", "json"}:
            raise ValidationError({"format": ["must be yaml or json"]})
        project = project_param(request)
        document = export_document(project, history=_flag(request, "history", False))
        name = f"teamclaw-config{'-' + project.slug if project else ''}-v{document['config_version']}.{fmt}"
        response = HttpResponse(
            dump(document, fmt),
            content_type="application/json; charset=utf-8" if fmt == "json" else "application/yaml; charset=utf-8",
        )
        response["Content-Disposition"] = f'attachment; filename="{name}"'
        return response


class ConfigImportView(GovernanceView):
    """Import a YAML or JSON document sent as the request body (US-10).

    The whole document is validated against ``GET /api/v1/config/schema`` and the current
    configuration first: every problem is listed by JSON pointer and nothing changes.
    ``dry_run=true`` returns the exact change list without applying it; otherwise all
    changes apply in one transaction as one config version. ``expected_version`` refuses
    (409) when the configuration moved since a reviewed dry run. ``format`` overrides the
    Content-Type; ``note`` goes to the audit trail.
    """

    config_actions = {"POST": "import"}
    parser_classes: list[type] = []
    content_negotiation_class = DocumentFormatNegotiation

    @extend_schema(
        parameters=[
            OpenApiParameter("dry_run", bool, description="default false"),
            OpenApiParameter("format", str, enum=["yaml", "json"]),
            OpenApiParameter("expected_version", int),
            OpenApiParameter("note", str),
        ],
        request={"application/yaml": OpenApiTypes.STR, "application/json": OpenApiTypes.OBJECT},
        responses=OpenApiTypes.OBJECT,
    )
    def post(self, request: Request) -> Response:
        params = request.query_params
        dry_run = _flag(request, "dry_run", False)
        fmt = params.get("format") or ""
        if fmt and fmt not in {"yaml", "json"}:
            raise ValidationError({"format": ["must be yaml or json"]})
        expected = params.get("expected_version")
        if expected is not None and not expected.isdigit():
            raise ValidationError({"expected_version": ["must be a whole number"]})
        note = params.get("note") or ""
        if len(note) > NOTE_MAX:
            raise ValidationError({"note": [f"must be at most {NOTE_MAX} characters"]})
        limit = max_config_bytes()
        length = request.META.get("CONTENT_LENGTH") or "0"
        if length.isdigit() and int(length) > limit:
            return error_response(
                f"the document is {int(length):,} bytes; the limit is {limit:,} bytes",
                {"document": [f"larger than {limit:,} bytes"]},
                code=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE,
            )
        try:
            raw = request.body
            data = load_document(raw, fmt or guess_format(raw[:64].decode("utf-8", "replace"), request.content_type))
        except DocumentError as exc:
            return error_response(f"the document cannot be read: {exc}", exc.errors)
        result = import_config(
            data,
            dry_run=dry_run,
            expected_version=int(expected) if expected is not None else None,
            note=note.strip(),
            actor=request.user,
        )
        return Response(result.as_dict())
