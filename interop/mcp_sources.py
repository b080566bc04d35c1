"""MCP tool sources (issue 16): registering an MCP server, discovering its tools, removing it.

An operator registers a source per project or globally (``interop.models.McpToolSource``).
Its tools become tools of the tool permission matrix named ``mcp:<source>/<tool>`` (PRD §4.7;
``catalogue`` below is registered with ``capabilities.tool_catalogue`` when the app starts).

- **Refused addresses.** A stdio source may only start a command of
  ``TEAMCLAW_MCP_STDIO_ALLOWLIST`` (chosen by name; its arguments are a list of strings); an
  HTTP source's URL must be http(s) on a host of ``TEAMCLAW_HTTP_EXECUTOR_ALLOWED_HOSTS``.
  Anything else is a 400 naming the field (``ConfigInvalid``), and nothing is saved.
- **Discovery** (``refresh``) connects with the official ``mcp`` SDK client
  (``teamclaw.runtime.mcp_tools``), lists the tools and records the source's state:
  ``connected`` with its tools, or ``error`` with the reason (the tools of the last successful
  discovery are kept). The connection runs outside any transaction; the result is written in
  one.
- **Governance.** Registering, a discovery that changes the tool list (or a tool's
  description or schema) and removing a source are each one config version, audited
  (``config_type`` ``tool_binding``, keys ``mcp_sources.<name>.<field>``) and published as a
  ``ConfigChangeEvent`` (PRD §4.8), and they touch the tool matrix document so an editor
  loaded before is stale. A new tool has no cell, so it is **deny for every role** until an
  operator changes it through the matrix's governed save. A tool that disappears (or the
  whole source, when removed) loses its cells in the same change, so if it comes back it
  starts at deny again.
"""

from __future__ import annotations

import asyncio
import logging
import re
from typing import Any

from channels.db import database_sync_to_async
from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from capabilities.errors import ConfigInvalid
from capabilities.models import Project, ToolPermission
from capabilities.versions import commit_change, lock_config
from interop import source_credentials
from interop.models import McpToolSource
from teamclaw.runtime.config import ToolSpec
from teamclaw.runtime.mcp_tools import (
    Listing,
    McpConnector,
    McpSourceError,
    list_server_tools,
    resolve_stdio_allowlist,
    server_problems,
    tool_name,
)

log = logging.getLogger(__name__)

SOURCE_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,39}$")
"""A source's name: lower-case letters, digits, ``_`` and ``-``, 1-40 characters."""


def stdio_commands() -> dict[str, str]:
    """The stdio allowlist as ``{name: executable}`` (``""`` for an allowed name not installed)."""
    return resolve_stdio_allowlist(settings.TEAMCLAW["MCP_STDIO_ALLOWLIST"])


def allowed_hosts() -> list[str]:
    """The host allowlist HTTP sources share with the http executor."""
    return list(settings.TEAMCLAW["HTTP_EXECUTOR_ALLOWED_HOSTS"])


def connector() -> McpConnector:
    """A client connector under the current allowlists, sending each source's credentials."""
    return McpConnector(stdio_commands(), allowed_hosts(), source_headers)


def stored_headers(name: str) -> dict[str, str]:
    """The request headers (credentials) stored for source ``name``; ``{}`` for none, for an
    unknown source, or when they cannot be read (logged; the source's discovery says so)."""
    sealed = McpToolSource.objects.filter(name=name).values_list("credentials", flat=True).first()
    try:
        return source_credentials.unseal(sealed or "")
    except source_credentials.CredentialsUnreadable:
        log.warning("MCP tool source %s: its stored credentials cannot be read (was SECRET_KEY changed?)", name)
        return {}


async def source_headers(name: str) -> dict[str, str]:
    """``stored_headers`` from an event loop (the runtime's ``SourceHeaders``)."""
    return await database_sync_to_async(stored_headers)(name)


def sources_for(project: Project | None) -> list[McpToolSource]:
    """The sources ``project``'s view has: the global ones and the project's own (global only for None)."""
    scope = Q(project__isnull=True) | Q(project=project) if project is not None else Q(project__isnull=True)
    return list(McpToolSource.objects.filter(scope).select_related("project"))


def catalogue(project: Project | None) -> list[ToolSpec]:
    """The ``capabilities.tool_catalogue`` of MCP tools for ``project``'s view: one ``ToolSpec``
    per recorded tool of each source it has, leaving out sources whose address the current
    allowlists refuse (a narrowed setting removes their tools at once)."""
    commands, hosts = stdio_commands(), allowed_hosts()
    specs = []
    for source in sources_for(project):
        if server_problems(source.server, commands, hosts):
            continue
        for tool in source.tools:
            specs.append(
                ToolSpec(
                    name=tool_name(source.name, tool["name"]),
                    remote_name=tool["name"],
                    description=tool.get("description", ""),
                    input_schema=tool.get("input_schema") or {"type": "object"},
                    server=source.server,
                    source=source.name,
                )
            )
    return specs


