"""What every page form carries besides its own fields: the version the operator loaded
(optimistic concurrency), a change note, where to go next; and how a refused change is told.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable

from django import forms
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import redirect
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from capabilities.config import record_refusal
from capabilities.errors import ConfigInvalid, StaleVersion
from capabilities.matrices import SaveResult
from capabilities.models import Project
from teamclaw.errors import DomainError
from web.scope import project_scope

log = logging.getLogger(__name__)

NOTE_MAX = 2000
"""Longest change note kept (characters)."""
SWITCH_VALUES: dict[str, bool | None] = {"on": True, "off": False, "inherit": None}
"""A switch form's ``enabled`` value -> the flag saved (``inherit``: a project follows the
global setting)."""
SWITCH_STATES = {
    "on": gettext_lazy("enabled"),
    "off": gettext_lazy("disabled"),
    "inherit": gettext_lazy("following the global setting"),
}
"""How a switch's new state is told to the operator."""


WHOLE_NUMBER = re.compile(r"-?[0-9]{1,18}")
"""A whole number as a form field may carry it: ASCII digits (not ``²`` or ``١٢``, which
``str.isdigit`` accepts), one optional minus sign, at most 18 digits (fits a 64-bit column)."""


def form_integer(raw: str) -> int | None:
    """``raw`` (a form field's text) as an int, or None when it is not a WHOLE_NUMBER."""
    return int(raw) if WHOLE_NUMBER.fullmatch(raw) else None


def form_version(request: HttpRequest) -> int | None:
    """The form's ``version`` (the document version the operator loaded), None when absent
    or not a whole number (the save is then refused as stale or invalid)."""
    version = form_integer(request.POST.get("version", ""))
    return version if version is not None and version >= 0 else None


def form_note(request: HttpRequest) -> str:
    """The form's change ``note``, stripped and cut at NOTE_MAX characters."""
    return (request.POST.get("note") or "").strip()[:NOTE_MAX]


def safe_next(request: HttpRequest, fallback: str) -> HttpResponseRedirect:
    """Redirect to the form's ``next`` when it is a page of this site, else to ``fallback``
    (an external ``next`` is never followed). The one place a page honours ``next``
    (tests/web/test_safe_redirects.py checks no other module reads it; the login page's ``next``
    is Django's LoginView, which checks it the same way)."""
    target = request.POST.get("next") or ""
    if target and url_has_allowed_host_and_scheme(target, {request.get_host()}, require_https=request.is_secure()):
        return redirect(target)
    return redirect(fallback)


PAGE_CONFIG_TYPES = {
    "role-new": "role",
    "role-edit": "role",
    "role-delete": "role",
    "role-switch": "role",
    "capability-switch": "capability",
    "matrix-editor": "permission",
    "constraints-edit": "constraint",
    "projects": "project",
    "project-detail": "project",
}
"""The pages that write governed configuration (URL name -> the audit trail's
``config_type``; the tool matrix's page is ``tool_binding``, see ``page_config_type``)."""
REFUSAL_ATTRIBUTE = "teamclaw_config_refusal"
CONFIG_TYPE_ATTRIBUTE = "teamclaw_config_type"
ATTEMPTED_ATTRIBUTE = "teamclaw_attempted_fields"


def note_attempted(request: HttpRequest, keys: Iterable[str]) -> None:
    """Name what this page request tried to change as config keys (``invoke_matrix.pm.dba``),
    so a refusal is audited with those (read as "invoke pm → dba") rather than the form's
    own field names (``allow``, ``base``); without it the fields at fault, else the form's."""
    setattr(request, ATTEMPTED_ATTRIBUTE, sorted(keys))


def note_refusal(request: HttpRequest, exc: DomainError) -> None:
    """Mark this page request's governed write as refused with ``exc``; once the page is
    answered, ``PageRefusalAuditMiddleware`` writes it to the audit trail, as the API's
    ``RefusalAudit`` does for the same refusal (PRD §4.8: who, when, what, why)."""
    setattr(request, REFUSAL_ATTRIBUTE, exc)


def page_config_type(request: HttpRequest) -> str | None:
    """The ``config_type`` this page request writes, or None for a page that writes none (a
    page whose type depends on what it writes, such as a revert, sets ``CONFIG_TYPE_ATTRIBUTE``)."""
    if explicit := getattr(request, CONFIG_TYPE_ATTRIBUTE, None):
        return str(explicit)
    match = request.resolver_match
    if match is None or match.url_name not in PAGE_CONFIG_TYPES:
        return None
    if match.url_name == "matrix-editor" and match.kwargs.get("which") != "invoke":
        return "tool_binding"
    return PAGE_CONFIG_TYPES[match.url_name]


