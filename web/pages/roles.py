"""Pages: roles (PRD §4.1, US-01), custom roles (US-09) and role switches (US-06)."""

from __future__ import annotations

from typing import Any, cast

from django import forms
from django.conf import settings
from django.contrib import messages
from django.http import HttpRequest, HttpResponse, QueryDict
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_http_methods, require_POST

from capabilities.access import can_change, require_change
from capabilities.errors import ConfigInvalid, StaleVersion
from capabilities.executors import model_status, role_executor
from capabilities.matrices import INVOKE, TOOL, layers
from capabilities.models import AgentRole, CapabilityCard, Project, ProjectRoleOverride
from capabilities.registry import card_document, role_definition
from capabilities.role_constraints import bounds
from capabilities.roles import DEFAULT_TOOLS, MAX_RESPONSIBILITIES, delete_role
from capabilities.snapshot import CONSTRAINT_FIELDS, effective_constraints
from capabilities.versions import document_version
from prompts.queries import role_template_languages
from team.roles import create_role, update_role
from team.snapshot import build_snapshot
from teamclaw.runtime.config import TOOLS, Constraints, ToolMode
from web.forms import apply_switch, form_integer, form_note, form_version, note_refusal, refuse_into, show_refusal


def role_list(request: HttpRequest) -> HttpResponse:
    """Every role with its responsibilities and capabilities."""
    snapshot = build_snapshot()
    roles = [role_definition(snapshot, role) for role in AgentRole.objects.all()]
    return render(request, "capabilities/role_list.html", {"nav": "roles", "roles": roles})


MAX_RESPONSIBILITY_CHARS = 200
"""Longest responsibility line (characters; ``capabilities.roles`` checks it too)."""


def _responsibility_lines(value: str) -> list[str]:
    """The non-blank lines of a responsibilities box, refused (ValidationError) past
    MAX_RESPONSIBILITIES lines or a line past MAX_RESPONSIBILITY_CHARS characters."""
    lines = [line.strip() for line in value.splitlines() if line.strip()]
    if len(lines) > MAX_RESPONSIBILITIES:
        raise forms.ValidationError(
            _("At most %(count)s responsibilities, one a line.") % {"count": MAX_RESPONSIBILITIES}
        )
    for number, line in enumerate(lines, start=1):
        if len(line) > MAX_RESPONSIBILITY_CHARS:
            raise forms.ValidationError(
                _("Line %(line)s is %(length)s characters; a responsibility has at most %(limit)s.")
                % {"line": number, "length": len(line), "limit": MAX_RESPONSIBILITY_CHARS}
            )
    return lines


class RoleEditForm(forms.Form):
    """A role's names, emoji, descriptions and responsibilities in both languages
    (``capabilities.roles`` checks them again): display name 1..100 characters (the Chinese
    one optional), emoji ..16, descriptions ..2,000, responsibilities at most 20 lines of
    ..200 characters each."""

    display_name = forms.CharField(max_length=100, label=gettext_lazy("Display name"))
    emoji = forms.CharField(required=False, max_length=16, label=gettext_lazy("Emoji"))
    description = forms.CharField(required=False, max_length=2000, label=gettext_lazy("Description"))
    responsibilities = forms.CharField(
        required=False, strip=False, label=gettext_lazy("Responsibilities (one per line)")
    )
    display_name_zh = forms.CharField(required=False, max_length=100, label=gettext_lazy("Display name"))
    description_zh = forms.CharField(required=False, max_length=2000, label=gettext_lazy("Description"))
    responsibilities_zh = forms.CharField(
        required=False, strip=False, label=gettext_lazy("Responsibilities (one per line)")
    )

    def clean_responsibilities(self) -> str:
        value = str(self.cleaned_data["responsibilities"])
        _responsibility_lines(value)
        return value

    def clean_responsibilities_zh(self) -> str:
        value = str(self.cleaned_data["responsibilities_zh"])
        _responsibility_lines(value)
        return value

    @classmethod
    def of(cls, role: AgentRole) -> RoleEditForm:
        """The form filled with ``role`` as saved."""
        initial = {name: getattr(role, name) for name in ("display_name", "emoji", "description")}
        initial.update(display_name_zh=role.display_name_zh, description_zh=role.description_zh)
        initial["responsibilities"] = "\n".join(role.responsibilities)
        initial["responsibilities_zh"] = "\n".join(role.responsibilities_zh)
        return cls(initial=initial)


