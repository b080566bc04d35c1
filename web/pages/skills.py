"""Pages: skills (seed 003: list, upload, detail with health and metrics, lifecycle actions
with confirmation) and the capability dependency graph. Changing skills needs staff."""

from __future__ import annotations

import json
import time
from typing import Any

import semver
from django import forms
from django.conf import settings
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.safestring import mark_safe
from django.utils.translation import gettext
from django.views.decorators.http import require_http_methods

from capabilities.graph_svg import render_svg, skill_graph
from capabilities.lifecycle import (
    LifecycleError,
    activate_skill,
    deactivate_skill,
    discover_skill,
    install_skill,
    owner_role_fit,
    skill_dependents,
    uninstall_skill,
)
from capabilities.models import AgentRole, Skill
from capabilities.skill_documents import skill_document
from capabilities.skill_index import MAX_SKILL_INDEX_BYTES, SkillIndexError
from capabilities.skill_models import SkillStatus
from monitoring.metrics import capability_metrics
from monitoring.models import Alert
from monitoring.skill_contexts import running_contexts
from runs.health import MESSAGES as HEALTH_MESSAGES
from runs.health_here import capability_status_here
from team.snapshot import build_snapshot
from teamclaw.labels import reworded
from teamclaw.strict_json import JsonRefused, loads

ACTIONS = ("install", "activate", "deactivate", "uninstall")
HEALTH_WAIT_S = 5.0
"""How long (s) the skill page waits, for all its capabilities together, for the runtime's health."""


def require_staff(request: HttpRequest) -> None:
    """Raise PermissionDenied (403) unless the user is staff: changing skills and workflows."""
    if not request.user.is_staff:
        raise PermissionDenied("changing skills and workflows needs a staff account")


def skill_list(request: HttpRequest) -> HttpResponse:
    """Every skill with its state badge and the actions its state allows (``?status=``)."""
    skills = Skill.objects.all()
    wanted = request.GET.get("status", "").upper()
    if wanted in SkillStatus.values:
        skills = skills.filter(status=wanted)
    page = Paginator(skills, 25).get_page(request.GET.get("page"))
    rows = [skill_document(s, full=False) for s in page.object_list]
    return render(
        request,
        "capabilities/skill_list.html",
        {
            "nav": "skills",
            "page": page,
            "rows": rows,
            "statuses": SkillStatus.values,
            "wanted": wanted,
            "roles": AgentRole.objects.filter(enabled=True),
        },
    )


class SkillUploadForm(forms.Form):
    """The upload page: a skill-index.yaml ``file`` or the pasted ``yaml`` (the file wins),
    and ``allow_downgrade`` (replace the stored version). ``discover_skill`` checks the text,
    listing every problem with its line."""

    file = forms.FileField(required=False)
    yaml = forms.CharField(required=False, strip=False)
    allow_downgrade = forms.BooleanField(required=False)


class SkillActionForm(forms.Form):
    """A lifecycle action's inputs: the owner ``role``, the install ``config`` (JSON text)
    and ``force``; the lifecycle checks them (its refusals name the field)."""

    role = forms.CharField(required=False, strip=False)
    config = forms.CharField(required=False, strip=False)
    force = forms.BooleanField(required=False)

    def shown(self) -> dict[str, Any]:
        """What was posted, for the page shown again (a blank config reads ``{}``)."""
        return {
            "role": str(self.data.get("role", "")),
            "config": str(self.data.get("config", "")) or "{}",
            "force": self.data.get("force") == "on",
        }

    def check(self) -> None:
        """ValueError ("field: reason") when the form refuses a value (a NUL character)."""
        if not self.is_valid():
            raise ValueError(
                "; ".join(f"{field}: {' '.join(str(r) for r in reasons)}" for field, reasons in self.errors.items())
            )


