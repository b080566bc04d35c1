"""What the MCP server offers besides tools (issue 29), read-only and under the same role token:

- **Prompts.** The token's role's prompt as an agent of that role gets it (PRD §4.5: every
  template type's active version, global layer then project override, rendered with the
  standard variables; ``team.prompt_preview``). One prompt named after the role, with an
  optional ``task_description`` argument; the rendered text comes back as one user message
  (MCP prompt messages have no system role) and the description names the versions used.
- **Resources.** The artifacts of the tasks the token's issuer may see
  (``monitoring.access.visible_tasks`` of ``RoleToken.created_by``, the staff user who issued it
  or approved the OAuth client), newest first, ``PAGE_SIZE`` a page, as
  ``teamclaw://tasks/<task_id>/artifacts/<name>`` (the name percent-encoded), with their content
  type. A URI that is malformed, names no artifact or one the issuer may not see is the same
  JSON-RPC error ``-32002`` "Resource not found" (the MCP spec's), so nothing leaks.

Synchronous: each function reads the database; the server calls them through
``database_sync_to_async``.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote, unquote

import mcp_types as types
from django.contrib.auth import get_user_model
from mcp.shared.exceptions import MCPError

from interop.models import RoleToken
from monitoring.access import visible_tasks
from monitoring.models import Artifact
from prompts.render import PromptRenderError
from team.prompt_preview import preview_role

PAGE_SIZE = 50
RESOURCE_NOT_FOUND = -32002
"""The MCP spec's JSON-RPC error code for a resource that does not exist (or may not be read)."""
ARTIFACT_URI = re.compile(r"^teamclaw://tasks/(?P<task>[A-Za-z0-9_-]{1,64})/artifacts/(?P<name>[^/?#]{1,400})$")
URI_TEMPLATE = "teamclaw://tasks/{task_id}/artifacts/{name}"
MAX_TASK_DESCRIPTION = 20_000
"""Longest ``task_description`` argument (characters)."""


def _issuer(token_id: int) -> Any:
    issuer = RoleToken.objects.filter(pk=token_id).values_list("created_by", flat=True).first()
    return get_user_model().objects.filter(pk=issuer).first() if issuer else None


def artifact_uri(artifact: Artifact) -> str:
    """The resource URI of ``artifact``."""
    return f"teamclaw://tasks/{artifact.task_id}/artifacts/{quote(artifact.name, safe='')}"


def _readable(token_id: int) -> Any:
    user = _issuer(token_id)
    tasks = visible_tasks(user)  # none for a token whose issuer is gone
    return Artifact.objects.filter(task__in=tasks.values("pk"))


def list_resources(token_id: int, cursor: str | None) -> types.ListResourcesResult:
    """One page of the artifacts the token's issuer may read. Raises MCPError(-32602) for a
    cursor this server did not give."""
    offset = _offset(cursor)
    rows = list(_readable(token_id).order_by("-created_at", "-id")[offset : offset + PAGE_SIZE + 1])
    resources = [
        types.Resource(
            uri=artifact_uri(row),
            name=row.name,
            title=f"{row.name} ({row.task_id})",
            mime_type=row.content_type,
            size=len(row.content.encode("utf-8")),
        )
        for row in rows[:PAGE_SIZE]
    ]
    more = str(offset + PAGE_SIZE) if len(rows) > PAGE_SIZE else None
    return types.ListResourcesResult(resources=resources, next_cursor=more)


def _offset(cursor: str | None) -> int:
    if cursor is None:
        return 0
    if not cursor.isascii() or not cursor.isdigit() or len(cursor) > 9:
        raise MCPError(types.INVALID_PARAMS, "cursor: not one this server gave")
    return int(cursor)


def resource_templates() -> types.ListResourceTemplatesResult:
    """The one URI template artifacts follow."""
    template = types.ResourceTemplate(
        uri_template=URI_TEMPLATE,
        name="task-artifact",
        title="A task's artifact",
        description="An artifact (review, final requirement, ...) of a task you may see.",
    )
    return types.ListResourceTemplatesResult(resource_templates=[template])


def read_resource(token_id: int, uri: str) -> types.ReadResourceResult:
    """The artifact at ``uri``. Raises MCPError(-32002) when it is malformed, missing or not
    readable by the token's issuer (one answer for all three)."""
    found = ARTIFACT_URI.match(uri)
    row = None
    name = unquote(found["name"]) if found else ""
    if found and "\x00" not in name:  # PostgreSQL cannot compare text with NUL (a DataError)
        row = _readable(token_id).filter(task_id=found["task"], name=name).first()
    if row is None:
        raise MCPError(RESOURCE_NOT_FOUND, "Resource not found", {"uri": uri[:200]})
    contents = types.TextResourceContents(uri=uri, mime_type=row.content_type, text=row.content)
    return types.ReadResourceResult(contents=[contents])


def list_prompts(role: str) -> types.ListPromptsResult:
    """The token's role's prompt (module docstring)."""
    prompt = types.Prompt(
        name=role,
        title=f"The {role} role's prompt",
        description=f"What an agent of role {role} is told (its active prompt templates, rendered).",
        arguments=[
            types.PromptArgument(
                name="task_description", description="The task to render the prompt for (optional).", required=False
            )
        ],
    )
    return types.ListPromptsResult(prompts=[prompt])


def get_prompt(role: str, name: str, arguments: dict[str, str] | None) -> types.GetPromptResult:
    """``role``'s rendered prompt. Raises MCPError(-32602) for another name, an unknown
    argument, a ``task_description`` over ``MAX_TASK_DESCRIPTION`` characters, or a template
    that cannot render (naming the layer and variable)."""
    if name != role:
        raise MCPError(types.INVALID_PARAMS, f"Unknown prompt: {name[:200]} (this token's role has the prompt {role})")
    arguments = dict(arguments or {})
    unknown = sorted(set(arguments) - {"task_description"})
    if unknown:
        raise MCPError(types.INVALID_PARAMS, f"unknown argument(s): {', '.join(unknown)[:200]}")
    description = arguments.get("task_description", "")
    if len(description) > MAX_TASK_DESCRIPTION:
        raise MCPError(types.INVALID_PARAMS, f"task_description: at most {MAX_TASK_DESCRIPTION} characters")
    try:
        preview = preview_role(role, task_description=description)
    except PromptRenderError as refused:
        raise MCPError(types.INVALID_PARAMS, f"the prompt cannot render: {refused}") from refused
    used = [f"{layer.template_type} {layer.base_version}" for layer in preview.layers if layer.base_version]
    versions = ", ".join(used)
    return types.GetPromptResult(
        description=f"{role}'s prompt at config version {preview.config_version} ({versions or 'no templates'})",
        messages=[types.PromptMessage(role="user", content=types.TextContent(type="text", text=preview.final))],
    )
