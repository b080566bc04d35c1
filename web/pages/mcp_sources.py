"""Page: MCP tool sources (issue 16) for the global layer or one project: each source with its
state and tools, a form to register one, and refresh / remove actions (staff only).

The tools appear in the tool matrix editor as ``mcp:<source>/<tool>``, deny for every role
until changed there (PRD §4.7, §4.8; ``interop.mcp_sources``)."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods, require_POST

from capabilities.errors import ConfigInvalid
from capabilities.models import Project
from interop import mcp_sources
from interop.models import McpToolSource
from teamclaw.runtime.mcp_tools import tool_name
from web.api.mcp_sources import credentials_shown
from web.scope import project_scope, scoped_url

FORM_FIELDS = ("name", "transport", "command", "args", "url")


def _require_staff(request: HttpRequest) -> None:
    if not request.user.is_staff:
        raise PermissionDenied(_("Changing MCP tool sources needs a staff account."))


def _rows(project: Project | None, staff: bool) -> list[dict[str, Any]]:
    return [
        {
            "source": source,
            "credentials": credentials_shown(source, staff),
            "tools": [{**tool, "tool": tool_name(source.name, tool["name"])} for tool in source.tools],
        }
        for source in mcp_sources.sources_for(project)
    ]


@require_http_methods(["GET", "POST"])
def mcp_source_list(request: HttpRequest) -> HttpResponse:
    """The sources the scope (``?project=``) sees, and (staff) the registration form; a refused
    registration re-renders the form with every field's reason (400)."""
    project = project_scope(request, form=True)
    form = {"name": "", "transport": "stdio", "command": "", "args": "", "url": ""}
    errors: dict[str, list[str]] = {}
    status = 200
    if request.method == "POST":
        _require_staff(request)
        form = {name: request.POST.get(name, "").strip() for name in FORM_FIELDS}
        data = {
            "name": form["name"],
            "transport": form["transport"] or "stdio",
            "command": form["command"] if form["transport"] != "http" else "",
            "args": [line.strip() for line in form["args"].splitlines() if line.strip()]
            if form["transport"] != "http"
            else [],
            "url": form["url"] if form["transport"] == "http" else "",
        }
        bearer = request.POST.get("bearer_token", "").strip()
        if bearer:  # never echoed back into the form
            data["bearer_token"] = bearer
        try:
            source = mcp_sources.register(data, project, request.user)
        except ConfigInvalid as exc:
            errors, status = exc.errors, 400
        else:
            if source.state == "connected":
                messages.success(
                    request,
                    _("Registered %(name)s: %(count)d tool(s), deny for every role until you change them.")
                    % {"name": source.name, "count": len(source.tools)},
                )
            else:
                messages.error(
                    request,
                    _("Registered %(name)s, but discovery failed: %(error)s")
                    % {"name": source.name, "error": source.error},
                )
            return redirect(scoped_url("mcp-sources", project))
    return render(
        request,
        "interop/mcp_sources.html",
        {
            "nav": "mcp",
            "project": project,
            "matrix_url": scoped_url("matrix-editor", project, which="tools"),
            "projects": Project.objects.all(),
            "rows": _rows(project, bool(request.user.is_staff)),
            "form": form,
            "errors": errors,
            "commands": sorted(mcp_sources.stdio_commands().items()),
            "allowed_hosts": mcp_sources.allowed_hosts(),
            "can_change": request.user.is_staff,
        },
        status=status,
    )


def _source(source_id: int) -> McpToolSource:
    source = McpToolSource.objects.select_related("project").filter(pk=source_id).first()
    if source is None:
        raise Http404(_("there is no MCP tool source %(id)s") % {"id": source_id})
    return source


@require_POST
def mcp_source_refresh(request: HttpRequest, source_id: int) -> HttpResponse:
    """Discover a source's tools again (staff)."""
    _require_staff(request)
    source = _source(source_id)
    refreshed = mcp_sources.refresh(source.pk, request.user)
    if refreshed.state == "connected":
        messages.success(
            request,
            _("Refreshed %(name)s: %(count)d tool(s).") % {"name": refreshed.name, "count": len(refreshed.tools)},
        )
    else:
        messages.error(
            request, _("Refreshing %(name)s failed: %(error)s") % {"name": refreshed.name, "error": refreshed.error}
        )
    return redirect(scoped_url("mcp-sources", source.project))


@require_POST
def mcp_source_remove(request: HttpRequest, source_id: int) -> HttpResponse:
    """Remove a source and its tools' matrix cells (staff)."""
    _require_staff(request)
    source = _source(source_id)
    removed = mcp_sources.remove(source.pk, request.user)
    messages.success(
        request,
        _("Removed %(name)s with %(tools)d tool(s) and %(cells)d matrix cell(s).")
        % {"name": removed["name"], "tools": removed["removed_tools"], "cells": removed["removed_cells"]},
    )
    return redirect(scoped_url("mcp-sources", source.project))
