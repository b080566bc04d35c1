"""Page: MCP tool sources (issue 16) for the global layer or one project: each source with its
state and tools, a form to register one, and refresh / remove actions (staff only).

The tools appear in the tool matrix editor as ``mcp:<source>/<tool>``, deny for every role
until changed there (PRD §4.7, §4.8; ``interop.mcp_sources``)."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_http_methods, require_POST

from capabilities.errors import ConfigInvalid
from capabilities.models import Project
from interop import mcp_sources
from interop.models import McpToolSource
from teamclaw.runtime.mcp_tools import tool_name
from web.api.mcp_sources import credentials_shown
from web.forms import refuse_into
from web.scope import project_scope, scoped_url

TRANSPORTS = (("stdio", "stdio"), ("http", "http"))


class McpSourceForm(forms.Form):
    """Registering a tool source (``interop.mcp_sources.check_registration`` checks it again,
    with the allowlists): a name (1..40 lower-case letters, digits, ``_`` or ``-``, not taken),
    the transport, for ``stdio`` a command and its arguments (one a line), for ``http`` a URL
    (..2,000 characters) and an optional bearer token (..4,096, never shown again)."""

    name = forms.RegexField(
        regex=mcp_sources.SOURCE_NAME,
        max_length=40,
        label=gettext_lazy("Name"),
        error_messages={
            "invalid": gettext_lazy("Use 1-40 lower-case letters, digits, '_' or '-', starting with a letter or digit.")
        },
    )
    transport = forms.ChoiceField(choices=TRANSPORTS, required=False, label=gettext_lazy("Transport"))
    command = forms.CharField(required=False, max_length=200, label=gettext_lazy("Command (stdio)"))
    args = forms.CharField(required=False, max_length=10_000, label=gettext_lazy("Arguments (stdio, one per line)"))
    url = forms.CharField(required=False, max_length=2000, label=gettext_lazy("URL (Streamable HTTP)"))
    bearer_token = forms.CharField(
        required=False, max_length=4096, label=gettext_lazy("Bearer token (optional, for servers that need one)")
    )

    def clean_name(self) -> str:
        name = str(self.cleaned_data["name"])
        if McpToolSource.objects.filter(name=name).exists():
            raise forms.ValidationError(_("There is already a tool source “%(name)s”.") % {"name": name})
        return name

    def clean(self) -> dict[str, Any]:
        """Each transport's own fields: a command for stdio, a URL for http."""
        data = super().clean() or {}
        data["transport"] = data.get("transport") or "stdio"
        if data["transport"] == "stdio" and "command" in data and not data["command"]:
            self.add_error("command", _("Choose the command that starts the server."))
        if data["transport"] == "http" and "url" in data and not data["url"]:
            self.add_error("url", _("Give the server's URL."))
        return data

    def registration(self) -> dict[str, Any]:
        """What ``mcp_sources.register`` takes from the valid form (the other transport's
        fields left out; the bearer token only when given)."""
        data = self.cleaned_data
        stdio = data["transport"] != "http"
        registration: dict[str, Any] = {
            "name": data["name"],
            "transport": data["transport"],
            "command": data["command"] if stdio else "",
            "args": [line.strip() for line in data["args"].splitlines() if line.strip()] if stdio else [],
            "url": "" if stdio else data["url"],
        }
        if data["bearer_token"]:
            registration["bearer_token"] = data["bearer_token"]
        return registration


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
    """The sources the scope (``?project=``) sees, and (staff) the registration form
    (``McpSourceForm``); a refused registration shows the form again (400) with what was typed
    (never the bearer token) and each reason next to its field."""
    project = project_scope(request, form=True)
    form = McpSourceForm(initial={"transport": "stdio"})
    status = 200
    if request.method == "POST":
        _require_staff(request)
        form = McpSourceForm(request.POST)
        if form.is_valid():
            try:
                source = mcp_sources.register(form.registration(), project, request.user)
            except ConfigInvalid as exc:
                refuse_into(form, exc)
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
        status = 400
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
