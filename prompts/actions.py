"""Changing prompts: save a version, roll back, activate a draft (PRD §4.5, §4.8).

Every change runs in one transaction that locks the role row (concurrent saves of a role's
prompts queue instead of racing for the same version number), writes the version, moves the
active flag, and calls ``capabilities.config.record_change("prompt", ...)``, which bumps the
config version, writes the audit row and publishes the ``ConfigChangeEvent`` after commit.
Running agents pick the new prompt up at their next task start; a task in flight keeps the
snapshot (and so the prompt) it started with (PRD §4.8). Nothing is half-applied: a refusal
raises before anything is written, and any later failure rolls the whole change back.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.translation import gettext_lazy as _lazy

from capabilities.config import record_change
from capabilities.models import AgentRole, ConfigChange, Project
from capabilities.snapshot import governance_snapshot
from prompts.models import TEMPLATE_TYPES, PromptTemplate, PromptVersion
from prompts.queries import NotFoundError, find_template, get_version
from prompts.render import (
    ALWAYS_AVAILABLE,
    STANDARD_VARIABLES,
    PromptRenderError,
    compile_template,
    near_names,
    render,
    standard_variables,
    undeclared_variables,
    used_variables,
    validate_variables,
)
from prompts.versions import VersionError, next_version, parse
from teamclaw.errors import InvalidField
from teamclaw.labels import worded

LANGUAGE = re.compile(r"^[a-z]{2,3}(-[A-Za-z0-9]{2,8}){0,2}$")
MAX_NOTE_CHARS = 500


class PromptChangeError(InvalidField, ValueError):
    """A change that was refused. ``field`` names the input at fault, ``reason`` says why,
    ``status`` is the HTTP status that fits (400 bad input, 409 conflict with the current
    state). ``render_error`` is the template's compile or render failure behind it, if any
    (pages word it in the reader's language: kind, line, the engine's own message)."""

    def __init__(
        self,
        reason: str,
        field: str = "non_field_errors",
        status: int = 400,
        *,
        render_error: PromptRenderError | None = None,
    ) -> None:
        super().__init__(reason, field, status=status)
        self.render_error = render_error


@dataclass
class ChangeResult:
    """What a change produced: the new (or activated) ``version``, the config ``change`` it
    was audited as, and ``warnings`` for the operator (``undeclared`` names used in the
    content that are neither declared nor always available, declared names it does not use, a
    sample render that failed); ``check`` is the saved content's ContentCheck (None for a
    rollback or an activation), for pages that word the warnings in the reader's language."""

    version: PromptVersion
    change: ConfigChange
    undeclared: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    check: ContentCheck | None = None


