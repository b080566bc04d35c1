"""Roles (PRD §4.1 AgentRoleDefinition): list, one, create (US-09), edit or switch per
project, delete a custom one; and which executor and model run a role (PRD §4.7)."""

from __future__ import annotations

from typing import Any

from django.http import QueryDict
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_field
from rest_framework import status
from rest_framework.exceptions import NotFound, PermissionDenied, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from capabilities.access import CanChangeConfig
from capabilities.errors import StaleVersion
from capabilities.executors import model_status, role_executor, role_kinds, set_role_executor
from capabilities.models import ROLE_SLUG, AgentRole, Project, RoleExecutor
from capabilities.registry import role_definition
from capabilities.role_constraints import bounds
from capabilities.roles import MAX_RESPONSIBILITIES, RESERVED_SLUGS, delete_role
from team.config_schema import constraint_fields_schema, openapi_schema
from team.roles import create_role, role_document, update_role
from teamclaw import api_fields, plain_text
from teamclaw.api_query import integer
from teamclaw.runtime.config import TOOLS
from teamclaw.whole_numbers import whole_number
from web.api.governance import PROJECT_PARAM, RefusalAudit, with_current
from web.api.lookup import found
from web.scope import project_scope, scoped_snapshot


@extend_schema_field(openapi_schema(constraint_fields_schema(project=False)))
class NewRoleConstraintsField(api_fields.PassThroughField):
    """A new role's constraint values ``{field: value}`` (PRD §4.7), checked by
    ``capabilities.roles.check_new_role`` (400 naming ``constraints.<field>``)."""


_PLAIN = plain_text.PLAIN_TEXT_PATTERN
_BREAKS = "\\n\\r\\x85\\u2028\\u2029"
_LINE = f"[^{_BREAKS}{plain_text.HIDDEN_CHARACTERS.pattern[1:-1]}]{{0,200}}"
RESPONSIBILITY_LINES = f"^{_LINE}(?:[{_BREAKS}]+{_LINE}){{0,{MAX_RESPONSIBILITIES - 1}}}$"
"""Responsibilities sent as one text: at most ``MAX_RESPONSIBILITIES`` lines of 200 plain characters."""
_ROLES = {"type": "array", "items": {"type": "string"}, "nullable": True}
_TOOLS = {"type": "array", "items": {"type": "string", "enum": list(TOOLS)}, "nullable": True}
PERMISSIONS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "nullable": True,
    "description": "PRD §4.1 PermissionSet. can_invoke and can_be_invoked_by name existing roles (or the new "
    "one); a tool may be in one of the three tool lists only; a role that may invoke itself needs "
    "max_concurrent_instances >= 2. Each refusal is a 400 naming permissions.<field>.",
    "properties": {
        "can_invoke": _ROLES,
        "can_be_invoked_by": {**_ROLES, "description": "Default [main]."},
        "allowed_tools": _TOOLS,
        "denied_tools": _TOOLS,
        "requires_user_confirmation": _TOOLS,
        "max_concurrent_instances": {"type": "integer", **bounds()["max_concurrent_instances"]},
    },
}


