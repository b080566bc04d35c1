"""Pages under /prompts/ (PRD §4.5): templates, versions, diff, rollback, layered preview.

Viewing needs a login; changing needs staff or the ``prompts.add_promptversion``
permission, checked in each view because htmx may request any partial."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from django import forms
from django.conf import settings
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.core.validators import ProhibitNullCharactersValidator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, pgettext
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from capabilities.models import AgentRole, Project
from monitoring.prompt_impact import prompt_impact
from monitoring.prompt_runs import version_runs
from monitoring.task_prompts import TaskInputError, task_inputs
from prompts.access import can_edit_prompts
from prompts.actions import (
    MAX_NOTE_CHARS,
    ContentCheck,
    PromptChangeError,
    activate,
    check_content,
    rollback,
    sample_values,
    save_version,
)
from prompts.diff import diff_texts
from prompts.models import TEMPLATE_TYPES, PromptVersion
from prompts.queries import (
    NotFoundError,
    check_template_type,
    find_template,
    get_project,
    get_role,
    get_version,
    role_overview,
    versions_of,
)
from prompts.render import ALWAYS_AVAILABLE, MAX_TEMPLATE_CHARS, PromptRenderError
from prompts.versions import BUMPS, next_version, parse
from team.prompt_preview import preview_role
from teamclaw.labels import label
from teamclaw.strict_json import JsonRefused, loads
from web.htmx import fragment_or_page
from web.prompt_refusals import activation_words, refusal_words, render_error_text, render_error_words

HISTORY_PAGE_SIZE = 25


def _scope(request: HttpRequest, role: str, template_type: str | None = None) -> dict[str, Any]:
    """Role, template type and project of a page; 404 naming what does not exist."""
    try:
        obj = get_role(role)
        if template_type is not None:
            check_template_type(template_type)
        project = get_project(request.GET.get("project") or request.POST.get("project"))
    except NotFoundError as exc:
        raise Http404(exc.reason) from None
    scope: dict[str, Any] = {"nav": "prompts", "role": obj, "project": project, "projects": Project.objects.all()}
    if template_type is not None:
        scope["template_type"] = template_type
        scope["template"] = find_template(obj, template_type, project)
        scope["layer"] = _("project %(name)s") % {"name": project.name} if project else pgettext("layer", "global")
    scope["can_edit"] = can_edit_prompts(request.user)
    scope["query"] = f"?project={project.slug}" if project else ""
    return scope


def _require_editor(request: HttpRequest) -> None:
    if not can_edit_prompts(request.user):
        raise PermissionDenied("changing prompts needs staff status or the prompts.add_promptversion permission")


def _template_url(scope: dict[str, Any], **params: str) -> str:
    url = reverse("prompt-template", args=[scope["role"].role, scope["template_type"]])
    query = {"project": scope["project"].slug} if scope["project"] else {}
    query.update(params)
    return url + ("?" + urlencode(query) if query else "")


@require_GET
def prompt_index(request: HttpRequest) -> HttpResponse:
    """Every role with the active version of each of its six templates."""
    roles = [(role, role_overview(role)) for role in AgentRole.objects.all()]
    return render(request, "prompts/index.html", {"nav": "prompts", "roles": roles, "types": TEMPLATE_TYPES})


@require_GET
def prompt_role(request: HttpRequest, role: str) -> HttpResponse:
    """A role's six templates with each layer's active version."""
    scope = _scope(request, role)
    scope["rows"] = role_overview(scope["role"], scope["project"])
    return render(request, "prompts/role.html", scope)


@require_GET
def prompt_template(request: HttpRequest, role: str, template_type: str) -> HttpResponse:
    """One template in one layer: the active (or ``?version=``) version, the history, and
    the impact panel (who a change of the active version affects)."""
    scope = _scope(request, role, template_type)
    versions = versions_of(scope["template"])
    active = versions.filter(is_active=True).first()
    shown = active
    if request.GET.get("version"):
        try:
            shown = get_version(scope["template"], request.GET["version"])
        except NotFoundError as exc:
            raise Http404(exc.reason) from None
    page = Paginator(versions, HISTORY_PAGE_SIZE).get_page(request.GET.get("page"))
    newer = _newer_than(active)
    listed = list(page.object_list)
    runs = version_runs(
        scope["role"].role, template_type, scope["project"], [v.version for v in listed], user=request.user
    )
    rows = []
    for version in listed:
        # "diff with active" reads in time order: from the older of the two to the newer.
        older, later = sorted((version, active), key=lambda v: v.pk) if active is not None else (version, version)
        draft = not version.is_active and newer(version.version)
        rows.append(HistoryRow(version, draft, older, later, runs.get(version.version)))
    scope.update(
        active=active,
        shown=shown,
        page=page,
        rows=rows,
        all_versions=list(versions.values_list("version", flat=True)),
        template_url=_template_url(scope),
        impact=_impact(
            scope["role"], template_type, scope["project"], shown if shown != active else None, user=request.user
        ),
    )
    return render(request, "prompts/template.html", scope)


def _impact(*args: Any, **kwargs: Any) -> Any:
    """``monitoring.prompt_impact.prompt_impact`` with its ``refusal`` in the page's language
    (the API keeps the English)."""
    impact = prompt_impact(*args, **kwargs)
    if impact.refusal and impact.refusal_check is not None:
        impact.refusal = activation_words(impact.refusal_check) or impact.refusal
    return impact


@dataclass(frozen=True)
class HistoryRow:
    """One version in a template's history: a ``draft`` is newer than the active version and
    not active; ``diff_from``/``diff_to`` order it and the active version in time; ``runs``
    the contexts that rendered it."""

    v: PromptVersion
    is_draft: bool
    diff_from: PromptVersion
    diff_to: PromptVersion
    runs: dict[str, Any] | None = None
    """The contexts that rendered this version (``monitoring.prompt_runs.version_runs``)."""


def _newer_than(active: Any) -> Any:
    if active is None:
        return lambda version: True
    current = parse(active.version)
    return lambda version: parse(version).compare(current) > 0


def notices(check: ContentCheck, *, sample: bool = True) -> list[str]:
    """``check``'s warnings in the reader's language (the API keeps ``ContentCheck.warnings``
    in English): undeclared names with "did you mean", declared names the content does not
    use (issue 31: a warning, never a refusal), a failed sample render."""
    out = []
    if check.undeclared:
        names = ", ".join(_with_close_names(name, check.suggestions.get(name, [])) for name in check.undeclared)
        out.append(
            _("Used but neither declared nor always available (this version cannot be activated): %(names)s")
            % {"names": names}
        )
    if check.unused:
        out.append(
            _("Declared but not used in the template (a warning only: it never blocks a render): %(names)s")
            % {"names": ", ".join(check.unused)}
        )
    if sample and check.sample_failure is not None:
        out.append(_("A sample render failed: %(reason)s") % {"reason": render_error_text(check.sample_failure)})
    return out


def _with_close_names(name: str, close: list[str]) -> str:
    if not close:
        return repr(name)
    return _("%(name)s (did you mean %(close)s?)") % {
        "name": repr(name),
        "close": _(" or ").join(repr(c) for c in close),
    }


def _prefill_source(scope: dict[str, Any], active: Any) -> Any:
    """The version whose declarations and language the editor starts from: the active one,
    for a project's first override the global layer's (None for a layer's first version)."""
    if active is not None or scope["project"] is None:
        return active
    base_template = find_template(scope["role"], scope["template_type"], None)
    return base_template.versions.filter(is_active=True).first() if base_template else None


EDITOR_KEYS = ("content", "variables", "language", "bump", "version", "note", "base_version", "values")
"""The editor's fields, as the template shows them back (``form.<key>``: the text typed)."""


class PromptEditForm(forms.Form):
    """The prompt editor's fields: ``content`` (the template, at most MAX_TEMPLATE_CHARS
    characters), ``variables`` and ``values`` (JSON text, parsed by ``_json_field``),
    ``language`` (at most 16 characters), ``bump`` (one of BUMPS, patch when empty), an
    explicit ``version`` (at most 64), a ``note`` (at most MAX_NOTE_CHARS), the
    ``base_version`` the editor loaded and ``action`` (``draft`` saves without activating).
    ``prompts.actions.save_version`` checks the rest (syntax, sandbox, version order)."""

    content = forms.CharField(required=False, strip=False, max_length=MAX_TEMPLATE_CHARS)
    variables = forms.CharField(required=False, strip=False)
    language = forms.CharField(required=False, max_length=16)
    bump = forms.ChoiceField(choices=[("", "")] + [(b, b) for b in BUMPS], required=False)
    version = forms.CharField(required=False, max_length=64)
    note = forms.CharField(required=False, strip=False, max_length=MAX_NOTE_CHARS)
    base_version = forms.CharField(required=False, max_length=64)
    values = forms.CharField(required=False, strip=False)
    action = forms.CharField(required=False, max_length=16)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # A NUL in the template is refused by ``save_version``, naming it (the API's words).
        content = self.fields["content"]
        content.validators = [v for v in content.validators if not isinstance(v, ProhibitNullCharactersValidator)]

    def shown(self) -> dict[str, str]:
        """What was typed in each field, for the editor shown again."""
        return {key: str(self.data.get(key, "")) for key in EDITOR_KEYS}

    def first_errors(self) -> dict[str, str]:
        """Each field at fault -> its first reason (the editor shows one under each field)."""
        return {field: str(reasons[0]) for field, reasons in self.errors.items() if reasons}


def _editor_form(scope: dict[str, Any], active: Any) -> dict[str, str]:
    """The editor's starting values (a GET): the active version's content, the declarations
    and language it inherits, the sample values for the preview."""
    inherited = _prefill_source(scope, active)
    samples = sample_values(scope["role"], scope["project"], "Sample task description")
    return {
        "content": active.content if active else "",
        "variables": json.dumps(inherited.variables if inherited else [], indent=2, ensure_ascii=False),
        "language": inherited.language if inherited else "en",
        "bump": "patch",
        "version": "",
        "note": "",
        "base_version": active.version if active else "",
        "values": json.dumps(samples, indent=2, ensure_ascii=False),
    }


def _save_edit(request: HttpRequest, scope: dict[str, Any], template_type: str, data: dict[str, Any]) -> Any:
    """Save the editor's valid fields as a new version (``save_version``); raises
    PromptChangeError naming the field."""
    return save_version(
        role=scope["role"],
        template_type=template_type,
        content=data["content"],
        variables=_json_field(data["variables"], "variables", list),
        language=data["language"] or None,
        bump=data["bump"] or "patch",
        version=data["version"].strip() or None,
        note=data["note"],
        project=scope["project"],
        activate=data["action"] != "draft",
        base_version=data["base_version"],
        actor=request.user,
    )


def _json_field(text: str, name: str, kind: type) -> Any:
    if not text.strip():
        return kind()
    try:
        value = loads(text, max_bytes=int(settings.DATA_UPLOAD_MAX_MEMORY_SIZE))
    except JsonRefused as exc:
        raise PromptChangeError(f"not valid JSON: {exc}", name) from None
    if not isinstance(value, kind):
        raise PromptChangeError(f"must be a JSON {'list' if kind is list else 'object'}", name)
    return value


@require_http_methods(["GET", "POST"])
def prompt_edit(request: HttpRequest, role: str, template_type: str) -> HttpResponse:
    """The editor: content, variables, language, bump and note; saving creates a new version
    (active, or a draft with the "Save as draft" button)."""
    _require_editor(request)
    scope = _scope(request, role, template_type)
    active = scope["template"].versions.filter(is_active=True).first() if scope["template"] else None
    form = _editor_form(scope, active)
    errors: dict[str, str] = {}
    if request.method == "POST":
        bound = PromptEditForm(request.POST)
        form = bound.shown()
        if not bound.is_valid():
            errors = bound.first_errors()
        else:
            try:
                result = _save_edit(request, scope, template_type, bound.cleaned_data)
            except PromptChangeError as exc:
                errors[exc.field] = refusal_words(exc)
            else:
                text = (
                    _("%(type)s %(version)s is active.")
                    if result.version.is_active
                    else _("%(type)s %(version)s is saved as a draft.")
                )
                messages.success(
                    request, text % {"type": label(template_type, "template type"), "version": result.version.version}
                )
                for warning in notices(result.check) if result.check else result.warnings:
                    messages.warning(request, warning)
                return redirect(_template_url(scope))
    existing = list(scope["template"].versions.values_list("version", flat=True)) if scope["template"] else []
    scope.update(
        form=form,
        errors=errors,
        active=active,
        prefilled_from=_prefill_source(scope, active),
        bumps=[(bump, next_version(existing, bump)) for bump in BUMPS],
        standard_variables=ALWAYS_AVAILABLE,
        max_chars=MAX_TEMPLATE_CHARS,
        template_url=_template_url(scope),
        impact=_impact(scope["role"], template_type, scope["project"], user=request.user),
    )
    return render(
        request, "prompts/edit.html", scope, status=409 if "base_version" in errors else 400 if errors else 200
    )


PREVIEW_FIELDS = {
    "values": gettext_lazy("Sample values"),
    "variables": gettext_lazy("Variables"),
    "content": gettext_lazy("Template"),
}
"""The preview's inputs a refusal may name, as the page labels them (others are variable names)."""


@require_POST
def prompt_edit_preview(request: HttpRequest, role: str, template_type: str) -> HttpResponse:
    """The editor's live preview (htmx): the content being edited, rendered in the sandbox
    with its variables and the sample values (``PromptEditForm``'s ``content``, ``variables``
    and ``values``). Changes nothing. A refusal is shown in the preview box, answered 200 so
    htmx swaps it in (the editor's save answers 400)."""
    scope = _scope(request, role, template_type)
    preview: dict[str, Any] = {}
    form = PromptEditForm(request.POST)
    if not form.is_valid():
        field, reason = next(iter(form.first_errors().items()))
        preview["error"] = {"field": field, "label": PREVIEW_FIELDS.get(field, ""), "message": reason}
        return render(request, "prompts/edit.html#preview", {**scope, "preview": preview})
    data = form.cleaned_data
    try:
        values = _json_field(data["values"], "values", dict)
        variables = _json_field(data["variables"], "variables", list)
        checked = check_content(data["content"], variables, role=scope["role"], project=scope["project"], values=values)
    except PromptChangeError as exc:
        failure = exc.render_error if exc.field == "content" else None
        words = render_error_words(failure) if failure else {"message": refusal_words(exc)}
        preview["error"] = {"field": exc.field, "label": PREVIEW_FIELDS.get(exc.field, ""), **words}
    else:
        preview.update(
            text=checked.text,
            warnings=notices(checked, sample=checked.error is None),  # else it is the error shown
            undeclared=checked.undeclared,
            declarations=checked.declarations(),
        )
        if checked.error is not None:
            preview["error"] = {"field": checked.error.field, **render_error_words(checked.error)}
    return render(request, "prompts/edit.html#preview", {**scope, "preview": preview})


@require_GET
def prompt_diff(request: HttpRequest, role: str, template_type: str) -> HttpResponse:
    """Two versions side by side (``?from=X&to=Y``), changed words highlighted."""
    scope = _scope(request, role, template_type)
    versions = list(versions_of(scope["template"]).values_list("version", flat=True))
    if not versions:
        raise Http404("this template has no versions in this layer")
    chosen = {
        "from": request.GET.get("from") or versions[min(1, len(versions) - 1)],
        "to": request.GET.get("to") or versions[0],
    }
    try:
        old, new = (get_version(scope["template"], chosen[k]) for k in ("from", "to"))
    except NotFoundError as exc:
        raise Http404(exc.reason) from None
    label = f"{role}/{template_type}"
    scope.update(
        old=old,
        new=new,
        versions=versions,
        diff=diff_texts(
            old.content, new.content, old_label=f"{label} {old.version}", new_label=f"{label} {new.version}"
        ),
        template_url=_template_url(scope),
    )
    return render(request, "prompts/diff.html", scope)


@require_http_methods(["GET", "POST"])
def prompt_rollback(request: HttpRequest, role: str, template_type: str, version: str) -> HttpResponse:
    """Confirm (with the impact panel), then roll back to ``version``: a new active version
    with its content."""
    return _confirm_change(request, role, template_type, version, "rollback")


@require_http_methods(["GET", "POST"])
def prompt_activate(request: HttpRequest, role: str, template_type: str, version: str) -> HttpResponse:
    """Confirm (with the impact panel), then activate draft ``version``."""
    return _confirm_change(request, role, template_type, version, "activate")


class ConfirmChangeForm(forms.Form):
    """The rollback / activate confirmation: the ``bump`` of the rollback's new version (one
    of BUMPS, patch when empty), a ``note`` (at most MAX_NOTE_CHARS characters) and the
    ``base_version`` the page showed as active (a rollback is refused when it went stale)."""

    bump = forms.ChoiceField(
        choices=[("", "")] + [(b, b) for b in BUMPS], required=False, label=gettext_lazy("New version")
    )
    note = forms.CharField(required=False, max_length=MAX_NOTE_CHARS, label=gettext_lazy("Note (optional)"))
    base_version = forms.CharField(required=False, max_length=64)


def _apply_change(
    request: HttpRequest, scope: dict[str, Any], template_type: str, version: str, action: str, data: dict[str, Any]
) -> None:
    """Roll back to, or activate, ``version`` with the confirmation's valid fields, saying so
    as a message; raises PromptChangeError naming the field."""
    if action == "rollback":
        result = rollback(
            role=scope["role"],
            template_type=template_type,
            version=version,
            project=scope["project"],
            bump=data["bump"] or "patch",
            note=data["note"] or None,
            base_version=data["base_version"],
            actor=request.user,
        )
        messages.success(
            request, _("Rolled back to %(old)s: %(new)s is active.") % {"old": version, "new": result.version.version}
        )
        return
    result = activate(
        role=scope["role"],
        template_type=template_type,
        version=version,
        project=scope["project"],
        note=data["note"] or None,
        actor=request.user,
    )
    messages.success(request, _("%(version)s is active.") % {"version": result.version.version})


def _confirm_change(request: HttpRequest, role: str, template_type: str, version: str, action: str) -> HttpResponse:
    _require_editor(request)
    scope = _scope(request, role, template_type)
    try:
        target = get_version(scope["template"], version)
    except NotFoundError as exc:
        raise Http404(exc.reason) from None
    active = scope["template"].versions.filter(is_active=True).first()
    error = ""
    typed_note = ""
    if request.method == "POST":
        form = ConfirmChangeForm(request.POST)
        typed_note = str(form.data.get("note", ""))
        if not form.is_valid():
            error = "; ".join(f"{form.fields[f].label}: {' '.join(str(x) for x in r)}" for f, r in form.errors.items())
        else:
            try:
                _apply_change(request, scope, template_type, version, action, form.cleaned_data)
            except PromptChangeError as exc:
                error = refusal_words(exc)
            else:
                return redirect(_template_url(scope))
    existing = list(scope["template"].versions.values_list("version", flat=True))
    scope.update(
        action=action,
        target=target,
        active=active,
        error=error,
        typed_note=typed_note,
        bumps=[(bump, next_version(existing, bump)) for bump in BUMPS],
        diff=diff_texts(
            active.content if active else "",
            target.content,
            old_label=f"active {active.version if active else '(none)'}",
            new_label=f"{action} {target.version}",
        ),
        template_url=_template_url(scope),
        impact=_impact(scope["role"], template_type, scope["project"], target, user=request.user),
    )
    return render(request, "prompts/confirm.html", scope, status=400 if error else 200)


@require_GET
def prompt_layers(request: HttpRequest, role: str) -> HttpResponse:
    """The layered preview: each template type's global and project layers, the task
    enhancement and the final prompt, for a chosen project and task text (htmx refreshes
    the result as the form changes)."""
    scope = _scope(request, role)
    keys = ("task_id", "task_description", "prompt_enhancement", "variables")
    form = {key: request.GET.get(key, "").strip() if key == "task_id" else request.GET.get(key, "") for key in keys}
    result: dict[str, Any] = {}
    project, description, enhancement = scope["project"], form["task_description"], form["prompt_enhancement"]
    try:
        values = _json_field(form["variables"], "variables", dict)
        if form["task_id"]:
            project, description, enhancement = task_inputs(form["task_id"], project, description, enhancement or None)
        result["preview"] = preview_role(
            scope["role"].role,
            project=project,
            values=values,
            task_description=description[:2000],
            prompt_enhancement=enhancement[:20_000],
        )
    except (PromptChangeError, TaskInputError) as exc:
        result["error"] = f"{exc.field}: {exc.reason}"
    except PromptRenderError as exc:
        result["error"] = exc.message
    scope.update(form=form, result=result)
    return fragment_or_page(request, "prompts/layers.html", scope, part="result")