def check_registration(data: dict[str, Any]) -> dict[str, Any]:
    """``{name, transport, command, args, url, bearer_token?, headers?}`` checked (no DNS, no
    connection): returns the fields to store (the credentials sealed,
    ``interop.source_credentials``). Raises ConfigInvalid listing every field at fault."""
    errors: dict[str, list[str]] = {}
    name = data.get("name") or ""
    if not SOURCE_NAME.match(name):
        errors["name"] = ["1-40 lower-case letters, digits, '_' or '-', starting with a letter or digit"]
    elif McpToolSource.objects.filter(name=name).exists():
        errors["name"] = [f"there is already a tool source {name!r}"]
    transport = data.get("transport") or ("http" if data.get("url") else "stdio")
    command, args, url = data.get("command") or "", data.get("args") or [], (data.get("url") or "").strip()
    if transport == "stdio":
        server: dict[str, Any] = {"transport": "stdio", "command": command, "args": args}
        if url:
            errors["url"] = ["a stdio source has no URL; leave it out or choose the http transport"]
    elif transport == "http":
        server = {"transport": "http", "url": url}
        if command or args:
            errors["command" if command else "args"] = ["an http source starts no command; leave it out"]
    else:
        server = {"transport": transport}
    for field, reasons in server_problems(server, stdio_commands(), allowed_hosts()).items():
        errors.setdefault(field, []).extend(reasons)
    headers: dict[str, str] = {}
    try:
        headers = source_credentials.check_credentials(data, transport)
    except source_credentials.CredentialErrors as refused:
        errors.update(refused.errors)
    if errors:
        raise ConfigInvalid(errors, detail=f"cannot register the MCP tool source: {_first(errors)}")
    fields = {"name": name, "transport": transport, "command": command, "args": list(args), "url": url}
    return {**fields, "credentials": source_credentials.seal(headers)}


def _first(errors: dict[str, list[str]]) -> str:
    field, reasons = next(iter(errors.items()))
    return f"{field}: {reasons[0]}"


def register(data: dict[str, Any], project: Project | None, actor: Any = None) -> McpToolSource:
    """Register a source (``check_registration``'s fields) for ``project`` (None = global) as one
    audited change, then discover its tools (``refresh``). Returns the source with its state.
    Raises ConfigInvalid (nothing saved)."""
    fields = check_registration(data)
    with transaction.atomic():
        lock_config()
        source = McpToolSource.objects.create(
            project=project, created_by=actor if getattr(actor, "is_authenticated", False) else None, **fields
        )
        address = {k: v for k, v in source.server.items() if k != "transport"}
        commit_change(
            "tool_binding",
            documents=["tool_matrix"],
            changes={
                f"mcp_sources.{source.name}.transport": {"old": None, "new": source.transport},
                f"mcp_sources.{source.name}.address": {"old": None, "new": address},
                **_credential_change(source.name, [], header_names(source)),
            },
            project=project,
            note=f"MCP tool source {source.name} registered",
            actor=actor,
        )
    return refresh(source.pk, actor)


def header_names(source: McpToolSource) -> list[str]:
    """The names of the headers stored for ``source`` (never their values), sorted."""
    try:
        return sorted(source_credentials.unseal(source.credentials))
    except source_credentials.CredentialsUnreadable:
        return ["(unreadable)"]


def _credential_change(name: str, old: list[str], new: list[str]) -> dict[str, dict[str, Any]]:
    """The audit entry of a credentials change: the header names before and after, never the
    values (the same names again: the values were replaced); none when nothing is stored
    before or after."""
    if not old and not new:
        return {}
    return {f"mcp_sources.{name}.credentials": {"old": old or None, "new": new or None}}


def set_credentials(source_id: int, data: dict[str, Any], actor: Any = None) -> McpToolSource:
    """Replace source ``source_id``'s credentials with ``data``'s ``bearer_token``/``headers``
    (neither: remove them) as one audited change (names only), then discover its tools with
    them. Raises McpToolSource.DoesNotExist, ConfigInvalid naming the field (nothing saved)."""
    with transaction.atomic():
        lock_config()
        row = McpToolSource.objects.select_for_update().select_related("project").get(pk=source_id)
        try:
            headers = source_credentials.check_credentials(data, row.transport)
        except source_credentials.CredentialErrors as refused:
            raise ConfigInvalid(refused.errors, detail=f"cannot store the credentials: {refused}") from None
        old = header_names(row)
        row.credentials = source_credentials.seal(headers)
        row.save(update_fields=["credentials"])
        commit_change(
            "tool_binding",
            documents=["tool_matrix"],
            changes=_credential_change(row.name, old, sorted(headers)),
            project=row.project,
            note=f"MCP tool source {row.name}: credentials changed",
            actor=actor,
        )
    return refresh(source_id, actor)