@require_http_methods(["GET", "POST"])
def skill_upload(request: HttpRequest) -> HttpResponse:
    """Upload (file) or paste a skill-index.yaml; every problem is listed with its line."""
    require_staff(request)
    problems: list[Any] = []
    text = ""
    error = ""
    downgrade = False
    if request.method == "POST":
        form = SkillUploadForm(request.POST, request.FILES)
        form.is_valid()  # every field is optional; discover_skill words what is wrong with the text
        data = {"file": None, "yaml": "", "allow_downgrade": False, **form.cleaned_data}
        if "yaml" in form.errors:  # a NUL character: discover_skill refuses the text that is left
            data["yaml"] = str(form.data.get("yaml", ""))
        upload, downgrade = data["file"], bool(data["allow_downgrade"])
        raw: bytes | str = upload.read(MAX_SKILL_INDEX_BYTES + 1) if upload else data["yaml"]
        text = "" if upload else data["yaml"]
        try:
            skill, _operation, created = discover_skill(raw, actor=request.user, allow_downgrade=downgrade)
        except SkillIndexError as exc:
            problems = exc.problems
        except LifecycleError as exc:
            error = upload_refusal(exc)
        else:
            told = (
                gettext("Skill %(id)s discovered: %(status)s. Install it next.")
                if created
                else gettext("Skill %(id)s replaced: %(status)s. Install it next.")
            )
            messages.success(request, told % {"id": skill.skill_id, "status": skill.status})
            return redirect("skill-detail", skill_id=skill.skill_id)
    return render(
        request,
        "capabilities/skill_upload.html",
        {
            "nav": "skills",
            "problems": problems,
            "error": error,
            "text": text,
            "downgrade": downgrade,
            "limit": MAX_SKILL_INDEX_BYTES,
        },
        status=400 if problems or error else 200,
    )


def upload_refusal(exc: LifecycleError) -> str:
    """What the upload page says for a refused upload: a version refusal (an older version, or
    the stored version with other content) in the page's language, any other refusal as the
    lifecycle words it."""
    known, uploaded = exc.extra.get("current_version"), exc.extra.get("uploaded_version")
    if not known or not uploaded:
        return exc.message
    versions = {"known": known, "uploaded": uploaded}
    if semver.Version.parse(uploaded).compare(known) < 0:
        return (
            gettext(
                "version: the stored version is %(known)s and this upload is the older %(uploaded)s. Versions only "
                "move forward: upload a newer version, or tick “Replace the stored version” to go back."
            )
            % versions
        )
    return (
        gettext(
            "version: %(uploaded)s is already stored with other content. Bump the version, or tick “Replace the "
            "stored version” to replace it."
        )
        % versions
    )


def skill_detail(request: HttpRequest, skill_id: str) -> HttpResponse:
    """A skill: capabilities by type with cap:// addresses, health and metrics; dependencies
    with status; providers; alert rules and their alerts; warnings; history; the YAML."""

    skill = get_object_or_404(Skill, skill_id=skill_id)
    document = skill_document(skill)
    live: dict[str, Any] = {}
    deadline = time.monotonic() + HEALTH_WAIT_S
    for row in document["capabilities"]:
        if not row["registered"]:
            continue
        try:
            health = capability_status_here(row["capabilityId"], timeout_s=max(0.1, deadline - time.monotonic()))
        except TimeoutError:  # a busy runtime delays the page by HEALTH_WAIT_S at most, not per capability
            late = gettext("the runtime did not answer within %(seconds)s s") % {"seconds": f"{HEALTH_WAIT_S:g}"}
            health = {"status": "UNKNOWN", "message": late, "providers": []}
        except Exception as exc:  # the page must render even when the runtime is not reachable
            health = {"status": "UNKNOWN", "message": f"runtime not reachable: {exc}", "providers": []}
        if health is None:  # registered a moment ago: the runtime has not reloaded its config yet
            health = {"status": "UNKNOWN", "message": "the runtime has not loaded this card yet", "providers": []}
        health = {**health, "message": reworded(str(health.get("message") or ""), HEALTH_MESSAGES)}
        live[row["capabilityId"]] = {"health": health, "metrics": capability_metrics(row["capabilityId"])}
    for row in document["capabilities"]:
        row["live"] = live.get(row["capabilityId"])
    providers = next((v["health"].get("providers") for v in live.values() if v["health"].get("providers")), None)
    by_type = {t: [r for r in document["capabilities"] if r["type"] == t] for t in ("ENTRY", "EXPOSED", "INTERNAL")}
    alerts = Alert.objects.filter(rule__skill=skill).select_related("rule")[:20]
    return render(
        request,
        "capabilities/skill_detail.html",
        {
            "nav": "skills",
            "skill": skill,
            "doc": document,
            "by_type": by_type,
            "providers": providers,
            "alerts": alerts,
            "roles": AgentRole.objects.filter(enabled=True),
        },
    )


