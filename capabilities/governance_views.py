"""Pages: custom roles (US-09), role and card switches (PRD §4.1, US-06), projects, the audit
trail (PRD §4.8) and import/export (US-10).

Views parse, check the permission, call an action and render or redirect; every POST form
carries the CSRF token and the version the operator saw.
"""

from __future__ import annotations

import hashlib
from typing import Any

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_http_methods, require_POST

from capabilities.access import can_change, require_change
from capabilities.audit import CONFIG_TYPES, change_document, filter_changes
from capabilities.card_settings import update_capability
from capabilities.config import current_version
from capabilities.errors import ConfigInvalid, StaleVersion
from capabilities.models import AgentRole, CapabilityCard, Project, ProjectCapabilityOverride, ProjectRoleOverride
from capabilities.roles import DEFAULT_TOOLS, delete_role
from capabilities.safe_yaml import DocumentError, load_document, max_config_bytes
from capabilities.snapshot import CONSTRAINT_FIELDS, effective_constraints
from capabilities.versions import document_version
from team.config_import import import_config
from team.projects import create_project, project_document, update_project
from team.roles import create_role, update_role
from teamclaw.runtime.config import TOOLS, ToolMode

SWITCH_VALUES = {"on": True, "off": False, "inherit": None}
SWITCH_STATES = {"on": "enabled", "off": "disabled", "inherit": "following the global setting"}


def _next(request: HttpRequest, fallback: str) -> HttpResponseRedirect:
    target = request.POST.get("next") or ""
    if target and url_has_allowed_host_and_scheme(target, {request.get_host()}, require_https=request.is_secure()):
        return redirect(target)
    return redirect(fallback)


def _version(request: HttpRequest) -> int | None:
    raw = request.POST.get("version", "")
    return int(raw) if raw.isdigit() else None


def _project(request: HttpRequest) -> Project | None:
    slug = request.POST.get("project") or request.GET.get("project") or ""
    return get_object_or_404(Project, slug=slug) if slug else None


def _refused(request: HttpRequest, exc: Exception) -> None:
    """Show why an action was refused as a message (the page then shows the current state)."""
    if isinstance(exc, StaleVersion):
        lines = [str(exc)]
        for change in exc.changes[-5:]:
            fields = ", ".join(f"{k}: {v['old']} → {v['new']}" for k, v in list(change["changes"].items())[:5])
            lines.append(f"v{change['version']} by {change['actor'] or 'an import'}: {fields}")
        messages.error(request, " · ".join(lines))
    elif isinstance(exc, ConfigInvalid):
        messages.error(request, "; ".join(f"{k}: {', '.join(v)}" for k, v in exc.errors.items()))


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
    }


@require_POST
def role_switch(request: HttpRequest, role: str) -> HttpResponse:
    """Enable/disable a role globally, or for a project (``inherit`` = follow global)."""
    obj = get_object_or_404(AgentRole, role=role)
    require_change(request.user, "role")
    project = _project(request)
    wanted = request.POST.get("enabled", "")
    if wanted not in SWITCH_VALUES or (wanted == "inherit" and project is None):
        messages.error(request, "enabled: must be on, off or (for a project) inherit")
        return _next(request, reverse("role-detail", args=[obj.role]))
    try:
        result = update_role(
            obj,
            project=project,
            version=_version(request),
            data={"enabled": SWITCH_VALUES[wanted]},
            note=(request.POST.get("note") or "").strip()[:2000],
            actor=request.user,
        )
    except (StaleVersion, ConfigInvalid) as exc:
        _refused(request, exc)
    else:
        where = f" in project {project.name}" if project else ""
        state = SWITCH_STATES[wanted]
        if result.change:
            messages.success(
                request, f"Role {obj.role} is now {state}{where} (config version {result.change.new_version})."
            )
        else:
            messages.info(request, f"Nothing changed: role {obj.role} is already {state}{where}.")
    return _next(request, reverse("role-detail", args=[obj.role]))


@require_POST
def role_edit(request: HttpRequest, role: str) -> HttpResponse:
    """Edit a role's display name, emoji, description and responsibilities."""
    obj = get_object_or_404(AgentRole, role=role)
    require_change(request.user, "role")
    data = {name: request.POST.get(name, "") for name in ("display_name", "emoji", "description")}
    data["responsibilities"] = request.POST.get("responsibilities", "")
    try:
        result = update_role(
            obj,
            project=None,
            version=_version(request),
            data=data,
            note=(request.POST.get("note") or "").strip()[:2000],
            actor=request.user,
        )
    except (StaleVersion, ConfigInvalid) as exc:
        _refused(request, exc)
    else:
        if result.change:
            messages.success(request, f"Saved {obj.role} as config version {result.change.new_version}.")
        else:
            messages.info(request, "Nothing changed.")
    return redirect("role-detail", role=obj.role)


