"""Pages: the invoke and tool matrix editors with what-if, and the constraints editor
(PRD §4.7, US-07; issue 5).

Views parse the form, check the permission, call the save action and render. A refused
save re-renders the editor with the operator's staged values kept: 400 with the reasons for
bad input, 409 with the changes someone else saved meanwhile (the difference).
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from capabilities.access import can_change, require_change
from capabilities.errors import ConfigInvalid, StaleVersion
from capabilities.matrices import INVOKE, TOOL, MatrixKind, matrix_document, save_matrix
from capabilities.matrix_forms import INHERIT, base_json, grid, nested, staged_cells
from capabilities.models import AgentRole, Project, ProjectRoleOverride
from capabilities.role_constraints import LABELS, UNITS, constraints_document, save_constraints
from capabilities.snapshot import CONSTRAINT_FIELDS
from capabilities.whatif import DEFAULT_DAYS, MAX_DAYS, what_if

KINDS = {"invoke": INVOKE, "tools": TOOL}
DAY_CHOICES = (1, 7, 30, 90)


def page_project(request: HttpRequest) -> Project | None:
    """``?project=`` (GET or the form's action URL); 404 for an unknown slug."""
    slug = request.GET.get("project") or None
    if slug is None:
        return None
    project = Project.objects.filter(slug=slug).first()
    if project is None:
        raise Http404(f"project '{slug}' does not exist")
    return project


def form_version(request: HttpRequest) -> int | None:
    raw = request.POST.get("version", "")
    return int(raw) if raw.isdigit() else None


def form_days(request: HttpRequest) -> int:
    raw = request.POST.get("days") or request.GET.get("days") or ""
    return int(raw) if raw.isdigit() and 1 <= int(raw) <= MAX_DAYS else DEFAULT_DAYS


def scoped_url(name: str, project: Project | None, **kwargs: Any) -> str:
    url = reverse(name, kwargs=kwargs or None)
    return f"{url}?project={project.slug}" if project else url


def _kind(which: str) -> MatrixKind:
    if which not in KINDS:
        raise Http404("no such matrix")
    return KINDS[which]


def _editor(
    request: HttpRequest,
    kind: MatrixKind,
    project: Project | None,
    *,
    desired: dict[Any, Any] | None = None,
    resets: set[str] | None = None,
    conflict: StaleVersion | None = None,
    errors: dict[str, list[str]] | None = None,
    note: str = "",
    status: int = 200,
) -> HttpResponse:
    doc = matrix_document(kind, project)
    roles = {r.role: r for r in AgentRole.objects.all()}
    switched = dict(ProjectRoleOverride.objects.filter(project=project).values_list("role__role", "enabled"))
    for role in roles.values():
        role.effective_enabled = switched.get(role.role, role.enabled)  # what the runtime sees here
    which = "invoke" if kind is INVOKE else "tools"
    context = {
        "nav": "permissions",
        "which": which,
        "kind": kind,
        "doc": doc,
        "rows": grid(kind, doc, roles, desired, resets),
        "columns": [roles.get(c) or c for c in (doc["roles"] if kind is INVOKE else doc["tools"])],
        "base": base_json(kind, doc),
        "project": project,
        "projects": Project.objects.all(),
        "can_edit": can_change(request.user, kind.name),
        "conflict": conflict,
        "errors": errors or {},
        "note": note,
        "days": form_days(request),
        "day_choices": DAY_CHOICES,
        "inherit": INHERIT,
        "modes": ("allow", "confirm", "deny"),
        "action": scoped_url("matrix-editor", project, which=which),
        "what_if_url": scoped_url("matrix-what-if", project, which=which),
    }
    return render(request, "capabilities/matrix_editor.html", context, status=status)


@require_http_methods(["GET", "POST"])
def matrix_editor(request: HttpRequest, which: str) -> HttpResponse:
    """The invoke (roles x roles) or tool (roles x tools) matrix: stage cell changes, see
    their what-if, save them as one change with a note (US-07)."""
    kind = _kind(which)
    project = page_project(request)
    if request.method == "GET":
        return _editor(request, kind, project)
    require_change(request.user, kind.name)
    note = (request.POST.get("note") or "").strip()[:2000]
    resets = set(request.POST.getlist("reset")) if project is not None else set()
    try:
        staged, desired = staged_cells(kind, request.POST, project)
    except ConfigInvalid as exc:
        return _editor(request, kind, project, errors=exc.errors, note=note, status=400)
    desired = {cell: desired[cell] for cell in staged}  # only what the operator changed survives a refusal
    if not staged:
        messages.info(request, "Nothing to save: no cell was changed.")
        return redirect(scoped_url("matrix-editor", project, which=which))
    try:
        result = save_matrix(
            kind, project=project, version=form_version(request), matrix=nested(staged), note=note, actor=request.user
        )
    except StaleVersion as exc:
        return _editor(request, kind, project, desired=desired, resets=resets, conflict=exc, note=note, status=409)
    except ConfigInvalid as exc:
        return _editor(request, kind, project, desired=desired, resets=resets, errors=exc.errors, note=note, status=400)
    count = len(result.change.changed_fields) if result.change else 0
    if result.change:
        messages.success(
            request, f"Saved {count} cell change{'s' * (count != 1)} as config version {result.change.new_version}."
        )
    else:
        messages.info(request, "Nothing changed: the cells already had those values.")
    return redirect(scoped_url("matrix-editor", project, which=which))


@require_POST
def matrix_what_if(request: HttpRequest, which: str) -> HttpResponse:
    """The what-if panel (htmx): the staged cells and what they would have done to the
    recorded traffic of the last N days. Reads only."""
    kind = _kind(which)
    project = page_project(request)
    try:
        staged, _desired = staged_cells(kind, request.POST, project)
    except ConfigInvalid as exc:
        return render(request, "capabilities/_what_if.html", {"errors": exc.errors}, status=400)
    report = what_if(kind, project, staged, form_days(request)) if staged else None
    return render(
        request,
        "capabilities/_what_if.html",
        {"report": report, "staged": sorted(staged.items()), "kind": kind, "project": project},
    )


def constraints_overview(request: HttpRequest) -> HttpResponse:
    """Every role's effective constraints for the scope, overrides marked (PRD §4.7)."""
    project = page_project(request)
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
            "units": UNITS,
            "project": project,
            "projects": Project.objects.all(),
        },
    )


