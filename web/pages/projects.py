"""Pages: projects and what each overrides (US-06, PRD §4.7 项目级配置覆盖)."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_http_methods

from capabilities.access import can_change, require_change
from capabilities.errors import ConfigInvalid, StaleVersion
from capabilities.models import AgentRole, CapabilityCard, Project, ProjectCapabilityOverride, ProjectRoleOverride
from capabilities.projects import FIELDS, MAX_MEMBERS, SLUG, member_names, working_directory_problem
from capabilities.versions import document_version
from team.projects import create_project, project_document, update_project
from teamclaw.errors import DomainError
from web.forms import form_note, form_version, note_refusal, refuse_into

# --------------------------------------------------------------------------- projects
PROJECT_FIELDS = ("slug", "name", "description", "tech_stack", "working_directory")


class ProjectForm(forms.Form):
    """A project's fields (``capabilities.projects.check_fields`` checks them again): the
    slug when creating (1..64 lowercase letters, digits, ``-`` or ``_``, not taken), a name
    (1..200 characters), a description (..5,000), a tech stack (..500), a working directory
    (an absolute path, ..1,000) and, when editing, the members (usernames separated by commas
    or spaces, at most 500)."""

    slug = forms.RegexField(
        regex=SLUG,
        max_length=64,
        label=gettext_lazy("Id (slug)"),
        error_messages={
            "invalid": gettext_lazy("Use 1-64 lowercase letters, digits, '-' or '_', starting with a letter or digit.")
        },
    )
    name = forms.CharField(max_length=FIELDS["name"], label=gettext_lazy("Name"))
    description = forms.CharField(required=False, max_length=FIELDS["description"], label=gettext_lazy("Description"))
    tech_stack = forms.CharField(required=False, max_length=FIELDS["tech_stack"], label=gettext_lazy("Tech stack"))
    working_directory = forms.CharField(
        required=False, max_length=FIELDS["working_directory"], label=gettext_lazy("Working directory")
    )
    members = forms.CharField(required=False, label=gettext_lazy("Members (usernames, separated by commas or spaces)"))

    def __init__(self, *args: object, creating: bool, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        del self.fields["members" if creating else "slug"]

    def clean_slug(self) -> str:
        slug = str(self.cleaned_data["slug"])
        if Project.objects.filter(slug=slug).exists():
            raise forms.ValidationError(_("Project “%(slug)s” already exists.") % {"slug": slug})
        return slug

    def clean_working_directory(self) -> str:
        value = str(self.cleaned_data["working_directory"])
        if working_directory_problem(value):
            raise forms.ValidationError(_("Give an absolute path such as /srv/projects/shop (no “..”, not /)."))
        return value

    def clean_members(self) -> list[str] | None:
        """The usernames, or None when the form sent no ``members`` (they stay as they are)."""
        if "members" not in self.data:
            return None
        names = str(self.cleaned_data["members"]).replace(",", " ").split()
        if len(set(names)) > MAX_MEMBERS:
            raise forms.ValidationError(_("At most %(count)s members.") % {"count": MAX_MEMBERS})
        return names

    def data_to_save(self) -> dict[str, object]:
        """What ``create_project`` / ``update_project`` takes from the valid form."""
        data = {name: value for name, value in self.cleaned_data.items() if name != "members"}
        if self.cleaned_data.get("members") is not None:
            data["members"] = self.cleaned_data["members"]
        return data


def refuse_form(request: HttpRequest, form: forms.Form) -> None:
    """Audit a governed page form the checks refused, naming its fields and reasons, as the
    domain's own refusal would be (``note_refusal``)."""
    errors = {field: [str(reason) for reason in reasons] for field, reasons in form.errors.items()}
    note_refusal(request, DomainError("the form was refused", errors=errors, code="invalid"))


@require_http_methods(["GET", "POST"])
def project_list(request: HttpRequest) -> HttpResponse:
    """Every project with its override counts, and a form to create one (``ProjectForm``): a
    refused one is shown again (400) with what was typed and each reason next to its field."""
    form = ProjectForm(creating=True)
    status = 200
    if request.method == "POST":
        require_change(request.user, "project_create")
        form = ProjectForm(request.POST, creating=True)
        if form.is_valid():
            try:
                result = create_project(form.data_to_save(), note=form_note(request), actor=request.user)
            except ConfigInvalid as exc:
                note_refusal(request, exc)
                refuse_into(form, exc)
            else:
                messages.success(request, _("Project %(name)s created.") % {"name": result.document["name"]})
                return redirect("project-detail", slug=result.document["slug"])
        else:
            refuse_form(request, form)
        status = 400
    projects = [project_document(p) for p in Project.objects.all()]
    return render(
        request,
        "capabilities/project_list.html",
        {
            "nav": "projects",
            "projects": projects,
            "form": form,
            "can_create": can_change(request.user, "project_create"),
        },
        status=status,
    )


@require_http_methods(["GET", "POST"])
def project_detail(request: HttpRequest, slug: str) -> HttpResponse:
    """A project: edit it, switch roles and capabilities for it, reach its matrix views."""
    project = get_object_or_404(Project, slug=slug)
    form = ProjectForm(creating=False)
    conflict = None
    status = 200
    if request.method == "POST":
        require_change(request.user, "project")
        form = ProjectForm(request.POST, creating=False)
        if not form.is_valid():
            refuse_form(request, form)
            status = 400
        else:
            try:
                result = update_project(
                    project,
                    version=form_version(request),
                    data=form.data_to_save(),
                    note=form_note(request),
                    actor=request.user,
                )
            except ConfigInvalid as exc:
                note_refusal(request, exc)
                refuse_into(form, exc)
                status = 400
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
            "form": form,
            "conflict": conflict,
            "can_edit": can_change(request.user, "project"),
            "can_switch_roles": can_change(request.user, "role"),
            "can_switch_cards": can_change(request.user, "capability"),
        },
        status=status,
    )