class PageRefusalAuditMiddleware:
    """Audits a refused governed write made through a page form (``note_refusal``) as
    ``outcome: refused`` once the page has been answered, after the attempt's transaction
    rolled back (``capabilities.config.record_refusal``, the API's ``RefusalAudit`` shape:
    ``{status, code, detail, errors, method, path}``). A signed-in user refused for want of
    permission (403, ``PermissionDenied`` with its reason) is audited too, as the API does
    (``web.api.governance.refused_write``); an anonymous one, sent to the login page, is not.
    A refusal that cannot be audited is logged; the page is answered either way."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def process_exception(self, request: HttpRequest, exception: Exception) -> None:
        """Note a ``PermissionDenied`` a page raised, with its reason, for ``__call__`` to
        audit; Django still answers it (the 403 page)."""
        if isinstance(exception, PermissionDenied) and getattr(request, REFUSAL_ATTRIBUTE, None) is None:
            reason = str(exception) or "permission denied"
            note_refusal(request, DomainError(reason, status=403, code="permission_denied"))

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        exc = getattr(request, REFUSAL_ATTRIBUTE, None)
        if exc is None and response.status_code in (400, 403, 409):
            # a governed form refused without naming why: audited all the same (issue 31)
            exc = DomainError(f"the form was refused ({response.status_code})", status=response.status_code)
        if getattr(exc, "status", None) == 403 and not request.user.is_authenticated:
            exc = None  # nobody to name
        config_type = page_config_type(request) if exc is not None and request.method == "POST" else None
        if config_type and isinstance(exc, DomainError):
            try:
                self._audit(request, config_type, exc)
            except Exception:
                log.exception("could not audit a refused %s write from a page", config_type)
        return response

    def _audit(self, request: HttpRequest, config_type: str, exc: DomainError) -> None:
        match = request.resolver_match
        kwargs = match.kwargs if match is not None else {}
        slug = request.GET.get("project") or kwargs.get("slug") or ""
        ignored = {"csrfmiddlewaretoken", "version", "note", "next", "base", "days", "reset"}
        attempted = (
            getattr(request, ATTEMPTED_ATTRIBUTE, None)
            or list(exc.errors)
            or [key for key in request.POST if key not in ignored]
        )
        record_refusal(
            config_type,
            refusal={
                "status": exc.status,
                "code": exc.code,
                "detail": exc.message[:2000],
                "errors": exc.errors or {},
                "method": request.method,
                "path": request.path,
                "form": True,
            },
            attempted_fields=attempted,
            role=str(kwargs.get("role") or ""),
            project=Project.objects.filter(slug=slug).first() if slug else None,
            note=form_note(request),
            actor=request.user,
        )


def show_refusal(request: HttpRequest, exc: DomainError) -> None:
    """Tell the operator why a change was refused, as a message on the next page (the pages'
    one place for refusals shown this way): a stale version with the latest changes saved
    meanwhile; every field at fault; else the error's message. The refusal is audited
    (``note_refusal``)."""
    note_refusal(request, exc)
    if isinstance(exc, StaleVersion):
        lines = [str(exc)]
        for change in exc.changes[-5:]:
            fields = ", ".join(f"{k}: {v['old']} → {v['new']}" for k, v in list(change["changes"].items())[:5])
            lines.append(f"v{change['version']} by {change['actor'] or 'an import'}: {fields}")
        messages.error(request, " · ".join(lines))
    elif exc.errors:
        messages.error(request, "; ".join(f"{k}: {', '.join(v)}" for k, v in exc.errors.items()))
    else:
        messages.error(request, exc.message)


def refuse_into(form: forms.Form, exc: DomainError, *, fields: dict[str, str] | None = None) -> None:
    """Put a refusal the domain layer made after the form was valid onto the form, so the
    page shows it like the form's own checks (``forms/_field_errors.html``): each reason
    ``exc.errors`` names for a field of the form next to that field (``fields`` maps the
    domain's field name to the form's when they differ), the rest, and a refusal naming no
    field, as the form's own (non-field) error. The form stays bound: what was typed is kept."""
    names = fields or {}
    placed = False
    for field, reasons in exc.errors.items():
        target = names.get(field, field)
        for reason in reasons:
            form.add_error(target if target in form.fields else None, reason)
            placed = True
    if not placed:
        form.add_error(None, exc.message)


SwitchSave = Callable[..., SaveResult]
"""``save(obj, *, project, version, data, note, actor)``: ``update_role`` or ``update_capability``."""


def apply_switch(
    request: HttpRequest,
    obj: object,
    *,
    save: SwitchSave,
    subject: str,
    fallback: str,
    sentence_start: str | None = None,
) -> HttpResponseRedirect:
    """The on / off / inherit switch form of a role or a capability card (PRD §4.1, US-06):
    check the form's ``enabled`` (``inherit`` only for a project, ``?project=`` or the form's
    ``project``), save it as one audited change with the form's version and note, tell the
    operator what happened and go back to ``next`` or ``fallback``. ``subject`` names the
    thing inside a sentence ("role pm", "code_review"), ``sentence_start`` at its start
    ("Role pm"; ``subject`` by default). A refusal is told (``show_refusal``); nothing is saved."""
    project: Project | None = project_scope(request, form=True)
    wanted = request.POST.get("enabled", "")
    if wanted not in SWITCH_VALUES or (wanted == "inherit" and project is None):
        messages.error(request, _("enabled: must be on, off or (for a project) inherit"))
        return safe_next(request, fallback)
    try:
        result = save(
            obj,
            project=project,
            version=form_version(request),
            data={"enabled": SWITCH_VALUES[wanted]},
            note=form_note(request),
            actor=request.user,
        )
    except (StaleVersion, ConfigInvalid) as exc:
        show_refusal(request, exc)
    else:
        told = {
            "subject": sentence_start or subject,
            "state": SWITCH_STATES[wanted],
            "project": project.name if project else "",
            "version": result.change.new_version if result.change else "",
        }
        if result.change and project:
            messages.success(
                request, _("%(subject)s is now %(state)s in project %(project)s (config version %(version)s).") % told
            )
        elif result.change:
            messages.success(request, _("%(subject)s is now %(state)s (config version %(version)s).") % told)
        elif project:
            told["subject"] = subject
            messages.info(
                request, _("Nothing changed: %(subject)s is already %(state)s in project %(project)s.") % told
            )
        else:
            told["subject"] = subject
            messages.info(request, _("Nothing changed: %(subject)s is already %(state)s.") % told)
    return safe_next(request, fallback)
