"""Prompt templates (PRD §4.5): versions, diff, rollback, activate, preview, layered render."""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import parsers, serializers, status
from rest_framework.exceptions import NotFound
from rest_framework.permissions import SAFE_METHODS, BasePermission, IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from capabilities.models import AgentRole
from monitoring.prompt_impact import prompt_impact
from monitoring.task_prompts import task_inputs
from prompts.access import can_edit_prompts
from prompts.actions import activate, check_content, rollback, save_version
from prompts.diff import diff_texts
from prompts.queries import (
    NotFoundError,
    check_template_type,
    find_template,
    get_project,
    get_role,
    get_version,
    role_overview,
    version_document,
    versions_of,
)
from prompts.render import MAX_TEMPLATE_CHARS, PromptRenderError
from prompts.versions import BUMPS, VersionError, parse
from team.prompt_preview import preview_role
from teamclaw import api_fields
from teamclaw.api_errors import error_response
from teamclaw.api_parsers import SafeJSONParser
from teamclaw.api_query import StrictPagination, query_parameters
from web.api.governance import RefusalAudit

PROJECT_PARAM = OpenApiParameter(
    "project", str, description="Project slug: its override layer instead of the global one."
)


class CanEditPrompts(BasePermission):
    """Reads for any logged-in user; changes for prompt editors only."""

    message = "changing prompts needs staff status or the prompts.add_promptversion permission"

    def has_permission(self, request: Request, view: Any) -> bool:
        if request.method in SAFE_METHODS:
            return bool(request.user and request.user.is_authenticated)
        return can_edit_prompts(request.user)


PARSERS = [SafeJSONParser, parsers.FormParser, parsers.MultiPartParser]


class SaveVersionSerializer(api_fields.StrictSerializer):
    content = api_fields.StrictCharField(allow_blank=True, trim_whitespace=False, max_length=MAX_TEMPLATE_CHARS)
    bump = api_fields.StrictChoiceField(choices=BUMPS, default="patch")
    version = api_fields.StrictCharField(required=False, allow_blank=True, max_length=64)
    variables = serializers.JSONField(required=False, allow_null=True)
    language = api_fields.StrictCharField(required=False, allow_blank=True, max_length=16)
    note = api_fields.StrictCharField(required=False, allow_blank=True, max_length=500)
    project = api_fields.StrictSlugField(required=False, allow_blank=True, allow_null=True)
    activate = api_fields.StrictBooleanField(default=True)
    base_version = api_fields.StrictCharField(required=False, allow_blank=True, max_length=64)


class RollbackSerializer(api_fields.StrictSerializer):
    version = api_fields.StrictCharField(max_length=64)
    bump = api_fields.StrictChoiceField(choices=BUMPS, default="patch")
    note = api_fields.StrictCharField(required=False, allow_blank=True, max_length=500)
    project = api_fields.StrictSlugField(required=False, allow_blank=True, allow_null=True)
    base_version = api_fields.StrictCharField(required=False, allow_blank=True, max_length=64)


class ActivateSerializer(api_fields.StrictSerializer):
    version = api_fields.StrictCharField(max_length=64)
    note = api_fields.StrictCharField(required=False, allow_blank=True, max_length=500)
    project = api_fields.StrictSlugField(required=False, allow_blank=True, allow_null=True)


class RenderSerializer(api_fields.StrictSerializer):
    variables = serializers.DictField(required=False, default=dict)
    project = api_fields.StrictSlugField(required=False, allow_blank=True, allow_null=True)
    task_id = api_fields.StrictCharField(required=False, allow_blank=True, max_length=64)
    task_description = api_fields.StrictCharField(required=False, allow_blank=True, max_length=2000)
    prompt_enhancement = api_fields.StrictCharField(
        required=False, allow_blank=True, max_length=20_000, trim_whitespace=False
    )


class PreviewSerializer(api_fields.StrictSerializer):
    content = api_fields.StrictCharField(allow_blank=True, trim_whitespace=False, max_length=MAX_TEMPLATE_CHARS)
    variables = serializers.JSONField(required=False, allow_null=True)
    values = serializers.DictField(required=False, default=dict)
    project = api_fields.StrictSlugField(required=False, allow_blank=True, allow_null=True)