def discover(source: McpToolSource) -> Listing | McpSourceError:
    """Connect to ``source`` and list its tools (blocking, at most ``TEAMCLAW_MCP_TIMEOUT_S``):
    the listing, or the error that stopped it. Touches no database."""
    headers = stored_headers(source.name)  # read here, on this thread's connection

    async def these_headers(name: str) -> dict[str, str]:
        return headers

    reach = McpConnector(stdio_commands(), allowed_hosts(), these_headers)
    try:
        return asyncio.run(list_server_tools(reach, source.server, settings.TEAMCLAW["MCP_TIMEOUT_S"], source.name))
    except McpSourceError as exc:
        return exc


def refresh(source_id: int, actor: Any = None, note: str = "") -> McpToolSource:
    """Discover the tools of source ``source_id`` again and record the outcome (module
    docstring); ``note`` goes to the audit row when the tools changed.

    Raises McpToolSource.DoesNotExist for an unknown id (also when it was removed meanwhile)."""
    source = McpToolSource.objects.select_related("project").get(pk=source_id)
    outcome = discover(source)
    with transaction.atomic():
        lock_config()
        row = McpToolSource.objects.select_for_update().select_related("project").get(pk=source_id)
        row.last_checked_at = timezone.now()
        if isinstance(outcome, McpSourceError):
            row.state, row.error = "error", str(outcome)[:2000]
            row.save(update_fields=["state", "error", "last_checked_at"])
            return row
        tools = [tool.as_dict() for tool in outcome.tools]
        changes = _tool_changes(row, tools)
        commit_change(
            "tool_binding",
            documents=["tool_matrix"],
            changes=changes,
            project=row.project,
            note=note or f"MCP tool source {row.name} discovered: {len(tools)} tool(s)",
            actor=actor,
        )
        row.state, row.error, row.tools = "connected", "", tools
        row.server_name, row.server_version, row.notes = (
            outcome.server_name[:200],
            outcome.server_version[:100],
            outcome.notes,
        )
        row.save()
    return row


def _tool_changes(row: McpToolSource, tools: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The audit changes of replacing ``row.tools`` with ``tools``; deletes the cells of tools
    that are gone (call inside the refresh's transaction)."""
    before = {t["name"]: t for t in row.tools}
    after = {t["name"]: t for t in tools}
    changes: dict[str, dict[str, Any]] = {}
    if sorted(before) != sorted(after):
        changes[f"mcp_sources.{row.name}.tools"] = {"old": sorted(before), "new": sorted(after)}
    changed = sorted(n for n in before.keys() & after.keys() if before[n] != after[n])
    if changed:
        changes[f"mcp_sources.{row.name}.changed_tools"] = {"old": None, "new": changed}
    for gone in sorted(before.keys() - after.keys()):
        changes.update(_drop_cells(tool_name(row.name, gone)))
    return changes


def _drop_cells(tool: str) -> dict[str, dict[str, Any]]:
    """Delete every matrix cell of ``tool`` (the global one, and project overrides keyed
    ``...@<project>``); returns their audit changes."""
    changes = {}
    rows = ToolPermission.objects.filter(tool=tool).select_related("role", "project")
    for cell in rows:
        scope = f"@{cell.project.slug}" if cell.project else ""
        changes[f"tool_matrix.{cell.role.role}.{tool}{scope}"] = {"old": cell.mode, "new": None}
    rows.delete()
    return changes


def remove(source_id: int, actor: Any = None) -> dict[str, Any]:
    """Remove a source and every matrix cell of its tools as one audited change; returns
    ``{name, removed_tools, removed_cells}``. Raises McpToolSource.DoesNotExist."""
    with transaction.atomic():
        lock_config()
        row = McpToolSource.objects.select_for_update().select_related("project").get(pk=source_id)
        changes: dict[str, dict[str, Any]] = {
            f"mcp_sources.{row.name}.transport": {"old": row.transport, "new": None},
        }
        cells = ToolPermission.objects.filter(tool__startswith=tool_name(row.name, "")).values_list("tool", flat=True)
        for tool in sorted(set(cells)):
            changes.update(_drop_cells(tool))
        removed_cells = sum(1 for key in changes if key.startswith("tool_matrix."))
        commit_change(
            "tool_binding",
            documents=["tool_matrix"],
            changes=changes,
            project=row.project,
            note=f"MCP tool source {row.name} removed",
            actor=actor,
        )
        name, count = row.name, len(row.tools)
        row.delete()
    return {"name": name, "removed_tools": count, "removed_cells": removed_cells}
