"""Pages: projects and what each overrides (US-06, PRD §4.7 项目级配置覆盖)."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods

from capabilities.access import can_change, require_change
from capabilities.errors import ConfigInvalid, StaleVersion
from capabilities.models import AgentRole, CapabilityCard, Project, ProjectCapabilityOverride, ProjectRoleOverride
from capabilities.projects import member_names
from capabilities.versions import document_version
from team.projects import create_project, project_document, update_project
from web.forms import form_note, form_version, note_refusal

# --------------------------------------------------------------------------- projects
PROJECT_FIELDS = ("slug", "name", "description", "tech_stack", "working_directory")


@require_http_methods(["GET", "POST"])
def project_list(request: HttpRequest) -> HttpResponse:
    """Every project with its override counts, and a form to create one."""
    form = dict.fromkeys(PROJECT_FIELDS, "")
    errors: dict[str, list[str]] = {}
    status = 200
    if request.method == "POST":
        require_change(request.user, "project_create")
        form = {name: request.POST.get(name, "") for name in PROJECT_FIELDS}
        try:
            result = create_project(form, note=form_note(request), actor=request.user)
        except ConfigInvalid as exc:
            note_refusal(request, exc)
            errors, status = exc.errors, 400
        else:
            messages.success(request, _("Project %(name)s created.") % {"name": result.document["name"]})
            return redirect("project-detail", slug=result.document["slug"])
    projects = [project_document(p) for p in Project.objects.all()]
    return render(
        request,
        "capabilities/project_list.html",
        {
            "nav": "projects",
            "projects": projects,
            "form": form,
            "errors": errors,
            "can_create": can_change(request.user, "project_create"),
        },
        status=status,
    )


@require_http_methods(["GET", "POST"])
def project_detail(request: HttpRequest, slug: str) -> HttpResponse:
    """A project: edit it, switch roles and capabilities for it, reach its matrix views."""
    project = get_object_or_404(Project, slug=slug)
    errors: dict[str, list[str]] = {}
    conflict = None
    status = 200
    if request.method == "POST":
        require_change(request.user, "project")
        data: dict[str, object] = {name: request.POST.get(name, "") for name in PROJECT_FIELDS[1:]}
        if "members" in request.POST:
            data["members"] = request.POST["members"].replace(",", " ").split()
        try:
            result = update_project(
                project,
                version=form_version(request),
                data=data,
                note=form_note(request),
                actor=request.user,
            )
        except ConfigInvalid as exc:
            note_refusal(request, exc)
            errors, status = exc.errors, 400
        except StaleVersion as exc:
            note_refusal(request, exc)
            conflict, status = exc, 409
        else:
            if result.change:
                messages.success(
                    request,
                    _("Saved project %(name)s (config version %(version)s).")
                    % {"name": project.name, "version": result.change.new_version},
                )
            else:
                messages.info(request, _("Nothing changed."))
            return redirect("project-detail", slug=project.slug)
    role_overrides = {o.role_id: o.enabled for o in ProjectRoleOverride.objects.filter(project=project)}
    card_overrides = {o.card_id: o.enabled for o in ProjectCapabilityOverride.objects.filter(project=project)}
    roles = [
        {
            "role": r,
            "value": role_overrides.get(r.pk),
            "effective": r.enabled if role_overrides.get(r.pk) is None else role_overrides[r.pk],
            "version": document_version(f"role:{r.role}", project),
        }
        for r in AgentRole.objects.all()
    ]
    cards = [
        {
            "card": c,
            "value": card_overrides.get(c.pk),
            "effective": c.enabled if card_overrides.get(c.pk) is None else card_overrides[c.pk],
            "version": document_version(f"capability:{c.capability_id}", project),
        }
        for c in CapabilityCard.objects.filter(skill__isnull=True).order_by("capability_id")
    ]
    return render(
        request,
        "capabilities/project_detail.html",
        {
            "nav": "projects",
            "project": project,
            "doc": project_document(project),
            "members": member_names(project),
            "roles": roles,
            "cards": cards,
            "errors": errors,
            "conflict": conflict,
            "can_edit": can_change(request.user, "project"),
            "can_switch_roles": can_change(request.user, "role"),
            "can_switch_cards": can_change(request.user, "capability"),
        },
        status=status,
    )