@require_http_methods(["GET", "POST"])
def skill_action(request: HttpRequest, skill_id: str, action: str) -> HttpResponse:
    """Confirm and run a lifecycle action. GET shows what it touches (for deactivate and
    uninstall: every capability, skill, workflow, role and running context depending on the
    skill); POST runs it. A refusal re-renders the page with the reason (status 409/400)."""
    if action not in ACTIONS:
        raise Http404(f"no action {action}")
    require_staff(request)
    skill = get_object_or_404(Skill, skill_id=skill_id)
    error = ""
    errors: dict[str, list[str]] = {}
    status = 200
    form = {"role": skill.role or "", "config": json.dumps(skill.install_config or {}, indent=2), "force": False}
    if request.method == "POST":
        posted = SkillActionForm(request.POST)
        form.update(posted.shown())
        try:
            posted.check()
            if action == "activate":
                _check_owner_fits(skill, str(form["role"]))
            operation = _perform(action, skill_id, form, request.user)
        except ValueError as exc:
            error, status = str(exc), 400
        except LifecycleError as exc:
            error, errors = exc.message, _details(exc.message, exc.errors)
            status = 400 if exc.code == "invalid" else 409
        else:
            level = messages.error if operation.to_status == "ERROR" else messages.success
            text = f"{action.capitalize()} {skill_id}: {operation.to_status}"
            level(request, text + (f" — {operation.error}" if operation.error else "."))
            return redirect("skill-detail", skill_id=skill_id)
        skill.refresh_from_db()
    dependents = skill_dependents(skill, running_contexts) if action in ("deactivate", "uninstall") else None
    return render(
        request,
        "capabilities/skill_action.html",
        {
            "nav": "skills",
            "skill": skill,
            "action": action,
            "dependents": dependents,
            "error": error,
            "errors": errors,
            "form": form,
            "roles": AgentRole.objects.filter(enabled=True),
            "owner_fit": owner_role_fit(skill) if action == "activate" else None,
        },
        status=status,
    )


def _check_owner_fits(skill: Skill, role: str) -> None:
    """The activate form offers only the roles that fit (``owner_role_fit``); one that does
    not (a hand-made POST, or the matrix changed since the page was shown) is refused with
    its reasons before anything is written. A missing or unknown role is left to
    ``activate_skill``'s own refusal."""
    fit = next((f for f in owner_role_fit(skill) if f.role == role), None)
    if fit is not None and not fit.fits:
        reason = gettext("role %(role)s does not fit: %(reasons)s") % {"role": role, "reasons": "; ".join(fit.reasons)}
        raise LifecycleError("invalid", reason, {"role": [reason]})


def _details(message: str, errors: dict[str, list[str]]) -> dict[str, list[str]]:
    """The reasons of ``errors`` that ``message`` does not already state (the page shows the
    message, then these), so "role is required" is not followed by "role: is required"."""
    details = {field: [r for r in reasons if r not in message] for field, reasons in errors.items()}
    return {field: reasons for field, reasons in details.items() if reasons}


def _perform(action: str, skill_id: str, form: dict[str, Any], user: Any) -> Any:
    if action == "install":
        try:
            config = loads(form["config"], max_bytes=int(settings.DATA_UPLOAD_MAX_MEMORY_SIZE))
        except JsonRefused as exc:
            raise ValueError(f"config is not JSON: {exc}") from None
        if not isinstance(config, dict):
            raise ValueError("config must be a JSON object")
        return install_skill(skill_id, config, actor=user)
    if action == "activate":
        return activate_skill(skill_id, form["role"], actor=user)
    if action == "deactivate":
        return deactivate_skill(skill_id, actor=user, force=form["force"], running_contexts=running_contexts)
    return uninstall_skill(skill_id, actor=user, force=form["force"], running_contexts=running_contexts)


def dependency_graph(request: HttpRequest) -> HttpResponse:
    """PRD §4.2 ``get_capability_dependency_graph`` drawn as SVG (``?scope=all``,
    ``?invoke=1`` for the invoke matrix arcs)."""
    scope = "all" if request.GET.get("scope") == "all" else "skills"
    invoke = request.GET.get("invoke") == "1"
    graph = skill_graph(build_snapshot(), scope=scope, invoke=invoke)
    svg = mark_safe(render_svg(graph))
    return render(
        request,
        "capabilities/dependency_graph.html",
        {"nav": "skills", "svg": svg, "graph": graph, "scope": scope, "invoke": invoke},
    )
