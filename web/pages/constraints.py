"""Pages: each role's constraints (PRD §4.7 约束): timeout, retries, file scope, token budget,
concurrency, memory budget (seed 003 MemoryContext); globally or per project."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods

from capabilities.access import can_change, require_change
from capabilities.errors import ConfigInvalid, StaleVersion
from capabilities.models import AgentRole, Project
from capabilities.role_constraints import LABELS, UNIT_LABELS, constraints_document, save_constraints
from capabilities.snapshot import CONSTRAINT_FIELDS, DEFAULT_WHEN_NULL
from web.forms import form_integer, form_note, form_version, note_refusal
from web.scope import project_scope, scoped_url


def constraints_overview(request: HttpRequest) -> HttpResponse:
    """Every role's effective constraints for the scope, overrides marked (PRD §4.7)."""
    project = project_scope(request)
    rows = []
    for role in AgentRole.objects.prefetch_related("constraints"):
        doc = constraints_document(role, project)
        rows.append(
            {
                "role": role,
                "fields": [
                    {
                        "name": name,
                        "value": doc["constraints"][name],
                        "global": doc["global"][name],
                        "override": project is not None and doc["overrides"][name] is not None,
                    }
                    for name in CONSTRAINT_FIELDS
                ],
            }
        )
    return render(
        request,
        "capabilities/constraints_overview.html",
        {
            "nav": "constraints",
            "rows": rows,
            "labels": [LABELS[n] for n in CONSTRAINT_FIELDS],
            "units": UNIT_LABELS,
            "memory_default": settings.TEAMCLAW["MEMORY_TOKENS"],
            "project": project,
            "projects": Project.objects.all(),
        },
    )


@require_http_methods(["GET", "POST"])
def constraints_edit(request: HttpRequest, role: str) -> HttpResponse:
    """One role's constraints, globally or for a project, with the bounds checked."""
    obj = get_object_or_404(AgentRole, role=role)
    project = project_scope(request)
    values: dict[str, Any] = {}
    errors: dict[str, list[str]] = {}
    conflict = None
    status = 200
    note = ""
    if request.method == "POST":
        require_change(request.user, "constraints")
        note = form_note(request)
        values, errors = _constraint_form(request, project)
        if not errors:
            try:
                result = save_constraints(
                    obj, project=project, version=form_version(request), values=values, note=note, actor=request.user
                )
            except StaleVersion as exc:
                note_refusal(request, exc)
                conflict, status = exc, 409
            except ConfigInvalid as exc:
                note_refusal(request, exc)
                errors, status = exc.errors, 400
            else:
                if result.change:
                    messages.success(
                        request,
                        _("Saved the constraints of %(role)s as config version %(version)s.")
                        % {"role": obj.role, "version": result.change.new_version},
                    )
                else:
                    messages.info(request, _("Nothing changed."))
                return redirect(scoped_url("constraints-edit", project, role=obj.role))
        else:
            note_refusal(request, ConfigInvalid(errors))
            status = 400
    doc = constraints_document(obj, project)
    fields = []
    for name in CONSTRAINT_FIELDS:
        shown = doc["overrides"][name] if project is not None else doc["constraints"][name]
        if name in values:
            shown = values[name]
        fields.append(
            {
                "name": name,
                "label": LABELS[name],
                "unit": UNIT_LABELS[name],
                "value": "" if shown is None else shown,
                "inherit": project is not None and shown is None,
                "process_default": name in DEFAULT_WHEN_NULL,
                "global": doc["global"][name],
                "bounds": doc["bounds"][name],
                "errors": errors.get(f"constraints.{name}", []),
            }
        )
    return render(
        request,
        "capabilities/constraints_edit.html",
        {
            "nav": "constraints",
            "role": obj,
            "doc": doc,
            "fields": fields,
            "project": project,
            "conflict": conflict,
            "errors": {k: v for k, v in errors.items() if not k.startswith("constraints.")},
            "field_errors": any(k.startswith("constraints.") for k in errors),
            "note": note,
            "can_edit": can_change(request.user, "constraints"),
            "memory_default": settings.TEAMCLAW["MEMORY_TOKENS"],
            "action": scoped_url("constraints-edit", project, role=obj.role),
        },
        status=status,
    )


def _constraint_form(request: HttpRequest, project: Project | None) -> tuple[dict[str, Any], dict[str, list[str]]]:
    """Form text -> typed values (``None`` where a project field inherits, or where a global
    ``DEFAULT_WHEN_NULL`` field is left to the process default)."""
    values: dict[str, Any] = {}
    errors: dict[str, list[str]] = {}
    for name in CONSTRAINT_FIELDS:
        raw = (request.POST.get(name) or "").strip()
        if (project is not None or name in DEFAULT_WHEN_NULL) and not raw:
            values[name] = None
            continue
        if name == "file_scope":
            values[name] = raw
        elif (number := form_integer(raw)) is not None:
            values[name] = number
        else:
            errors[f"constraints.{name}"] = [_("must be a whole number")]
    return values, errors