@require_POST
def role_delete_view(request: HttpRequest, role: str) -> HttpResponse:
    """Delete a custom role (built-in roles can only be disabled)."""
    obj = get_object_or_404(AgentRole, role=role)
    require_change(request.user, "role_delete")
    try:
        delete_role(obj, version=_version(request), note=(request.POST.get("note") or "")[:2000], actor=request.user)
    except (StaleVersion, ConfigInvalid) as exc:
        _refused(request, exc)
        return redirect("role-detail", role=obj.role)
    messages.success(request, f"Role {role} was deleted.")
    return redirect("roles")


def _role_form_defaults(source: AgentRole | None) -> dict[str, Any]:
    """The creation form's starting values, copied from ``source`` (permissions, tools,
    constraints, prompts) or least privilege."""
    from capabilities.matrices import INVOKE, TOOL, layers

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
        invoke, _ = layers(INVOKE, None)
        tools, _ = layers(TOOL, None)
        form["can_invoke"] = sorted(t for (c, t), allowed in invoke.items() if c == source.role and allowed)
        form["can_be_invoked_by"] = sorted(c for (c, t), allowed in invoke.items() if t == source.role and allowed)
        form["tools"] = {tool: tools.get((source.role, tool), ToolMode.DENY.value) for tool in TOOLS}
    if form["constraints"] is None:
        from teamclaw.runtime.config import Constraints

        form["constraints"] = Constraints().as_dict()
    return form


def _role_form_data(post: Any) -> dict[str, Any]:
    tools = {tool: post.get(f"tool_{tool}", ToolMode.DENY.value) for tool in TOOLS}
    constraints: dict[str, Any] = {}
    for name in CONSTRAINT_FIELDS:
        raw = (post.get(f"constraint_{name}") or "").strip()
        if raw:
            constraints[name] = raw if name == "file_scope" else int(raw) if raw.lstrip("-").isdigit() else raw
    return {
        "role": post.get("role", "").strip(),
        "display_name": post.get("display_name", ""),
        "emoji": post.get("emoji", ""),
        "description": post.get("description", ""),
        "responsibilities": post.get("responsibilities", ""),
        "capabilities": post.getlist("capabilities"),
        "permissions": {
            "can_invoke": post.getlist("can_invoke"),
            "can_be_invoked_by": post.getlist("can_be_invoked_by"),
            "allowed_tools": [t for t, m in tools.items() if m == ToolMode.ALLOW.value],
            "denied_tools": [t for t, m in tools.items() if m == ToolMode.DENY.value],
            "requires_user_confirmation": [t for t, m in tools.items() if m == ToolMode.CONFIRM.value],
        },
        "constraints": constraints,
        "copy_prompts_from": post.get("copy_prompts_from") or None,
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
        data = _role_form_data(request.POST)
        try:
            result = create_role(data, note=(request.POST.get("note") or "").strip()[:2000], actor=request.user)
        except ConfigInvalid as exc:
            errors, status = exc.errors, 400
            form.update(
                {
                    "role": data["role"],
                    "display_name": data["display_name"],
                    "emoji": data["emoji"],
                    "description": data["description"],
                    "responsibilities": data["responsibilities"],
                    "capabilities": data["capabilities"],
                    "can_invoke": data["permissions"]["can_invoke"],
                    "can_be_invoked_by": data["permissions"]["can_be_invoked_by"],
                    "tools": {tool: request.POST.get(f"tool_{tool}", "deny") for tool in TOOLS},
                    "constraints": {n: request.POST.get(f"constraint_{n}", "") for n in CONSTRAINT_FIELDS},
                    "copy_prompts_from": data["copy_prompts_from"] or "",
                }
            )
        else:
            messages.success(
                request, f"Role {result.document['role']} created (config version {result.change.new_version})."
            )
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
        },
        status=status,
    )


# --------------------------------------------------------------------------- capabilities
def capability_governance(request: HttpRequest, card: CapabilityCard) -> dict[str, Any]:
    """Extra context for the capability page: its switches globally and per project."""
    overrides = {o.project_id: o.enabled for o in ProjectCapabilityOverride.objects.filter(card=card)}
    return {
        "card_version": document_version(f"capability:{card.capability_id}"),
        "card_global_enabled": card.enabled,
        "can_edit_card": can_change(request.user, "capability") and not card.skill_id,
        "card_project_switches": [
            {
                "project": p,
                "value": overrides.get(p.pk),
                "effective": card.enabled if overrides.get(p.pk) is None else overrides[p.pk],
                "version": document_version(f"capability:{card.capability_id}", p),
            }
            for p in Project.objects.all()
        ],
    }