def _render_error(exc: PromptRenderError, content_field: str = "content") -> Response:
    if exc.field not in ("content", "variables"):
        key = f"variables.{exc.field}"
    elif exc.template_type:
        key = f"{exc.template_type}.{exc.field}"
    else:
        key = content_field
    extra: dict[str, Any] = {"kind": exc.kind, "line": exc.line}
    if exc.suggestions:  # a misspelt name: {"audeince": ["audience"]} (issue 31)
        extra["suggestions"] = {exc.field: exc.suggestions}
    if exc.template_type:
        extra.update(template_type=exc.template_type, layer=exc.layer)
    return error_response(exc.message, {key: [exc.reason]}, status.HTTP_400_BAD_REQUEST, **extra)


def _lookup(role: str, template_type: str | None = None) -> AgentRole:
    """The role (and that its ``template_type`` exists); 404 naming what does not exist."""
    if template_type is not None:
        check_template_type(template_type)
    return get_role(role)


def _project(slug: str | None, *, query: bool = False) -> Any:
    """The project ``slug`` names: unknown is a 404 in a query string, a 400 in a body."""
    try:
        return get_project(slug)
    except NotFoundError as exc:
        if query:
            raise NotFound(exc.reason) from None
        raise serializers.ValidationError({"project": [exc.reason]}) from None


def _template_summary(row: Any) -> dict[str, Any]:
    return {
        "template_type": row.template_type,
        "active": version_document(row.base),
        "versions": row.base_count,
        "project_override": version_document(row.override) if row.project else None,
        "project_versions": row.override_count if row.project else None,
    }


class PromptRoleListView(APIView):
    """Every role with the active version of each of its six templates."""

    permission_classes = [IsAuthenticated]

    @extend_schema(operation_id="prompts_list", parameters=[PROJECT_PARAM], responses=OpenApiTypes.OBJECT)
    def get(self, request: Request) -> Response:
        project = _project(request.query_params.get("project"), query=True)
        roles = [
            {
                "role": role.role,
                "display_name": role.display_name,
                "templates": {r.template_type: _template_summary(r)["active"] for r in role_overview(role, project)},
            }
            for role in AgentRole.objects.all()
        ]
        return Response({"count": len(roles), "roles": roles, "project": project.slug if project else None})


class PromptRoleView(APIView):
    """``GET /prompts/{role}``: the six template types with their active versions (and, with
    ``?project=``, that project's override layer)."""

    permission_classes = [IsAuthenticated]

    @extend_schema(parameters=[PROJECT_PARAM], responses=OpenApiTypes.OBJECT)
    def get(self, request: Request, role: str) -> Response:
        obj = _lookup(role)
        project = _project(request.query_params.get("project"), query=True)
        rows = role_overview(obj, project)
        return Response(
            {
                "role": obj.role,
                "display_name": obj.display_name,
                "project": project.slug if project else None,
                "templates": [_template_summary(r) for r in rows],
            }
        )


class PromptVersionsView(RefusalAudit):
    """``GET``: a template's versions, newest first (paginated). ``POST {content, bump?,
    version?, variables?, language?, note?, project?, activate?, base_version?}``: save a new
    version -> 201 with the version, ``undeclared_variables``, ``warnings`` (declared variables
    the content does not use among them) and the new ``config_version``. ``variables`` are the
    new version's declarations as sent; absent or null: none, never the active version's
    (``prompts.actions.save_version`` says why)."""

    refusal_types = {"POST": "prompt"}

    permission_classes = [CanEditPrompts]
    parser_classes = PARSERS

    @extend_schema(operation_id="prompts_versions_list", responses=OpenApiTypes.OBJECT)
    @query_parameters(PROJECT_PARAM, paginated=True)
    def get(self, request: Request, role: str, template_type: str) -> Response:
        obj = _lookup(role, template_type)
        project = _project(request.query_params.get("project"), query=True)
        template = find_template(obj, template_type, project)
        paginator = StrictPagination()
        page = paginator.paginate_queryset(versions_of(template), request, view=self)
        return paginator.get_paginated_response([version_document(v) for v in page or []])

    @extend_schema(request=SaveVersionSerializer, responses={201: OpenApiTypes.OBJECT})
    def post(self, request: Request, role: str, template_type: str) -> Response:
        obj = _lookup(role, template_type)
        data = SaveVersionSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        result = save_version(
            role=obj,
            template_type=template_type,
            content=values["content"],
            actor=request.user,
            bump=values["bump"],
            version=values.get("version") or None,
            variables=values.get("variables"),
            language=values.get("language") or None,
            note=values.get("note", ""),
            project=_project(values.get("project")),
            activate=values["activate"],
            base_version=values.get("base_version"),
        )
        body = {
            **(version_document(result.version) or {}),
            "undeclared_variables": result.undeclared,
            "warnings": result.warnings,
            "config_version": result.change.new_version,
        }
        return Response(body, status=status.HTTP_201_CREATED)


