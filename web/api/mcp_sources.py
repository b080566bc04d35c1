"""MCP tool sources (issue 16; ``interop.mcp_sources``): MCP servers whose tools join the tool
permission matrix as ``mcp:<source>/<tool>`` (PRD §4.7), deny for every role until changed.

- ``GET /mcp-sources?project=``: the sources a scope sees (global ones and, with a project,
  its own), each with its state and tools; reading needs a login.
- ``POST /mcp-sources {name, project?, transport?, command?, args?, url?}`` (staff): register
  and discover at once -> 201 with the source (its ``state`` says whether discovery worked:
  ``connected`` or ``error`` with ``error``); a command outside the stdio allowlist or a URL
  outside the host allowlist is a 400 naming the field, and nothing is saved.
- ``GET /mcp-sources/{id}``, ``DELETE /mcp-sources/{id}`` (staff; removes its matrix cells too).
- ``POST /mcp-sources/{id}/refresh {note?}`` (staff): discover again -> the source.
- ``PUT /mcp-sources/{id}/credentials {bearer_token?, headers?}`` (staff): replace an http
  source's credentials (``{}`` removes them), audited by header name, then discover again.
  Credentials are also accepted at registration; a source document shows them masked
  (``interop.source_credentials``).
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.permissions import IsAdminUser, IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from capabilities.models import Project
from interop import mcp_sources, source_credentials
from interop.models import McpToolSource
from interop.source_credentials import MAX_HEADERS, MAX_VALUE_CHARS, VALUE_PATTERN
from teamclaw import api_fields
from teamclaw.api_errors import error_response
from teamclaw.runtime.mcp_tools import MAX_ARG_CHARS, MAX_ARGS, tool_name
from web.scope import project_scope


class McpSourceSerializer(api_fields.StrictSerializer):
    """A registration: ``name`` (slug), ``project`` (slug; blank or absent = global),
    ``transport`` (``stdio`` default, or ``http`` when only ``url`` is given), ``command`` and
    ``args`` for stdio, ``url`` for http."""

    name = api_fields.StrictCharField(max_length=40)
    project = api_fields.StrictCharField(required=False, allow_blank=True, allow_null=True, max_length=64)
    transport = api_fields.StrictChoiceField(choices=["stdio", "http"], required=False)
    command = api_fields.StrictCharField(required=False, allow_blank=True, max_length=200)
    args = serializers.ListField(
        child=api_fields.StrictCharField(max_length=MAX_ARG_CHARS, allow_blank=True),
        required=False,
        max_length=MAX_ARGS,
    )
    url = api_fields.StrictCharField(required=False, allow_blank=True, max_length=2000)
    bearer_token = api_fields.StrictCharField(required=False, max_length=MAX_VALUE_CHARS)
    headers = serializers.DictField(child=api_fields.StrictCharField(max_length=MAX_VALUE_CHARS), required=False)


class CredentialsSerializer(api_fields.StrictSerializer):
    """New credentials of an http source: ``bearer_token`` and/or ``headers``; neither removes them."""

    bearer_token = api_fields.StrictCharField(required=False, max_length=MAX_VALUE_CHARS)
    headers = serializers.DictField(child=api_fields.StrictCharField(max_length=MAX_VALUE_CHARS), required=False)


_CREDENTIALS = {
    "bearer_token": {
        "type": "string",
        "minLength": 1,
        "maxLength": MAX_VALUE_CHARS,
        "pattern": VALUE_PATTERN,
        "description": "Sent as Authorization: Bearer <token>; stored sealed, never shown back in full.",
    },
    "headers": {
        "type": "object",
        "maxProperties": MAX_HEADERS,
        "additionalProperties": {
            "type": "string",
            "minLength": 1,
            "maxLength": MAX_VALUE_CHARS,
            "pattern": VALUE_PATTERN,
        },
        "description": "Request headers sent to the server (names are HTTP tokens; Host, Content-Type, Accept, "
        "Mcp-Session-Id and other transport headers are refused); stored sealed, never shown back in full.",
    },
}
CREDENTIALS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": _CREDENTIALS,
    "description": "The http source's new credentials (replacing the old ones); an empty object removes them. "
    "A stdio source takes none (400).",
}


_ARGS = {
    "type": "array",
    "maxItems": MAX_ARGS,
    "items": {"type": "string", "maxLength": MAX_ARG_CHARS, "pattern": "^[^\\x00]*$"},
}
_COMMON = {
    "name": {
        "type": "string",
        "pattern": mcp_sources.SOURCE_NAME.pattern,
        "description": "The source's name, new: a name another source has is refused (400 naming name).",
    },
    "project": {
        "type": "string",
        "maxLength": 64,
        "nullable": True,
        "description": "An existing project's slug (400 naming project for another); blank or absent: global.",
    },
}
MCP_SOURCE_SCHEMA: dict[str, Any] = {
    "description": "A stdio source (a command of TEAMCLAW_MCP_STDIO_ALLOWLIST with its arguments) or an http "
    "one (a URL on a host of TEAMCLAW_HTTP_EXECUTOR_ALLOWED_HOSTS). The allowlists are this server's "
    "settings: a command or URL outside them is refused with 400 naming command or url.",
    "oneOf": [
        {
            "type": "object",
            "title": "stdio",
            "additionalProperties": False,
            "required": ["name", "command"],
            "properties": {
                **_COMMON,
                "transport": {"type": "string", "enum": ["stdio"]},
                "command": {"type": "string", "minLength": 1, "maxLength": 200, "description": "An allowlisted name."},
                "args": _ARGS,
                "url": {"type": "string", "maxLength": 0, "description": "A stdio source has no URL."},
            },
        },
        {
            "type": "object",
            "title": "http",
            "additionalProperties": False,
            "required": ["name", "url"],
            "properties": {
                **_COMMON,
                "transport": {"type": "string", "enum": ["http"]},
                "url": {"type": "string", "format": "uri", "minLength": 1, "maxLength": 2000},
                "command": {"type": "string", "maxLength": 0, "description": "An http source starts no command."},
                "args": {"type": "array", "maxItems": 0},
                **_CREDENTIALS,
            },
        },
    ],
}
"""The registration body as ``McpSourceSerializer`` and ``mcp_sources.check_registration``
take it: one of the two transports (``transport`` defaults to http when a ``url`` is given)."""


class RefreshSerializer(api_fields.StrictSerializer):
    """``note`` (optional) for the audit trail."""

    note = api_fields.ChangeNoteField(required=False)


def credentials_shown(source: McpToolSource, staff: bool) -> dict[str, str]:
    """The stored headers as shown: ``{name: "…" + last 4}`` to staff, ``{name: "…"}`` to others
    (``interop.source_credentials.masked``); never a whole value."""
    try:
        headers = source_credentials.unseal(source.credentials)
    except source_credentials.CredentialsUnreadable:
        return {"(unreadable)": "…"}
    return source_credentials.masked(headers) if staff else dict.fromkeys(headers, "…")


def source_document(source: McpToolSource, staff: bool = False) -> dict[str, Any]:
    """``{id, name, project, transport, command, args, url, credentials, state, error,
    last_checked_at, server: {name, version}, notes, tools: [{name, tool, description,
    input_schema}]}``; ``tool`` is the matrix name ``mcp:<source>/<tool>``; ``credentials``
    masked (``credentials_shown``)."""
    return {
        "id": source.pk,
        "name": source.name,
        "project": source.project.slug if source.project else None,
        "transport": source.transport,
        "command": source.command,
        "args": list(source.args),
        "url": source.url,
        "credentials": credentials_shown(source, staff),
        "state": source.state,
        "error": source.error,
        "last_checked_at": source.last_checked_at,
        "server": {"name": source.server_name, "version": source.server_version},
        "notes": list(source.notes),
        "tools": [
            {
                "name": tool["name"],
                "tool": tool_name(source.name, tool["name"]),
                "description": tool.get("description", ""),
                "input_schema": tool.get("input_schema", {}),
            }
            for tool in source.tools
        ],
        "created_at": source.created_at,
    }


def _missing(source_id: int) -> Response:
    return error_response(f"there is no MCP tool source {source_id}", code=404)


class McpSourceListView(APIView):
    """List (any login) and register (staff) MCP tool sources."""

    parser_classes = api_fields.JSON_BODY_ONLY

    def get_permissions(self) -> list[Any]:
        return [IsAdminUser()] if self.request.method == "POST" else [IsAuthenticated()]

    @extend_schema(
        operation_id="mcp_sources_list",
        parameters=[
            OpenApiParameter("project", str, description="A project's view (its sources and the global ones).")
        ],
        responses=OpenApiTypes.OBJECT,
    )
    def get(self, request: Request) -> Response:
        project = project_scope(request)
        staff = bool(request.user.is_staff)
        return Response({"results": [source_document(s, staff) for s in mcp_sources.sources_for(project)]})

    @extend_schema(
        request={"application/json": MCP_SOURCE_SCHEMA}, responses={201: OpenApiTypes.OBJECT, 400: OpenApiTypes.OBJECT}
    )
    def post(self, request: Request) -> Response:
        data = api_fields.read_body(McpSourceSerializer, request.data)
        slug = data.pop("project", None)
        project = None
        if slug:
            project = Project.objects.filter(slug=slug).first()
            if project is None:
                return error_response(
                    "cannot register the MCP tool source", errors={"project": [f"no project {slug!r}"]}
                )
        source = mcp_sources.register(data, project, request.user)
        return Response(source_document(source, True), status=201)


class McpSourceDetailView(APIView):
    """One source (any login); remove it (staff)."""

    def get_permissions(self) -> list[Any]:
        return [IsAdminUser()] if self.request.method == "DELETE" else [IsAuthenticated()]

    @extend_schema(responses={200: OpenApiTypes.OBJECT, 404: OpenApiTypes.OBJECT})
    def get(self, request: Request, source_id: int) -> Response:
        source = McpToolSource.objects.select_related("project").filter(pk=source_id).first()
        return Response(source_document(source, bool(request.user.is_staff))) if source else _missing(source_id)

    @extend_schema(request=None, responses={200: OpenApiTypes.OBJECT, 404: OpenApiTypes.OBJECT})
    def delete(self, request: Request, source_id: int) -> Response:
        try:
            return Response(mcp_sources.remove(source_id, request.user))
        except McpToolSource.DoesNotExist:
            return _missing(source_id)


class McpSourceRefreshView(APIView):
    """Discover a source's tools again (staff)."""

    permission_classes = [IsAdminUser]

    @extend_schema(request=RefreshSerializer, responses={200: OpenApiTypes.OBJECT, 404: OpenApiTypes.OBJECT})
    def post(self, request: Request, source_id: int) -> Response:
        data = api_fields.read_body(RefreshSerializer, request.data)
        try:
            source = mcp_sources.refresh(source_id, request.user, note=data.get("note", ""))
        except McpToolSource.DoesNotExist:
            return _missing(source_id)
        return Response(source_document(source, True))


class McpSourceCredentialsView(APIView):
    """Replace or remove an http source's credentials (staff), then discover its tools with them."""

    permission_classes = [IsAdminUser]
    parser_classes = api_fields.JSON_BODY_ONLY

    @extend_schema(
        request={"application/json": CREDENTIALS_SCHEMA},
        responses={200: OpenApiTypes.OBJECT, 400: OpenApiTypes.OBJECT, 404: OpenApiTypes.OBJECT},
    )
    def put(self, request: Request, source_id: int) -> Response:
        data = api_fields.read_body(CredentialsSerializer, request.data)
        try:
            source = mcp_sources.set_credentials(source_id, data, request.user)
        except McpToolSource.DoesNotExist:
            return _missing(source_id)
        return Response(source_document(source, True))