@dataclass
class ContentCheck:
    """The result of checking content: the normalised ``variables``, the ``undeclared`` names
    (with ``suggestions``: a misspelt name -> the close declared or always-available names),
    the declared names the content never uses (``unused``), the sample ``values`` used, and
    the sample render's ``text`` or its ``error``."""

    variables: list[dict[str, Any]]
    undeclared: list[str]
    values: dict[str, Any]
    text: str | None = None
    error: PromptRenderError | None = None
    unused: list[str] = field(default_factory=list)
    suggestions: dict[str, list[str]] = field(default_factory=dict)

    @property
    def warnings(self) -> list[str]:
        """What an operator should know before saving: undeclared names (with "did you mean"),
        declared names never used, a failed sample render."""
        out = []
        if self.undeclared:
            out.append(
                "used but neither declared nor always available (this version cannot be activated): "
                + ", ".join(_with_suggestion(name, self.suggestions) for name in self.undeclared)
            )
        if self.unused:
            out.append("declared but not used in the template: " + ", ".join(self.unused))
        if self.sample_failure is not None:
            out.append(f"a sample render failed: {self.sample_failure.message}")
        return out

    @property
    def sample_failure(self) -> PromptRenderError | None:
        """The sample render's error, unless it only repeats an undeclared name."""
        if self.error is None or (self.error.kind == "undefined" and self.error.field in self.undeclared):
            return None
        return self.error

    def declarations(self) -> list[dict[str, Any]]:
        """What the version will declare, each ``{name, required, default?, description,
        used}`` (``used``: the content reads it; an unused one is only a warning)."""
        return [{**variable, "used": variable["name"] not in self.unused} for variable in self.variables]

    def activation_refusal(self) -> ActivationRefused | None:
        """Why this content may not become the active version (None when it may): a name
        that is neither declared nor always available, or a sample render that fails with the
        declared variables (defaults, a placeholder for each required one) and the
        always-available ones. A draft with such content may still be saved."""
        if self.undeclared:
            names = ", ".join(_with_suggestion(n, self.suggestions) for n in self.undeclared)
            verb = "is" if len(self.undeclared) == 1 else "are"
            reason = (
                f"cannot be activated: {names} {verb} used but not declared; declare "
                f"{'it' if len(self.undeclared) == 1 else 'them'} in variables or use an always-available "
                f"variable ({', '.join(ALWAYS_AVAILABLE)}); save it as a draft to keep it"
            )
            return ActivationRefused(reason, self)
        if self.error is not None:
            reason = (
                "cannot be activated: it does not render with its declared variables and the always-available "
                f"ones ({', '.join(ALWAYS_AVAILABLE)}): {self.error.message}; save it as a draft to keep it"
            )
            return ActivationRefused(reason, self)
        return None


class ActivationRefused(PromptChangeError):
    """A version that cannot render may not become active (400, field ``content``). The API
    body adds ``undeclared_variables``, ``suggestions`` (name -> close names) and
    ``available_variables`` (the always-available names)."""

    def __init__(self, reason: str, check: ContentCheck) -> None:
        super().__init__(reason, "content", 400)
        self.check = check
        self.extra = {
            "undeclared_variables": check.undeclared,
            "suggestions": check.suggestions,
            "available_variables": list(ALWAYS_AVAILABLE),
        }


def _with_suggestion(name: str, suggestions: dict[str, list[str]]) -> str:
    """``'tone'`` or ``'tnoe' (did you mean 'tone'?)``."""
    close = suggestions.get(name)
    hint = f" (did you mean {' or '.join(repr(c) for c in close)}?)" if close else ""
    return f"{name!r}{hint}"


def sample_values(role: AgentRole, project: Project | None, task_description: str = "") -> dict[str, Any]:
    """The standard variables ``role`` gets in ``project`` (None = global config) for a task."""
    snapshot = governance_snapshot(project)
    return standard_variables(snapshot, role.role, task_description)


def check_content(
    content: str,
    variables: Any,
    *,
    role: AgentRole,
    project: Project | None = None,
    values: dict[str, Any] | None = None,
) -> ContentCheck:
    """Check a template before it is saved or previewed (PRD §4.5).

    Refuses (PromptChangeError, field ``content`` or ``variables``) content that is not text,
    over 50,000 characters, does not compile, declares malformed variables, or that the
    sandbox refuses when rendered with sample values: the role's standard variables for
    ``project``, declared defaults, a placeholder for each required variable without one,
    then ``values``. Other failures of the sample render (an undefined name, a type error)
    are returned in ``error`` for the caller to show; ``activation_refusal()`` says whether
    they keep the content from being activated.
    """
    if isinstance(content, str) and "\x00" in content:
        raise PromptChangeError(worded(_lazy("content contains a NUL character")), "content")
    try:
        clean = validate_variables(variables)
        compile_template(content)
        undeclared = undeclared_variables(content, clean, STANDARD_VARIABLES)
        used = used_variables(content)
    except PromptRenderError as exc:
        field = exc.field if exc.field == "variables" else "content"
        raise PromptChangeError(exc.message, field, render_error=exc) from None
    known = {v["name"] for v in clean} | set(ALWAYS_AVAILABLE)
    suggestions = {name: close for name in undeclared if (close := near_names(name, known))}
    unused = [v["name"] for v in clean if v["name"] not in used]
    sample = sample_values(role, project, "Sample task description")
    sample.update({v["name"]: f"<{v['name']}>" for v in clean if v["required"] and "default" not in v})
    sample.update(values or {})
    check = ContentCheck(clean, undeclared, sample, unused=unused, suggestions=suggestions)
    try:
        check.text = render(content, clean, sample)
    except PromptRenderError as exc:
        if exc.blocks_saving:
            raise PromptChangeError(exc.message, "content", render_error=exc) from None
        check.error = exc
    return check


