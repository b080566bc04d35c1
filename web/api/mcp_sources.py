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
from interop import mcp_sources
from interop.models import McpToolSource
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
            },
        },
    ],
}
"""The registration body as ``McpSourceSerializer`` and ``mcp_sources.check_registration``
take it: one of the two transports (``transport`` defaults to http when a ``url`` is given)."""


class RefreshSerializer(api_fields.StrictSerializer):
    """``note`` (optional) for the audit trail."""

    note = api_fields.ChangeNoteField(required=False)


def source_document(source: McpToolSource) -> dict[str, Any]:
    """``{id, name, project, transport, command, args, url, state, error, last_checked_at,
    server: {name, version}, notes, tools: [{name, tool, description, input_schema}]}``;
    ``tool`` is the matrix name ``mcp:<source>/<tool>``."""
    return {
        "id": source.pk,
        "name": source.name,
        "project": source.project.slug if source.project else None,
        "transport": source.transport,
        "command": source.command,
        "args": list(source.args),
        "url": source.url,
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
        return Response({"results": [source_document(s) for s in mcp_sources.sources_for(project)]})

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
        return Response(source_document(source), status=201)


class McpSourceDetailView(APIView):
    """One source (any login); remove it (staff)."""

    def get_permissions(self) -> list[Any]:
        return [IsAdminUser()] if self.request.method == "DELETE" else [IsAuthenticated()]

    @extend_schema(responses={200: OpenApiTypes.OBJECT, 404: OpenApiTypes.OBJECT})
    def get(self, request: Request, source_id: int) -> Response:
        source = McpToolSource.objects.select_related("project").filter(pk=source_id).first()
        return Response(source_document(source)) if source else _missing(source_id)

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
        return Response(source_document(source))
