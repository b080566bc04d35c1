"""Pages: the audit trail of config changes (PRD §4.8) and import/export (US-10)."""

from __future__ import annotations

import hashlib
from typing import Any

from django import forms
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.utils.translation import ngettext
from django.views.decorators.http import require_http_methods

from capabilities.access import can_change, require_change
from capabilities.audit import CONFIG_TYPES, OUTCOMES, change_document, filter_changes
from capabilities.config import current_version
from capabilities.errors import ConfigInvalid, StaleVersion
from capabilities.models import Project
from capabilities.safe_yaml import DocumentError, load_document, max_config_bytes
from team.config_import import import_config
from team.revert import REVERTIBLE_TYPES, find_change, revert, revert_preview
from teamclaw.errors import DomainError, InvalidField
from teamclaw.whole_numbers import whole_number
from web.forms import CONFIG_TYPE_ATTRIBUTE, form_note, show_refusal


# --------------------------------------------------------------------------- audit
def change_list(request: HttpRequest) -> HttpResponse:
    """The audit trail: every config change and refused attempt, newest first, 50 a page,
    with filters (``outcome``: applied or refused)."""
    filters = {name: request.GET.get(name, "") for name in ("outcome", "config_type", "project", "role", "q")}
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
            # ``when``: the time itself, shown in the operator's zone (the document's is UTC text)
            "changes": [{**change_document(c), "when": c.created_at} for c in page.object_list],
            "filters": filters,
            "query": query,
            "error": error,
            "config_types": CONFIG_TYPES,
            "outcomes": OUTCOMES,
            "projects": Project.objects.all(),
            "version": current_version(),
            "revertible_types": REVERTIBLE_TYPES,
            "can_revert": request.user.is_staff,
        },
    )


@require_http_methods(["GET", "POST"])
def change_revert(request: HttpRequest, change_id: int) -> HttpResponse:
    """Revert one change from the audit trail (``team.revert``): GET previews what it would
    change now, POST (staff) applies it at the config version the preview was read at and
    goes back to the audit trail; a refusal (stale version, nothing to revert) shows the page
    again with the reason and the fresh preview."""
    change = find_change(change_id)
    if request.method == "POST":
        if not request.user.is_staff:
            raise PermissionDenied(_("Reverting a change needs a staff user."))
        setattr(request, CONFIG_TYPE_ATTRIBUTE, change.config_type)
        raw = request.POST.get("version", "")
        try:
            reverted = revert(change, version=whole_number(raw, "version"), actor=request.user, note=form_note(request))
        except DomainError as exc:
            show_refusal(request, exc)
        else:
            messages.success(
                request,
                _("Reverted change #%(change)s: saved as config version %(version)s.")
                % {"change": change.pk, "version": reverted.new_version},
            )
            return redirect("config-changes")
    return render(
        request,
        "capabilities/change_revert.html",
        {
            "nav": "audit",
            "change": {**change_document(change), "when": change.created_at},
            "preview": revert_preview(change),
        },
    )


# --------------------------------------------------------------------------- import/export
class ConfigImportForm(forms.Form):
    """The import form (US-10): a ``document`` file or the pasted ``text`` (the file wins),
    its ``format`` (blank: told from the text), ``action`` (``preview`` or ``apply``), and
    for an apply the ``expected_version`` and ``digest`` its preview gave (checked by
    ``_import``: whole number, same text)."""

    document = forms.FileField(required=False)
    text = forms.CharField(required=False, strip=False)
    format = forms.ChoiceField(required=False, choices=[("", ""), ("yaml", "YAML"), ("json", "JSON")])
    action = forms.ChoiceField(required=False, choices=[("preview", "preview"), ("apply", "apply")])
    expected_version = forms.CharField(required=False)
    digest = forms.CharField(required=False, max_length=64)


def preview_digest(text: str) -> str:
    """The SHA-256 (hex) that ties an import's Apply to its preview. Line endings do not
    count: a browser submits the previewed text from the textarea with CRLF line endings
    while an uploaded file may have LF, and YAML and JSON read both alike."""
    return hashlib.sha256(text.replace("\r\n", "\n").encode()).hexdigest()


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
        form = ConfigImportForm(request.POST, request.FILES)
        context["note"] = form_note(request)
        if not form.is_valid():
            context["errors"] = {field: [str(r) for r in reasons] for field, reasons in form.errors.items()}
            context["text"] = str(form.data.get("text", ""))
            status = 400
        else:
            outcome = _import(request, form.cleaned_data, context)
            if isinstance(outcome, HttpResponse):
                return outcome
            status = outcome
    return render(request, "capabilities/config_transfer.html", context, status=status)


def _import(request: HttpRequest, data: dict[str, Any], context: dict[str, Any]) -> HttpResponse | int:
    """Preview or apply the import ``ConfigImportForm`` took (``data``): the redirect after an
    apply, else the page's status (200 preview, 400 refused, 409 stale), ``context`` filled."""
    upload = data["document"]
    raw: bytes | str = upload.read(max_config_bytes() + 1) if upload else data["text"]
    apply = data["action"] == "apply"
    expected = data["expected_version"]
    try:
        document = load_document(raw, data["format"])
        context["text"] = raw.decode("utf-8-sig") if isinstance(raw, bytes) else raw
        context["digest"] = preview_digest(context["text"])
        if apply and data["digest"] != context["digest"]:
            raise ConfigInvalid(
                {"document": ["changed since the preview (or was never previewed): preview it again, then apply"]}
            )
        result = import_config(
            document,
            dry_run=not apply,
            expected_version=whole_number(expected, "expected_version") if apply and expected else None,
            note=context["note"],
            actor=request.user,
        )
    except DocumentError as exc:
        context["errors"], context["text"] = exc.errors, raw if isinstance(raw, str) else ""
        return 400
    except (ConfigInvalid, InvalidField) as exc:
        context["errors"] = exc.errors
        return 400
    except StaleVersion as exc:
        context["conflict"] = exc
        return 409
    if not apply:
        context["result"], context["version"] = result, result.config_version
        return 200
    if result.applied:
        count = len(result.changes)
        text = ngettext(
            "Imported %(count)d change as config version %(version)s.",
            "Imported %(count)d changes as config version %(version)s.",
            count,
        )
        messages.success(request, text % {"count": count, "version": result.config_version})
    else:
        messages.info(request, _("Nothing to import: the configuration already matches the document."))
    return redirect("config-transfer")