def _refuse_unrenderable(version: PromptVersion, role: AgentRole, project: Project | None) -> None:
    """Raise ActivationRefused if ``version`` cannot render with its declared and the
    always-available variables (checked again now: a rollback target was saved long ago)."""
    refusal = check_content(version.content, version.variables, role=role, project=project).activation_refusal()
    if refusal is not None:
        raise refusal


def _check_type(template_type: str) -> None:
    if template_type not in TEMPLATE_TYPES:
        raise PromptChangeError(f"template type '{template_type[:40]}' does not exist", "template_type", 404)


def _lock(role: AgentRole) -> None:
    AgentRole.objects.select_for_update().filter(pk=role.pk).first()


def _active(template: PromptTemplate | None) -> PromptVersion | None:
    return template.versions.filter(is_active=True).first() if template else None


def _check_base(base_version: str | None, active: PromptVersion | None) -> None:
    """Optimistic lock: refuse when the operator edited a version that is no longer active."""
    if base_version is None:
        return
    current = active.version if active else ""
    if base_version != current:
        raise PromptChangeError(
            worded(
                _lazy(
                    "the active version is now %(current)s, not %(base)s: someone changed this template; reload it "
                    "and reapply your edit"
                ),
                current=current or "none",
                base=base_version or "none",
            ),
            "base_version",
            409,
        )


def _language(value: str | None, fallback: str) -> str:
    if value in (None, ""):
        return fallback
    if not isinstance(value, str) or not LANGUAGE.match(value):
        raise PromptChangeError("language must be a language code such as en, zh or pt-BR", "language")
    return value


def _note(value: Any) -> str:
    if value is None:
        return ""
    if not isinstance(value, str) or len(value) > MAX_NOTE_CHARS:
        raise PromptChangeError(f"note must be text of at most {MAX_NOTE_CHARS} characters", "note")
    return value.strip()


def _changed_fields(template_type: str, old: PromptVersion | None, new: PromptVersion) -> list[str]:
    fields = [f"{template_type}.active_version"]
    for name in ("content", "variables", "language"):
        if old is None or getattr(old, name) != getattr(new, name):
            fields.append(f"{template_type}.{name}")
    return fields


def _record(
    *,
    role: AgentRole,
    template: PromptTemplate,
    old: PromptVersion | None,
    new: PromptVersion,
    fields: list[str],
    note: str,
    actor: Any,
) -> ConfigChange:
    PromptTemplate.objects.filter(pk=template.pk).update(updated_at=timezone.now())
    template_type = template.template_type
    if new.is_active:
        changes = {f"{template_type}.active_version": {"old": old.version if old else None, "new": new.version}}
    else:
        changes = {f"{template_type}.draft": {"old": None, "new": new.version}}
    return record_change(
        "prompt",
        role=role.role,
        project=template.project,
        changed_fields=fields,
        changes=changes,
        note=note or f"{template_type} {new.version}",
        actor=actor,
    )


