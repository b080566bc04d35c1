"""Pages: the invoke and tool matrix editors with what-if (PRD §4.7, US-07).

A refused save re-renders the editor with the operator's staged values kept: 400 with the
reasons for bad input, 409 with the changes someone else saved meanwhile (the difference).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.utils.translation import ngettext
from django.views.decorators.http import require_http_methods, require_POST

from capabilities.access import can_change, require_change
from capabilities.errors import ConfigInvalid, StaleVersion
from capabilities.matrices import INVOKE, TOOL, MatrixKind, matrix_document, save_matrix
from capabilities.matrix_forms import INHERIT, base_json, grid, nested, staged_cells
from capabilities.models import AgentRole, Project, ProjectRoleOverride
from monitoring.whatif import DEFAULT_DAYS, MAX_DAYS, what_if
from teamclaw.whole_numbers import whole_number_or_none
from web.forms import form_note, form_version, note_attempted, note_refusal
from web.scope import project_scope, scoped_url

KINDS = {"invoke": INVOKE, "tools": TOOL}


DAY_CHOICES = (1, 7, 30, 90)


def form_days(request: HttpRequest) -> int:
    """The what-if window's ``days`` (1..MAX_DAYS) from the form or the query; DEFAULT_DAYS
    when absent or not such a whole number (the page's select offers DAY_CHOICES)."""
    days = whole_number_or_none(request.POST.get("days") or request.GET.get("days") or "")
    return days if days is not None and 1 <= days <= MAX_DAYS else DEFAULT_DAYS


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
    switched = dict(ProjectRoleOverride.objects.filter(project=project).values_list("role__role", "enabled"))
    roles = {r.role: RoleHere.of(r, switched.get(r.role, r.enabled)) for r in AgentRole.objects.all()}
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


@dataclass(frozen=True)
class RoleHere:
    """A role as a matrix header shows it: ``effective_enabled`` is what the runtime sees in
    the editor's scope (the project's switch, else the role's own)."""

    role: str
    display_name: str
    emoji: str
    is_builtin: bool
    effective_enabled: bool

    @classmethod
    def of(cls, role: AgentRole, enabled: bool) -> RoleHere:
        return cls(role.role, role.shown_name, role.emoji, role.is_builtin, enabled)


@require_http_methods(["GET", "POST"])
def matrix_editor(request: HttpRequest, which: str) -> HttpResponse:
    """The invoke (roles x roles) or tool (roles x tools) matrix: stage cell changes, see
    their what-if, save them as one change with a note (US-07)."""
    kind = _kind(which)
    project = project_scope(request)
    if request.method == "GET":
        return _editor(request, kind, project)
    require_change(request.user, kind.name)
    note = form_note(request)
    resets = set(request.POST.getlist("reset")) if project is not None else set()
    try:
        staged, desired = staged_cells(kind, request.POST, project)
    except ConfigInvalid as exc:
        note_refusal(request, exc)
        return _editor(request, kind, project, errors=exc.errors, note=note, status=400)
    desired = {cell: desired[cell] for cell in staged}  # only what the operator changed survives a refusal
    note_attempted(request, (f"{kind.name}.{row}.{col}" for row, col in staged))
    if not staged:
        messages.info(request, _("Nothing to save: no cell was changed."))
        return redirect(scoped_url("matrix-editor", project, which=which))
    try:
        result = save_matrix(
            kind, project=project, version=form_version(request), matrix=nested(staged), note=note, actor=request.user
        )
    except StaleVersion as exc:
        note_refusal(request, exc)
        return _editor(request, kind, project, desired=desired, resets=resets, conflict=exc, note=note, status=409)
    except ConfigInvalid as exc:
        note_refusal(request, exc)
        return _editor(request, kind, project, desired=desired, resets=resets, errors=exc.errors, note=note, status=400)
    count = len(result.change.changed_fields) if result.change else 0
    if result.change:
        messages.success(
            request,
            ngettext(
                "Saved %(count)d cell change as config version %(version)s.",
                "Saved %(count)d cell changes as config version %(version)s.",
                count,
            )
            % {"count": count, "version": result.change.new_version},
        )
    else:
        messages.info(request, _("Nothing changed: the cells already had those values."))
    return redirect(scoped_url("matrix-editor", project, which=which))


@require_POST
def matrix_what_if(request: HttpRequest, which: str) -> HttpResponse:
    """The what-if panel (htmx): the staged cells and what they would have done to the
    recorded traffic of the last N days. Reads only. A user who does not see every task
    gets counts over the tasks they may see only (``monitoring.whatif``, "Who sees which
    traffic")."""
    kind = _kind(which)
    project = project_scope(request)
    try:
        staged, _desired = staged_cells(kind, request.POST, project)
    except ConfigInvalid as exc:
        return render(request, "capabilities/_what_if.html", {"errors": exc.errors}, status=400)
    report = what_if(kind, project, staged, form_days(request), viewer=request.user) if staged else None
    return render(
        request,
        "capabilities/_what_if.html",
        {"report": report, "staged": sorted(staged.items()), "kind": kind, "project": project},
    )