def role_detail(request: HttpRequest, role: str) -> HttpResponse:
    """One role: capabilities, permissions, tool bindings, constraints and prompt config."""
    return _role_page(request, get_object_or_404(AgentRole, role=role))


def _role_page(request: HttpRequest, obj: AgentRole, edit_form: RoleEditForm | None = None) -> HttpResponse:
    """The role page; with ``edit_form``, a refused edit shown again (400) with what was typed
    and each reason next to its field, the edit section open."""
    snapshot = build_snapshot()
    definition = role_definition(snapshot, obj)
    executor = role_executor(snapshot, obj.role)
    runs_on = {row["capability_id"]: row["executor"] for row in executor["capabilities"]}
    cards = [{**card_document(snapshot.cards[c]), "runs_on": runs_on.get(c)} for c in definition["capabilities"]]
    return render(
        request,
        "capabilities/role_detail.html",
        {
            "nav": "roles",
            "role": obj,
            "definition": definition,
            "cards": cards,
            "tools": TOOLS,
            "executor": executor,
            "model": model_status(),
            "memory_default": settings.TEAMCLAW["MEMORY_TOKENS"],
            "template_languages": role_template_languages(obj),
            **role_governance(request, obj),
            "edit_form": edit_form or RoleEditForm.of(obj),
        },
        status=200 if edit_form is None else 400,
    )


# --------------------------------------------------------------------------- roles
def role_governance(request: HttpRequest, role: AgentRole) -> dict[str, Any]:
    """Extra context for the role page: versions, switches per project, what the user may do."""
    overrides = {o.project_id: o.enabled for o in ProjectRoleOverride.objects.filter(role=role)}
    return {
        "role_version": document_version(f"role:{role.role}"),
        "can_edit_role": can_change(request.user, "role"),
        "can_delete_role": can_change(request.user, "role_delete") and not role.is_builtin,
        "project_switches": [
            {
                "project": p,
                "value": overrides.get(p.pk),
                "effective": role.enabled if overrides.get(p.pk) is None else overrides[p.pk],
                "version": document_version(f"role:{role.role}", p),
            }
            for p in Project.objects.all()
        ],
        "responsibilities_text": "\n".join(role.responsibilities),
        "responsibilities_zh_text": "\n".join(role.responsibilities_zh),
    }


@require_POST
def role_switch(request: HttpRequest, role: str) -> HttpResponse:
    """Enable/disable a role globally, or for a project (``inherit`` = follow global)."""
    obj = get_object_or_404(AgentRole, role=role)
    require_change(request.user, "role")
    return apply_switch(
        request,
        obj,
        save=update_role,
        subject=_("role %(role)s") % {"role": obj.role},
        sentence_start=_("Role %(role)s") % {"role": obj.role},
        fallback=reverse("role-detail", args=[obj.role]),
    )


@require_POST
def role_edit(request: HttpRequest, role: str) -> HttpResponse:
    """Edit a role's display name, emoji, description and responsibilities, in both languages
    (``RoleEditForm``). A refused edit shows the page again (400) with what was typed and the
    reasons next to the fields, audited; a stale version goes back to the page with the
    changes saved meanwhile, as before."""
    obj = get_object_or_404(AgentRole, role=role)
    require_change(request.user, "role")
    form = RoleEditForm(request.POST)
    if not form.is_valid():
        errors = {field: [str(reason) for reason in reasons] for field, reasons in form.errors.items()}
        note_refusal(request, ConfigInvalid(errors))
        return _role_page(request, obj, form)
    data = dict(form.cleaned_data)
    try:
        result = update_role(
            obj,
            project=None,
            version=form_version(request),
            data=data,
            note=form_note(request),
            actor=request.user,
        )
    except ConfigInvalid as exc:
        note_refusal(request, exc)
        refuse_into(form, exc)
        return _role_page(request, obj, form)
    except StaleVersion as exc:
        show_refusal(request, exc)
    else:
        if result.change:
            messages.success(
                request,
                _("Saved %(role)s as config version %(version)s.")
                % {"role": obj.role, "version": result.change.new_version},
            )
        else:
            messages.info(request, _("Nothing changed."))
    return redirect("role-detail", role=obj.role)