def save_version(
    *,
    role: AgentRole,
    template_type: str,
    content: str,
    actor: Any,
    bump: str = "patch",
    version: str | None = None,
    variables: Any = None,
    language: str | None = None,
    note: str | None = "",
    project: Project | None = None,
    activate: bool = True,
    base_version: str | None = None,
) -> ChangeResult:
    """Save ``content`` as a new version of ``role``'s ``template_type`` in ``project``'s
    layer (None = global), and make it the active one unless ``activate`` is False (a draft).

    The version is ``version`` if given, else the highest existing one bumped by ``bump``
    (``patch``, ``minor``, ``major`` or ``prerelease``); a layer's first version is 1.0.0.
    ``variables`` are the declarations of the new version exactly as sent; absent (None) means
    it declares none. Never the active version's (issue 31: inherited declarations carried a
    required variable into versions whose content no longer used it). "None" rather than
    "derived from the content" because a derived declaration could only be optional and
    without a default, which fails at render anyway: deriving would move the refusal from
    the save to a run. With none, a name the content uses that is not always available is
    refused at activation, naming it and its close names; the editor page pre-fills the
    declarations it will send, visibly. A declared variable the content does not use is only
    a warning. ``language`` None keeps the active version's language (for a new override,
    the global layer's). ``base_version`` is the version
    the operator edited: if another one became active since, the save is refused (409).

    Raises PromptChangeError: bad content, variables, version, bump, language or note (400);
    ActivationRefused (400) when ``activate`` and the content cannot render with its declared
    and the always-available variables (a draft of it may be saved); nothing changed (400);
    ``base_version`` out of date or a concurrent save (409).
    """
    _check_type(template_type)
    note = _note(note)
    if not isinstance(content, str):
        raise PromptChangeError(worded(_lazy("content must be text")), "content")
    if activate and not content.strip():
        raise PromptChangeError(
            worded(
                _lazy(
                    "may not be blank when it is activated: the role would get no instructions (save it as a draft "
                    "instead)"
                )
            ),
            "content",
        )
    template = find_template(role, template_type, project)
    active = _active(template)
    inherited = active or (_active(find_template(role, template_type, None)) if project else None)
    checked = check_content(content, variables if variables is not None else [], role=role, project=project)
    refusal = checked.activation_refusal() if activate else None
    if refusal is not None:
        raise refusal
    lang = _language(language, inherited.language if inherited else "en")
    try:
        with transaction.atomic():
            _lock(role)
            template, _ = PromptTemplate.objects.get_or_create(role=role, template_type=template_type, project=project)
            active = _active(template)
            _check_base(base_version, active)
            if active and (content, checked.variables, lang) == (active.content, active.variables, active.language):
                raise PromptChangeError(
                    worded(
                        _lazy(
                            "nothing to save: content, variables and language are those of the active version "
                            "%(version)s"
                        ),
                        version=active.version,
                    ),
                    "content",
                )
            existing = list(template.versions.values_list("version", flat=True))
            try:
                number = next_version(existing, bump, version)
            except VersionError as exc:
                raise PromptChangeError(str(exc), "version" if version else "bump") from None
            if activate and active:
                PromptVersion.objects.filter(pk=active.pk).update(is_active=False)
            new = PromptVersion.objects.create(
                template=template,
                version=number,
                content=content,
                variables=checked.variables,
                language=lang,
                is_active=activate,
                note=note,
                created_by=actor if getattr(actor, "is_authenticated", False) else None,
            )
            fields = _changed_fields(template_type, active, new) if activate else [f"{template_type}.draft"]
            change = _record(role=role, template=template, old=active, new=new, fields=fields, note=note, actor=actor)
    except IntegrityError:
        raise PromptChangeError(
            worded(_lazy("another change to this template was saved at the same moment; retry")), status=409
        ) from None
    return ChangeResult(new, change, checked.undeclared, checked.warnings, checked)