class PromptVersionView(APIView):
    """One version of a template."""

    permission_classes = [IsAuthenticated]

    @extend_schema(parameters=[PROJECT_PARAM], responses=OpenApiTypes.OBJECT)
    def get(self, request: Request, role: str, template_type: str, version: str) -> Response:
        obj = _lookup(role, template_type)
        template = find_template(obj, template_type, _project(request.query_params.get("project"), query=True))
        return Response(version_document(get_version(template, version)))


class PromptDiffView(APIView):
    """``GET ?from=X&to=Y``: unified text, side-by-side rows (changed words marked) and the
    same rows as an escaped HTML table."""

    permission_classes = [IsAuthenticated]

    @extend_schema(
        parameters=[
            PROJECT_PARAM,
            OpenApiParameter("from", str, required=True),
            OpenApiParameter("to", str, required=True),
        ],
        responses=OpenApiTypes.OBJECT,
    )
    def get(self, request: Request, role: str, template_type: str) -> Response:
        obj = _lookup(role, template_type)
        project = _project(request.query_params.get("project"), query=True)
        missing = {
            name: ["this query parameter is required"] for name in ("from", "to") if not request.query_params.get(name)
        }
        if missing:
            return error_response(f"{next(iter(missing))}: this query parameter is required", missing)
        template = find_template(obj, template_type, project)
        found = {}
        for name in ("from", "to"):
            try:
                found[name] = get_version(template, request.query_params[name])
            except NotFoundError as exc:
                return error_response(f"{name}: {exc.reason}", {name: [exc.reason]}, status.HTTP_404_NOT_FOUND)
        old, new = found["from"], found["to"]
        label = f"{obj.role}/{template_type}" + (f" ({project.slug})" if project else "")
        diff = diff_texts(
            old.content, new.content, old_label=f"{label} {old.version}", new_label=f"{label} {new.version}"
        )
        return Response(
            {
                "from": old.version,
                "to": new.version,
                "identical": diff.identical,
                "added": diff.added,
                "removed": diff.removed,
                "unified": diff.unified,
                "rows": [row.as_dict() for row in diff.rows],
                "html": diff.html(),
                "variables": {"from": old.variables, "to": new.variables, "changed": old.variables != new.variables},
                "language": {"from": old.language, "to": new.language, "changed": old.language != new.language},
            }
        )


class PromptRollbackView(RefusalAudit):
    """``POST {version, bump?, note?, project?, base_version?}``: a new active version with
    ``version``'s content, marked as a rollback to it -> 201."""

    refusal_types = {"POST": "prompt"}

    permission_classes = [CanEditPrompts]
    parser_classes = PARSERS

    @extend_schema(request=RollbackSerializer, responses={201: OpenApiTypes.OBJECT})
    def post(self, request: Request, role: str, template_type: str) -> Response:
        obj = _lookup(role, template_type)
        data = RollbackSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        result = rollback(
            role=obj,
            template_type=template_type,
            version=values["version"],
            actor=request.user,
            project=_project(values.get("project")),
            bump=values["bump"],
            note=values.get("note"),
            base_version=values.get("base_version"),
        )
        body = {**(version_document(result.version) or {}), "config_version": result.change.new_version}
        return Response(body, status=status.HTTP_201_CREATED)