@require_POST
def role_delete(request: HttpRequest, role: str) -> HttpResponse:
    """Delete a custom role (built-in roles can only be disabled)."""
    obj = get_object_or_404(AgentRole, role=role)
    require_change(request.user, "role_delete")
    try:
        delete_role(obj, version=form_version(request), note=form_note(request), actor=request.user)
    except (StaleVersion, ConfigInvalid) as exc:
        show_refusal(request, exc)
        return redirect("role-detail", role=obj.role)
    messages.success(request, _("Role %(role)s was deleted.") % {"role": role})
    return redirect("roles")


def _role_form_defaults(source: AgentRole | None) -> dict[str, Any]:
    """The creation form's starting values, copied from ``source`` (permissions, tools,
    constraints, prompts) or least privilege."""

    form: dict[str, Any] = {
        "role": "",
        "display_name": "",
        "emoji": "",
        "description": "",
        "responsibilities": "",
        "capabilities": [],
        "can_invoke": [],
        "can_be_invoked_by": ["main"],
        "tools": {tool: DEFAULT_TOOLS.get(tool, ToolMode.DENY.value) for tool in TOOLS},
        "constraints": effective_constraints(source, None).as_dict() if source else None,
        "copy_prompts_from": source.role if source else "",
        "from": source.role if source else "",
    }
    if source is not None:
        invoke, _invoke_projects = layers(INVOKE, None)
        tools, _tool_projects = layers(TOOL, None)
        form["can_invoke"] = sorted(t for (c, t), allowed in invoke.items() if c == source.role and allowed)
        form["can_be_invoked_by"] = sorted(c for (c, t), allowed in invoke.items() if t == source.role and allowed)
        form["tools"] = {tool: tools.get((source.role, tool), ToolMode.DENY.value) for tool in TOOLS}
    if form["constraints"] is None:
        form["constraints"] = Constraints().as_dict()
    return form


class NamesField(forms.Field):
    """A list of names posted as repeated keys (checkboxes); ``create_role`` checks each."""

    widget = forms.SelectMultiple

    def to_python(self, value: Any) -> list[str]:
        return [str(v) for v in value or []]