@require_POST
def capability_switch(request: HttpRequest, capability_id: str) -> HttpResponse:
    """Enable/disable a capability globally or for a project (US-06)."""
    card = get_object_or_404(CapabilityCard, capability_id=capability_id)
    require_change(request.user, "capability")
    project = _project(request)
    wanted = request.POST.get("enabled", "")
    fallback = reverse("capability-detail", args=[card.capability_id])
    if wanted not in SWITCH_VALUES or (wanted == "inherit" and project is None):
        messages.error(request, "enabled: must be on, off or (for a project) inherit")
        return _next(request, fallback)
    try:
        result = update_capability(
            card,
            project=project,
            version=_version(request),
            data={"enabled": SWITCH_VALUES[wanted]},
            note=(request.POST.get("note") or "").strip()[:2000],
            actor=request.user,
        )
    except (StaleVersion, ConfigInvalid) as exc:
        _refused(request, exc)
    else:
        where = f" in project {project.name}" if project else ""
        state = SWITCH_STATES[wanted]
        if result.change:
            messages.success(
                request, f"{card.capability_id} is now {state}{where} (config version {result.change.new_version})."
            )
        else:
            messages.info(request, f"Nothing changed: {card.capability_id} is already {state}{where}.")
    return _next(request, fallback)


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
            result = create_project(form, note=(request.POST.get("note") or "")[:2000], actor=request.user)
        except ConfigInvalid as exc:
            errors, status = exc.errors, 400
        else:
            messages.success(request, f"Project {result.document['name']} created.")
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
        data = {name: request.POST.get(name, "") for name in PROJECT_FIELDS[1:]}
        try:
            result = update_project(
                project,
                version=_version(request),
                data=data,
                note=(request.POST.get("note") or "")[:2000],
                actor=request.user,
            )
        except ConfigInvalid as exc:
            errors, status = exc.errors, 400
        except StaleVersion as exc:
            conflict, status = exc, 409
        else:
            if result.change:
                messages.success(request, f"Saved project {project.name} (config version {result.change.new_version}).")
            else:
                messages.info(request, "Nothing changed.")
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


# --------------------------------------------------------------------------- audit
def change_list(request: HttpRequest) -> HttpResponse:
    """The audit trail: every config change, newest first, 50 a page, with filters."""
    filters = {name: request.GET.get(name, "") for name in ("config_type", "project", "role", "q")}
    error = ""
    try:
        rows = filter_changes(filters)
    except ConfigInvalid as exc:
        error, rows = exc.detail, filter_changes({})
    page = Paginator(rows, 50).get_page(request.GET.get("page"))
    query = "&".join(f"{k}={v}" for k, v in filters.items() if v)
    return render(
        request,
        "capabilities/change_list.html",
        {
            "nav": "audit",
            "page": page,
            "changes": [change_document(c) for c in page.object_list],
            "filters": filters,
            "query": query,
            "error": error,
            "config_types": CONFIG_TYPES,
            "projects": Project.objects.all(),
            "version": current_version(),
        },
    )


# --------------------------------------------------------------------------- import/export
@require_http_methods(["GET", "POST"])
def config_transfer(request: HttpRequest) -> HttpResponse:
    """Export (download links) and import: preview a dry run's change list, then apply
    exactly that: the same text (its SHA-256 travels with the preview) at the config version
    it was previewed at (US-10)."""
    context: dict[str, Any] = {
        "nav": "transfer",
        "projects": Project.objects.all(),
        "can_import": can_change(request.user, "import"),
        "limit": max_config_bytes(),
        "text": "",
        "note": "",
        "result": None,
        "errors": {},
        "conflict": None,
        "version": current_version(),
    }
    status = 200
    if request.method == "POST":
        require_change(request.user, "import")
        upload = request.FILES.get("document")
        raw: bytes | str = upload.read(max_config_bytes() + 1) if upload else request.POST.get("text", "")
        context["note"] = (request.POST.get("note") or "")[:2000]
        apply = request.POST.get("action") == "apply"
        expected = request.POST.get("expected_version", "")
        try:
            data = load_document(raw, request.POST.get("format") or "")
            context["text"] = raw.decode("utf-8-sig") if isinstance(raw, bytes) else raw
            context["digest"] = hashlib.sha256(context["text"].encode()).hexdigest()
            if apply and request.POST.get("digest") != context["digest"]:
                raise ConfigInvalid(
                    {"document": ["changed since the preview (or was never previewed): preview it again, then apply"]}
                )
            result = import_config(
                data,
                dry_run=not apply,
                expected_version=int(expected) if apply and expected.isdigit() else None,
                note=context["note"],
                actor=request.user,
            )
        except DocumentError as exc:
            context["errors"], status = exc.errors, 400
            context["text"] = raw if isinstance(raw, str) else ""
        except ConfigInvalid as exc:
            context["errors"], status = exc.errors, 400
        except StaleVersion as exc:
            context["conflict"], status = exc, 409
        else:
            if apply:
                if result.applied:
                    messages.success(
                        request, f"Imported {len(result.changes)} changes as config version {result.config_version}."
                    )
                else:
                    messages.info(request, "Nothing to import: the configuration already matches the document.")
                return redirect("config-transfer")
            context["result"] = result
            context["version"] = result.config_version
    return render(request, "capabilities/config_transfer.html", context, status=status)