class PromptActivateView(RefusalAudit):
    """``POST {version, note?, project?}``: make a draft (a version newer than the active one)
    active -> 200."""

    refusal_types = {"POST": "prompt"}

    permission_classes = [CanEditPrompts]
    parser_classes = PARSERS

    @extend_schema(request=ActivateSerializer, responses=OpenApiTypes.OBJECT)
    def post(self, request: Request, role: str, template_type: str) -> Response:
        obj = _lookup(role, template_type)
        data = ActivateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        result = activate(
            role=obj,
            template_type=template_type,
            version=values["version"],
            actor=request.user,
            project=_project(values.get("project")),
            note=values.get("note"),
        )
        return Response({**(version_document(result.version) or {}), "config_version": result.change.new_version})


class PromptImpactView(APIView):
    """``GET ?version=&project=``: the blast radius of making ``version`` (omitted: a version
    not saved yet) the active one of this layer, before save, activate or rollback: the
    projects that will use it, the running contexts that keep their pinned version until
    their next task, and the 20 most recent tasks that ran on the version being replaced with
    their tokens (``monitoring.prompt_impact``; the prompt version of a task is derived from
    its pinned config version and the audited activations). Also whether ``version`` may be
    activated (``can_activate``, ``refusal``). Tasks and contexts are those the caller may
    see. Unknown role, type, project or version: 404; a malformed version: 400."""

    permission_classes = [IsAuthenticated]

    @extend_schema(
        parameters=[
            PROJECT_PARAM,
            OpenApiParameter("version", str, description="The version to activate or roll back to."),
        ],
        responses=OpenApiTypes.OBJECT,
    )
    def get(self, request: Request, role: str, template_type: str) -> Response:
        obj = _lookup(role, template_type)
        project = _project(request.query_params.get("project"), query=True)
        wanted = request.query_params.get("version", "")
        candidate = None
        if wanted:
            try:
                parse(wanted)
            except VersionError as exc:
                return error_response(f"version: {exc}", {"version": [str(exc)]})
            candidate = get_version(find_template(obj, template_type, project), wanted)
        return Response(prompt_impact(obj, template_type, project, candidate, user=request.user).as_dict())


class PromptPreviewView(APIView):
    """``POST {content, variables?, values?, project?}``: render unsaved content in the
    sandbox with the role's standard variables (for ``project``) and ``values`` ->
    ``{text, undeclared_variables, warnings}``; refused content is a 400 naming the reason."""

    permission_classes = [IsAuthenticated]
    parser_classes = PARSERS

    @extend_schema(request=PreviewSerializer, responses=OpenApiTypes.OBJECT)
    def post(self, request: Request, role: str, template_type: str) -> Response:
        obj = _lookup(role, template_type)
        data = PreviewSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        project = _project(values.get("project"))
        checked = check_content(
            values["content"], values.get("variables"), role=obj, project=project, values=values["values"]
        )
        if checked.error is not None:
            return _render_error(checked.error)
        return Response(
            {"text": checked.text, "undeclared_variables": checked.undeclared, "warnings": checked.warnings}
        )


class PromptRenderView(APIView):
    """``POST /prompts/{role}/render {variables?, project?, task_id?, task_description?,
    prompt_enhancement?}`` -> ``{final, layers, task_enhancement, config_version, ...}``: the
    role's prompt as its agent would get it. ``task_id`` supplies the task's project,
    description and prompt enhancement (explicit fields win)."""

    permission_classes = [IsAuthenticated]
    parser_classes = PARSERS

    @extend_schema(request=RenderSerializer, responses=OpenApiTypes.OBJECT)
    def post(self, request: Request, role: str) -> Response:
        obj = _lookup(role)
        data = RenderSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        project = _project(values.get("project"))
        description = values.get("task_description", "")
        enhancement = values.get("prompt_enhancement")
        if values.get("task_id"):
            project, description, enhancement = task_inputs(values["task_id"], project, description, enhancement)
        try:
            preview = preview_role(
                obj.role,
                project=project,
                values=values["variables"],
                task_description=description,
                prompt_enhancement=enhancement or "",
            )
        except PromptRenderError as exc:
            return _render_error(exc)
        return Response(preview.as_dict())