class RoleCreateSerializer(api_fields.DocumentSerializer):
    """A custom role (US-09): checked as a whole by ``capabilities.roles.check_new_role``
    (every problem at once, each naming its field); each field's schema says what it takes."""

    envelope = ("note",)
    role = api_fields.DocumentedField(
        {"type": "string", "pattern": ROLE_SLUG, "not": {"enum": sorted(RESERVED_SLUGS)}},
        documented_required=True,
        help_text="The new role's slug; a slug a role has (in any case) is refused (400 naming role).",
    )
    display_name = api_fields.DocumentedField(
        {"type": "string", "maxLength": 100, "pattern": plain_text.NON_BLANK_PLAIN_TEXT_PATTERN},
        documented_required=True,
    )
    emoji = api_fields.DocumentedField({"type": "string", "maxLength": 16, "pattern": _PLAIN})
    description = api_fields.DocumentedField({"type": "string", "maxLength": 2000, "pattern": _PLAIN})
    responsibilities = api_fields.DocumentedField(
        {
            "nullable": True,
            "anyOf": [
                {
                    "type": "array",
                    "maxItems": MAX_RESPONSIBILITIES,
                    "items": {"type": "string", "maxLength": 200, "pattern": _PLAIN},
                },
                {"type": "string", "pattern": RESPONSIBILITY_LINES},
            ],
        },
        help_text="A list of lines, or one text with a line each",
    )
    capabilities = api_fields.DocumentedField(
        {"type": "array", "items": {"type": "string"}, "nullable": True},
        help_text="Existing capability ids (not a skill's) it will also offer (400 naming capabilities otherwise)",
    )
    permissions = api_fields.DocumentedField(PERMISSIONS_SCHEMA)
    constraints = NewRoleConstraintsField(
        required=False,
        help_text="PRD §4.7 constraint fields; the defaults for the rest (memory_tokens null = the process "
        "default TEAMCLAW_MEMORY_TOKENS)",
    )
    copy_prompts_from = api_fields.DocumentedField(
        {"type": "string", "nullable": True},
        help_text="An existing role whose prompts to copy (400 naming copy_prompts_from otherwise); blank: none",
    )
    note = api_fields.ChangeNoteField()


class RoleEditSerializer(api_fields.DocumentSerializer):
    """A role edit (globally any field; in a project only ``enabled``, ``null`` = inherit)."""

    version = api_fields.DocumentVersionField(help_text="The version you loaded.")
    display_name = api_fields.PassThroughField(required=False)
    emoji = api_fields.PassThroughField(required=False)
    description = api_fields.PassThroughField(required=False)
    responsibilities = api_fields.PassThroughField(required=False)
    display_name_zh = api_fields.PassThroughField(required=False, help_text="The name in Chinese (blank: the English)")
    description_zh = api_fields.PassThroughField(required=False, help_text="The description in Chinese")
    responsibilities_zh = api_fields.PassThroughField(required=False, help_text="The responsibilities in Chinese")
    enabled = api_fields.PassThroughField(required=False)
    note = api_fields.ChangeNoteField()


class RoleDeleteSerializer(api_fields.ObjectBodySerializer):
    """``{version, note?}`` (``version`` may come as a query parameter instead)."""

    version = api_fields.DocumentVersionField()
    note = api_fields.ChangeNoteField()


class RoleExecutorSerializer(api_fields.ObjectBodySerializer):
    """``{executor, model, endpoint}``: blank (or null) inherits."""

    executor = api_fields.PassThroughField(required=False, allow_null=True)
    model = api_fields.PassThroughField(required=False, allow_null=True)
    endpoint = api_fields.PassThroughField(required=False, allow_null=True)


class RoleListView(RefusalAudit):
    """All roles as PRD §4.1 AgentRoleDefinitions; POST creates a custom role (US-09)."""

    parser_classes = api_fields.JSON_BODY_ONLY

    permission_classes = [CanChangeConfig]
    config_actions = {"POST": "role_create"}

    @extend_schema(operation_id="roles_list", parameters=[PROJECT_PARAM], responses=OpenApiTypes.OBJECT)
    def get(self, request: Request) -> Response:
        snapshot = scoped_snapshot(request)
        roles = [role_definition(snapshot, role) for role in AgentRole.objects.all()]
        return Response({"count": len(roles), "roles": roles, "config_version": snapshot.version})

    @extend_schema(request=RoleCreateSerializer, responses={201: OpenApiTypes.OBJECT})
    def post(self, request: Request) -> Response:
        return role_post(request)


class RoleDetailView(RefusalAudit):
    """One role's AgentRoleDefinition: capabilities, permissions, constraints, prompt config;
    PATCH edits it (or switches it for ``?project=``), DELETE removes a custom role."""

    permission_classes = [CanChangeConfig]
    config_actions = {"PATCH": "role", "DELETE": "role_delete"}

    @extend_schema(parameters=[PROJECT_PARAM], responses=OpenApiTypes.OBJECT)
    def get(self, request: Request, role: str) -> Response:
        obj = found(AgentRole, "role", role=role)
        return Response(role_get(request, obj, role_definition(scoped_snapshot(request), obj)))

    @extend_schema(parameters=[PROJECT_PARAM], request=RoleEditSerializer, responses=OpenApiTypes.OBJECT)
    def patch(self, request: Request, role: str) -> Response:
        return role_patch(request, role)

    @extend_schema(parameters=[OpenApiParameter("version", integer(0))], responses={204: None})
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


