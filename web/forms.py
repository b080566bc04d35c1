"""What every page form carries besides its own fields: the version the operator loaded
(optimistic concurrency), a change note, where to go next; and how a refused change is told.
"""

from __future__ import annotations

from collections.abc import Callable

from django.contrib import messages
from django.http import HttpRequest, HttpResponseRedirect
from django.shortcuts import redirect
from django.utils.http import url_has_allowed_host_and_scheme

from capabilities.errors import ConfigInvalid, StaleVersion
from capabilities.matrices import SaveResult
from capabilities.models import Project
from teamclaw.errors import DomainError
from web.scope import project_scope

NOTE_MAX = 2000
"""Longest change note kept (characters)."""
SWITCH_VALUES: dict[str, bool | None] = {"on": True, "off": False, "inherit": None}
"""A switch form's ``enabled`` value -> the flag saved (``inherit``: a project follows the
global setting)."""
SWITCH_STATES = {"on": "enabled", "off": "disabled", "inherit": "following the global setting"}
"""How a switch's new state is told to the operator."""


def form_version(request: HttpRequest) -> int | None:
    """The form's ``version`` (the document version the operator loaded), None when absent
    or not a whole number (the save is then refused as stale or invalid)."""
    raw = request.POST.get("version", "")
    return int(raw) if raw.isdigit() else None


def form_note(request: HttpRequest) -> str:
    """The form's change ``note``, stripped and cut at NOTE_MAX characters."""
    return (request.POST.get("note") or "").strip()[:NOTE_MAX]


def safe_next(request: HttpRequest, fallback: str) -> HttpResponseRedirect:
    """Redirect to the form's ``next`` when it is a page of this site, else to ``fallback``
    (an external ``next`` is never followed). The one place a page honours ``next``
    (tests/test_safe_redirects.py checks no other module reads it; the login page's ``next``
    is Django's LoginView, which checks it the same way)."""
    target = request.POST.get("next") or ""
    if target and url_has_allowed_host_and_scheme(target, {request.get_host()}, require_https=request.is_secure()):
        return redirect(target)
    return redirect(fallback)


def show_refusal(request: HttpRequest, exc: DomainError) -> None:
    """Tell the operator why a change was refused, as a message on the next page (the pages'
    one place for refusals shown this way): a stale version with the latest changes saved
    meanwhile; every field at fault; else the error's message."""
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
        messages.error(request, "enabled: must be on, off or (for a project) inherit")
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
        where = f" in project {project.name}" if project else ""
        state = SWITCH_STATES[wanted]
        if result.change:
            version = result.change.new_version
            messages.success(request, f"{sentence_start or subject} is now {state}{where} (config version {version}).")
        else:
            messages.info(request, f"Nothing changed: {subject} is already {state}{where}.")
    return safe_next(request, fallback)