@require_http_methods(["GET", "POST"])
def constraints_edit(request: HttpRequest, role: str) -> HttpResponse:
    """One role's constraints, globally or for a project, with the bounds checked."""
    obj = get_object_or_404(AgentRole, role=role)
    project = page_project(request)
    values: dict[str, Any] = {}
    errors: dict[str, list[str]] = {}
    conflict = None
    status = 200
    note = ""
    if request.method == "POST":
        require_change(request.user, "constraints")
        note = (request.POST.get("note") or "").strip()[:2000]
        values, errors = _constraint_form(request, project)
        if not errors:
            try:
                result = save_constraints(
                    obj, project=project, version=form_version(request), values=values, note=note, actor=request.user
                )
            except StaleVersion as exc:
                conflict, status = exc, 409
            except ConfigInvalid as exc:
                errors, status = exc.errors, 400
            else:
                if result.change:
                    messages.success(
                        request, f"Saved the constraints of {obj.role} as config version {result.change.new_version}."
                    )
                else:
                    messages.info(request, "Nothing changed.")
                return redirect(scoped_url("constraints-edit", project, role=obj.role))
        else:
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
                "unit": UNITS[name],
                "value": "" if shown is None else shown,
                "inherit": project is not None and shown is None,
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
            "note": note,
            "can_edit": can_change(request.user, "constraints"),
            "action": scoped_url("constraints-edit", project, role=obj.role),
        },
        status=status,
    )


def _constraint_form(request: HttpRequest, project: Project | None) -> tuple[dict[str, Any], dict[str, list[str]]]:
    """Form text -> typed values (``None`` where a project field inherits)."""
    values: dict[str, Any] = {}
    errors: dict[str, list[str]] = {}
    for name in CONSTRAINT_FIELDS:
        raw = (request.POST.get(name) or "").strip()
        if project is not None and not raw:
            values[name] = None
            continue
        if name == "file_scope":
            values[name] = raw
        elif raw.lstrip("-").isdigit():
            values[name] = int(raw)
        else:
            errors[f"constraints.{name}"] = ["must be a whole number"]
    return values, errors