class RoleExecutorView(RefusalAudit):
    """A role's executor (docs/architecture.md §8): what runs each of its capabilities and on which model,
    globally or for ``?project=``. PUT ``{executor, model, endpoint}`` (blank = inherit) changes
    the choice (staff only; audited, PRD §4.8). Keys are never part of the answer."""

    refusal_types = {"PUT": "role"}

    @extend_schema(parameters=[PROJECT_PARAM], responses=OpenApiTypes.OBJECT)
    def get(self, request: Request, role: str) -> Response:
        return Response(_executor_body(found(AgentRole, "role", role=role), request))

    @extend_schema(parameters=[PROJECT_PARAM], request=RoleExecutorSerializer, responses=OpenApiTypes.OBJECT)
    def put(self, request: Request, role: str) -> Response:
        if not request.user.is_staff:
            raise PermissionDenied("changing the configuration needs staff permission")
        obj = found(AgentRole, "role", role=role)
        slug = request.query_params.get("project") or None
        project = Project.objects.filter(slug=slug).first() if slug else None
        if slug and project is None:
            raise NotFound(f"project '{slug}' does not exist")
        if not isinstance(request.data, dict):
            raise ValidationError({"non_field_errors": ["send a JSON object with executor, model and endpoint"]})
        data = api_fields.read_body(RoleExecutorSerializer, request.data)
        values: dict[str, Any] = {
            name: data.get(name) if data.get(name) is not None else "" for name in EXECUTOR_FIELDS
        }
        set_role_executor(obj, project, actor=request.user, **values)
        return Response(_executor_body(obj, request))


def role_get(request: Request, role: AgentRole, definition: dict[str, Any]) -> dict[str, Any]:
    """The role's definition plus its document ``version`` and enabled layers."""
    return role_document(role, project_scope(request), definition)


def role_post(request: Request) -> Response:
    """``POST /api/v1/roles``: create a custom role (US-09); 201 with its definition."""
    data = api_fields.read_body(RoleCreateSerializer, request.data)
    result = create_role(data["document"], note=data["note"], actor=request.user)
    return Response(result.document, status=status.HTTP_201_CREATED)


def role_patch(request: Request, role: str) -> Response:
    """``PATCH /api/v1/roles/{role}?project=``: edit a role or switch it for a project."""
    obj = found(AgentRole, "role", role=role)
    project = project_scope(request)
    data = api_fields.read_body(RoleEditSerializer, request.data)
    try:
        result = update_role(
            obj,
            project=project,
            version=data["version"],
            data=data["document"],
            note=data["note"],
            actor=request.user,
        )
    except StaleVersion as exc:
        raise with_current(exc, role_document(obj, project)) from None
    return Response({**result.document, "changed": bool(result.change)})


def role_delete(request: Request, role: str) -> Response:
    """``DELETE /api/v1/roles/{role}?version=``: delete a custom role (built-in: 400)."""
    obj = found(AgentRole, "role", role=role)
    if request.query_params.get("project"):
        raise ValidationError({"project": ["roles are deleted globally; disable the role for a project instead"]})
    # The body (JSON or a form, whose csrfmiddlewaretoken stays allowed) with ``?version=``
    # taking the place of the body's version.
    body = request.data
    data: Any = body.copy() if isinstance(body, QueryDict) else dict(body) if isinstance(body, dict) else {}
    raw = request.query_params.get("version")
    if raw is not None:
        data["version"] = whole_number(raw, "version")
    elif "version" not in data:
        data["version"] = None
    values = api_fields.read_body(RoleDeleteSerializer, data)
    try:
        delete_role(obj, version=values["version"], note=values["note"], actor=request.user)
    except StaleVersion as exc:
        raise with_current(exc, role_document(obj)) from None
    return Response(status=status.HTTP_204_NO_CONTENT)