def rollback(
    *,
    role: AgentRole,
    template_type: str,
    version: str,
    actor: Any,
    project: Project | None = None,
    bump: str = "patch",
    note: str | None = None,
    base_version: str | None = None,
) -> ChangeResult:
    """Roll ``role``'s ``template_type`` (in ``project``'s layer) back to ``version``: a new
    version (the highest bumped by ``bump``) with that version's content, variables and
    language, marked ``rollback_of`` and made active, so history stays linear and complete.

    Raises PromptChangeError: unknown version (404), it has the active content already (400),
    ActivationRefused when ``version`` cannot render now (400), ``base_version`` out of date (409).
    """
    _check_type(template_type)
    try:
        target = get_version(find_template(role, template_type, project), version)
    except NotFoundError as exc:
        raise PromptChangeError(exc.reason, "version", 404) from None
    template = target.template
    active = _active(template)
    if active and (target.content, target.variables, target.language) == (
        active.content,
        active.variables,
        active.language,
    ):
        reason = (
            "it is" if active.pk == target.pk else f"it has the same content as the active version {active.version}"
        )
        raise PromptChangeError(f"nothing to roll back: {reason}", "version")
    _refuse_unrenderable(target, role, project)
    note = _note(note) or f"Rollback to {target.version}"
    try:
        with transaction.atomic():
            _lock(role)
            active = _active(template)
            _check_base(base_version, active)
            existing = list(template.versions.values_list("version", flat=True))
            try:
                number = next_version(existing, bump)
            except VersionError as exc:
                raise PromptChangeError(str(exc), "bump") from None
            if active:
                PromptVersion.objects.filter(pk=active.pk).update(is_active=False)
            new = PromptVersion.objects.create(
                template=template,
                version=number,
                content=target.content,
                variables=target.variables,
                language=target.language,
                is_active=True,
                note=note,
                rollback_of=target.version,
                created_by=actor if getattr(actor, "is_authenticated", False) else None,
            )
            fields = [*_changed_fields(template_type, active, new), f"{template_type}.rollback"]
            change = _record(role=role, template=template, old=active, new=new, fields=fields, note=note, actor=actor)
    except IntegrityError:
        raise PromptChangeError(
            worded(_lazy("another change to this template was saved at the same moment; retry")), status=409
        ) from None
    return ChangeResult(new, change)


def activate(
    *,
    role: AgentRole,
    template_type: str,
    version: str,
    actor: Any,
    project: Project | None = None,
    note: str | None = None,
) -> ChangeResult:
    """Make draft ``version`` the active one. Only a version newer (by SemVer) than the
    active one can be activated; going back is a rollback, which keeps history linear.

    Raises PromptChangeError: unknown version (404), already active or older than the
    active version (409); ActivationRefused when it cannot render (400).
    """
    _check_type(template_type)
    try:
        target = get_version(find_template(role, template_type, project), version)
    except NotFoundError as exc:
        raise PromptChangeError(exc.reason, "version", 404) from None
    template = target.template
    note = _note(note) or f"Activate {target.version}"
    with transaction.atomic():
        _lock(role)
        target.refresh_from_db()
        active = _active(template)
        if target.is_active:
            raise PromptChangeError(
                worded(_lazy("version %(version)s is already active"), version=target.version), "version", 409
            )
        if active and parse(target.version).compare(parse(active.version)) < 0:
            raise PromptChangeError(
                worded(
                    _lazy("version %(version)s is older than the active %(active)s; roll back to it instead"),
                    version=target.version,
                    active=active.version,
                ),
                "version",
                409,
            )
        _refuse_unrenderable(target, role, project)  # nothing is written yet: the refusal rolls back
        if active:
            PromptVersion.objects.filter(pk=active.pk).update(is_active=False)
        PromptVersion.objects.filter(pk=target.pk).update(is_active=True)
        target.is_active = True
        change = _record(
            role=role,
            template=template,
            old=active,
            new=target,
            fields=_changed_fields(template_type, active, target),
            note=note,
            actor=actor,
        )
    return ChangeResult(target, change)