class RoleNewForm(forms.Form):
    """The new-role page (US-09): the role's id, names and texts, its capabilities and invoke
    permissions (names), a mode per tool (``tool_<tool>``: allow, confirm or deny; deny when
    not sent), a value per constraint (``constraint_<name>``, blank: the default) and the
    role whose prompts to copy. ``team.roles.create_role`` checks the rest, naming fields."""

    role = forms.CharField(required=False)
    display_name = forms.CharField(required=False, strip=False)
    emoji = forms.CharField(required=False, strip=False)
    description = forms.CharField(required=False, strip=False)
    responsibilities = forms.CharField(required=False, strip=False)
    capabilities = NamesField(required=False)
    can_invoke = NamesField(required=False)
    can_be_invoked_by = NamesField(required=False)
    copy_prompts_from = forms.CharField(required=False)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        modes = [(m.value, m.value) for m in (ToolMode.ALLOW, ToolMode.CONFIRM, ToolMode.DENY)]
        for tool in TOOLS:
            self.fields[f"tool_{tool}"] = forms.ChoiceField(required=False, choices=modes)
        for name in CONSTRAINT_FIELDS:
            self.fields[f"constraint_{name}"] = forms.CharField(required=False)

    def tools(self) -> dict[str, str]:
        """Each tool's mode as sent (deny when not)."""
        return {tool: self.cleaned_data.get(f"tool_{tool}") or ToolMode.DENY.value for tool in TOOLS}

    def document(self) -> dict[str, Any]:
        """The role document ``create_role`` takes (a valid form)."""
        data, tools = self.cleaned_data, self.tools()
        constraints: dict[str, Any] = {}
        for name in CONSTRAINT_FIELDS:
            if raw := data[f"constraint_{name}"]:
                number = None if name == "file_scope" else form_integer(raw)
                constraints[name] = raw if number is None else number  # not a number: the API names the field
        return {
            **{key: data[key] for key in ("role", "display_name", "emoji", "description", "responsibilities")},
            "capabilities": data["capabilities"],
            "permissions": {
                "can_invoke": data["can_invoke"],
                "can_be_invoked_by": data["can_be_invoked_by"],
                "allowed_tools": [t for t, m in tools.items() if m == ToolMode.ALLOW.value],
                "denied_tools": [t for t, m in tools.items() if m == ToolMode.DENY.value],
                "requires_user_confirmation": [t for t, m in tools.items() if m == ToolMode.CONFIRM.value],
            },
            "constraints": constraints,
            "copy_prompts_from": data["copy_prompts_from"] or None,
        }

    def shown(self) -> dict[str, Any]:
        """What was sent, for the page shown again after a refusal (nothing typed lost)."""
        data = cast(QueryDict, self.data)
        return {
            **{key: str(data.get(key, "")) for key in ("role", "display_name", "emoji", "description")},
            "responsibilities": str(data.get("responsibilities", "")),
            **{key: data.getlist(key) for key in ("capabilities", "can_invoke", "can_be_invoked_by")},
            "tools": {tool: str(data.get(f"tool_{tool}", ToolMode.DENY.value)) for tool in TOOLS},
            "constraints": {n: str(data.get(f"constraint_{n}", "")) for n in CONSTRAINT_FIELDS},
            "copy_prompts_from": str(data.get("copy_prompts_from", "")),
        }


@require_http_methods(["GET", "POST"])
def role_new(request: HttpRequest) -> HttpResponse:
    """Create a custom role (US-09); ``?from=<role>`` starts from that role's permissions,
    tools, constraints and prompts."""
    source = AgentRole.objects.filter(role=request.GET.get("from") or "").first()
    form = _role_form_defaults(source)
    errors: dict[str, list[str]] = {}
    status = 200
    if request.method == "POST":
        require_change(request.user, "role_create")
        bound = RoleNewForm(request.POST)
        try:
            if not bound.is_valid():
                raise ConfigInvalid({field: [str(r) for r in reasons] for field, reasons in bound.errors.items()})
            result = create_role(bound.document(), note=form_note(request), actor=request.user)
        except ConfigInvalid as exc:
            errors, status = exc.errors, 400
            form.update(bound.shown())
        else:
            if result.change:
                text = _("Role %(role)s created (config version %(version)s).")
            else:
                text = _("Role %(role)s created.")
            created = {"role": result.document["role"], "version": result.change.new_version if result.change else ""}
            messages.success(request, text % created)
            return redirect("role-detail", role=result.document["role"])
    return render(
        request,
        "capabilities/role_new.html",
        {
            "nav": "roles",
            "form": form,
            "errors": errors,
            "roles": AgentRole.objects.all(),
            "cards": CapabilityCard.objects.filter(skill__isnull=True).order_by("capability_id"),
            "tool_rows": [(tool, form["tools"].get(tool, "deny")) for tool in TOOLS],
            "modes": ("allow", "confirm", "deny"),
            "can_create": can_change(request.user, "role_create"),
            "memory_default": settings.TEAMCLAW["MEMORY_TOKENS"],
            "memory_bounds": bounds()["memory_tokens"],
        },
        status=status,
    )
