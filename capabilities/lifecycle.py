"""The skill lifecycle (seed 003 ``SkillLifecycleState``, ``ActivationPhase``): the action
functions that discover, install, activate, deactivate and uninstall skills.

Every operation runs in one transaction holding the skill's row lock: it checks the
transition against ``TRANSITIONS``, does its work, writes a ``SkillOperation`` (the history:
``installId`` / ``activationId``), bumps the config version and publishes the
``ConfigChangeEvent`` after commit (``capabilities.config.record_change``, PRD §4.8). A
failure rolls everything back, so the skill keeps its previous state; the failed attempt is
then written to the history on its own. The one failure that does change state is the one
seed 003 names: install finding a missing *required* dependency moves the skill to ``ERROR``
with the reason.

Two operations on one skill never interleave (the row lock; SQLite's IMMEDIATE transactions
serialise them): the second sees the first's outcome and is refused if its transition is no
longer legal.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import semver
from django.db import IntegrityError, transaction
from django.utils.translation import gettext, gettext_noop
from django.utils.translation import gettext_lazy as _lazy

from capabilities.config import record_change
from capabilities.matrices import INVOKE, matrix_document
from capabilities.models import AgentRole, CapabilityCard, Skill
from capabilities.skill_index import (
    SkillIndex,
    SkillIndexError,
    alert_rules,
    capability_cards,
    capability_id_for,
    read_skill_index,
)
from capabilities.skill_models import AlertRule, SkillOperation, SkillStatus, Workflow
from capabilities.strict_yaml import YamlProblem
from teamclaw.errors import DomainError
from teamclaw.labels import worded
from teamclaw.runtime.articles import with_article
from teamclaw.runtime.schemas import stored_schema_problems

S = SkillStatus

TRANSITIONS: dict[str, frozenset[str]] = {
    S.DISCOVERED: frozenset({S.INSTALLING, S.UNINSTALLING}),
    S.INSTALLING: frozenset({S.INSTALLED, S.ERROR}),
    S.INSTALLED: frozenset({S.ACTIVATING, S.UNINSTALLING}),
    S.ACTIVATING: frozenset({S.ACTIVATED}),
    S.ACTIVATED: frozenset({S.DEACTIVATING}),
    S.DEACTIVATING: frozenset({S.DEACTIVATED}),
    S.DEACTIVATED: frozenset({S.ACTIVATING, S.UNINSTALLING}),
    S.UNINSTALLING: frozenset({S.UNINSTALLED}),
    S.UNINSTALLED: frozenset({S.DISCOVERED}),
    S.ERROR: frozenset({S.INSTALLING, S.UNINSTALLING, S.DISCOVERED}),
}
"""Legal transitions of seed 003's states. A failed activation does not pass through a state:
it is rolled back to the state it started from."""

OPERATIONS: dict[str, tuple[str, str]] = {
    "install": (S.INSTALLING, S.INSTALLED),
    "activate": (S.ACTIVATING, S.ACTIVATED),
    "deactivate": (S.DEACTIVATING, S.DEACTIVATED),
    "uninstall": (S.UNINSTALLING, S.UNINSTALLED),
}
"""operation -> (transitional state, final state)."""

OPERATION_NOTE = gettext_noop("%(operation)s %(skill)s: %(start)s -> %(end)s")
DISCOVERED_NOTE = gettext_noop("discovered %(skill)s %(version)s")
NOTE_TEMPLATES = (OPERATION_NOTE, DISCOVERED_NOTE)
"""The notes a skill's lifecycle writes on its audit rows, in English as stored; a page words
them in its language (``capabilities.templatetags.labels.note``)."""

INSTALLED_STATES = frozenset({S.INSTALLED, S.ACTIVATING, S.ACTIVATED, S.DEACTIVATING, S.DEACTIVATED})
REUPLOAD_STATES = frozenset({S.DISCOVERED, S.ERROR, S.UNINSTALLED})
PHASES = ("INITIALIZING", "INSTALLING", "CONFIGURING", "ACTIVATING", "COMPLETED", "FAILED")
"""Seed 003 ``ActivationPhase``."""


STATUS_FOR_CODE = {
    "not_found": 404,
    "illegal_transition": 409,
    "invalid": 400,
    "dependency": 409,
    "conflict": 409,
    "dependents": 409,
}
"""The HTTP status of each refusal code."""


class LifecycleError(DomainError):
    """A refused or failed lifecycle operation (seed 003's ``errorCode`` in the API body).

    ``code``: ``not_found`` | ``illegal_transition`` | ``invalid`` | ``dependency`` |
    ``conflict`` | ``dependents``; ``errors`` maps a field or path to reasons; ``operation``
    is the SkillOperation written for a failed attempt (None when nothing was attempted);
    ``details`` carries extra context (dependents, phases)."""

    def __init__(
        self,
        code: str,
        message: str,
        errors: dict[str, list[str]] | None = None,
        *,
        details: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(
            message, errors=errors, code=code, status=STATUS_FOR_CODE.get(code, 400), extra={"errorCode": code}
        )
        self.details = details or {}
        self.operation: SkillOperation | None = None


def allowed_operations(status: str) -> list[str]:
    """The operations legal from ``status`` (for buttons and error messages)."""
    out = [name for name, (first, _) in OPERATIONS.items() if first in TRANSITIONS.get(status, ())]
    if status in REUPLOAD_STATES:
        out.append("upload")
    return out


def check_transition(current: str, target: str) -> None:
    """Raise LifecycleError(illegal_transition) unless ``current -> target`` is legal."""
    if target not in TRANSITIONS.get(current, frozenset()):
        legal = ", ".join(sorted(TRANSITIONS.get(current, ()))) or "nothing"
        raise LifecycleError(
            "illegal_transition",
            f"{with_article(current)} skill cannot become {target} (from {current} it may go to: {legal})",
            {"status": [f"is {current}"]},
        )


def _now() -> str:
    return datetime.now(UTC).isoformat()


@dataclass
class _Run:
    """What an operation accumulates: transitions, phases, warnings."""

    skill: Skill
    start_status: str
    transitions: list[dict[str, str]] = field(default_factory=list)
    phases: list[dict[str, str]] = field(default_factory=list)
    warnings: list[dict[str, Any]] = field(default_factory=list)

    def move(self, target: str) -> None:
        check_transition(self.skill.status, target)
        self.transitions.append({"from": self.skill.status, "to": target, "at": _now()})
        self.skill.status = target

    def phase(self, name: str, message: str = "") -> None:
        self.phases.append({"phase": name, "at": _now(), "message": message})

    def warn(self, path: str, message: str) -> None:
        self.warnings.append({"path": path, "line": 0, "message": message})


def unknown_skill(skill_id: str) -> LifecycleError:
    """The refusal for a skill id that is not uploaded (``not_found``, 404)."""
    return LifecycleError(
        "not_found",
        worded(_lazy("there is no skill %(skill)r"), skill=skill_id),
        {"skillId": [worded(_lazy("unknown skill"))]},
    )


def require_skill(skill_id: str) -> Skill:
    """The uploaded skill ``skill_id`` (not locked). Raises ``unknown_skill``'s LifecycleError."""
    skill = Skill.objects.filter(skill_id=skill_id).first()
    if skill is None:
        raise unknown_skill(skill_id)
    return skill


def _lock(skill_id: str) -> Skill:
    try:
        return Skill.objects.select_for_update().get(skill_id=skill_id)
    except Skill.DoesNotExist:
        raise unknown_skill(skill_id) from None


def _operate(
    skill_id: str,
    operation: str,
    actor: Any,
    body: Callable[[_Run], None],
    *,
    role: str = "",
    config: dict[str, Any] | None = None,
) -> SkillOperation:
    """Run ``body`` in one transaction under the skill's row lock (see module docstring)."""
    op_id = uuid.uuid4().hex
    run: _Run | None = None
    try:
        with transaction.atomic():
            skill = _lock(skill_id)
            run = _Run(skill, skill.status)
            body(run)
            skill.save()
            record = SkillOperation.objects.create(
                id=op_id,
                skill=skill,
                operation=operation,
                outcome="FAILED" if skill.status == S.ERROR else "COMPLETED",
                from_status=run.start_status,
                to_status=skill.status,
                transitions=run.transitions,
                phases=run.phases,
                role=role,
                config=config or {},
                warnings=run.warnings,
                error=skill.error_reason if skill.status == S.ERROR else "",
                actor=actor if getattr(actor, "is_authenticated", False) else None,
            )
            record_change(
                "skill",
                changed_fields=["status"],
                changes={"status": {"old": run.start_status, "new": skill.status}, "skill": skill_id},
                note=OPERATION_NOTE
                % {"operation": operation, "skill": skill_id, "start": run.start_status, "end": skill.status},
                actor=actor,
            )
        return record
    except LifecycleError as exc:
        if run is not None and exc.code not in ("illegal_transition", "not_found"):
            phases = [*run.phases, {"phase": "FAILED", "at": _now(), "message": exc.message}] if run.phases else []
            exc.details.setdefault("phases", phases)
            exc.operation = SkillOperation.objects.create(
                id=op_id,
                skill_id=Skill.objects.get(skill_id=skill_id).pk,
                operation=operation,
                outcome="FAILED",
                from_status=run.start_status,
                to_status=run.start_status,
                phases=phases,
                role=role,
                config=config or {},
                warnings=run.warnings,
                error=exc.message,
                actor=actor if getattr(actor, "is_authenticated", False) else None,
            )
        raise


# ---------------------------------------------------------------------------- discover
def discover_skill(
    raw: bytes | str, *, actor: Any = None, allow_downgrade: bool = False
) -> tuple[Skill, SkillOperation, bool]:
    """See ``_discover``; two first uploads of one skill id racing end in a 409, not a 500."""
    try:
        return _discover(raw, actor=actor, allow_downgrade=allow_downgrade)
    except IntegrityError:
        raise LifecycleError(
            "conflict", "the same skill was uploaded at the same moment; try again", {"skill.id": ["upload race"]}
        ) from None


def _discover(
    raw: bytes | str, *, actor: Any = None, allow_downgrade: bool = False
) -> tuple[Skill, SkillOperation, bool]:
    """Import a skill-index.yaml (``POST /api/v1/skills``) -> ``(skill, operation, created)``.

    The skill is ``DISCOVERED``; a skill already known may be replaced only while it is
    DISCOVERED, ERROR or UNINSTALLED, and only by a newer version (SemVer precedence) or the
    same document again, unless ``allow_downgrade`` (staff only, as every upload) says the
    operator means to go back to an older version or to replace the same version's content;
    such a forced step is audited with both versions and who forced it (``_version_step``).
    Raises SkillIndexError (every problem with path and line) or LifecycleError(conflict)
    when the installed skill must be uninstalled first, the upload is older than the known
    version or is the known version with other content.
    """
    index = read_skill_index(raw)
    text = raw.decode("utf-8-sig") if isinstance(raw, bytes) else raw
    skill_id = index.skill_id
    warnings = [{"path": w.path, "line": w.line, "message": w.message} for w in index.warnings]
    with transaction.atomic():
        skill = Skill.objects.select_for_update().filter(skill_id=skill_id).first()
        created = skill is None
        start = skill.status if skill else S.DISCOVERED
        transitions = []
        if skill is None:
            skill = Skill(skill_id=skill_id, status=S.DISCOVERED)
        elif skill.status not in REUPLOAD_STATES:
            raise LifecycleError(
                "conflict",
                f"skill {skill_id} is {skill.status}; "
                + ("deactivate and uninstall" if skill.status == S.ACTIVATED else "uninstall")
                + " it before uploading a new version",
                {"skill.id": [f"{skill_id} is {skill.status}"]},
            )
        known_version = "" if created else skill.version
        forced = not created and _version_step(skill, index, allow_downgrade=allow_downgrade)
        if not created and skill.status != S.DISCOVERED:
            check_transition(skill.status, S.DISCOVERED)
            transitions.append({"from": skill.status, "to": S.DISCOVERED, "at": _now()})
        doc = index.skill
        skill.name = doc["name"]
        skill.version = doc["version"]
        skill.skill_form = doc.get("skillForm", "SCENE")
        skill.status = S.DISCOVERED
        skill.document = index.document
        skill.source = text
        skill.warnings = warnings
        skill.error_reason = ""
        skill.role = ""
        skill.install_config = {}
        skill.save()
        skill.alert_rules.all().delete()
        AlertRule.objects.bulk_create(
            AlertRule(
                skill=skill,
                name=r["name"],
                capability=r["capability"],
                condition=r["condition"],
                metric=r["metric"],
                op=r["op"],
                threshold=r["threshold"],
                duration_s=r["duration_s"],
                severity=r["severity"],
                actions=r["actions"],
            )
            for r in alert_rules(index)
        )
        operation = SkillOperation.objects.create(
            id=uuid.uuid4().hex,
            skill=skill,
            operation="discover",
            outcome="COMPLETED",
            from_status=start,
            to_status=S.DISCOVERED,
            transitions=transitions,
            warnings=warnings,
            actor=actor if getattr(actor, "is_authenticated", False) else None,
        )
        record_change(
            "skill",
            changed_fields=["document", "status", "version"],
            changes={
                "status": {"old": None if created else start, "new": S.DISCOVERED},
                "version": {"old": known_version or None, "new": skill.version},
                "skill": skill_id,
                **({"forced": forced} if forced else {}),
            },
            note=DISCOVERED_NOTE % {"skill": skill_id, "version": skill.version}
            + (f" ({forced} from {known_version}, forced with allow_downgrade)" if forced else ""),
            actor=actor,
        )
    return skill, operation, created


def _version_step(skill: Skill, index: SkillIndex, *, allow_downgrade: bool) -> str:
    """How a re-upload moves the stored ``skill`` (PRD §4.8: a change is audited; seed 003
    ``version`` is SemVer): ``""`` for a newer version or the same document again,
    ``"downgrade"`` (an older version) or ``"replace"`` (the same version with another
    document) when ``allow_downgrade`` forces it. Raises LifecycleError(conflict, 409)
    naming both versions for either without the force. A stored version that is no SemVer
    (from before versions were checked) is never "newer"."""
    known, uploaded = skill.version, index.skill["version"]
    try:
        order = semver.Version.parse(uploaded).compare(known)
    except ValueError:
        return ""
    if order > 0 or (order == 0 and index.document == skill.document):
        return ""
    if allow_downgrade:
        return "downgrade" if order < 0 else "replace"
    if order < 0:
        reason = f"{uploaded} is older than {known}"
        message = (
            f"skill {skill.skill_id} is at version {known}; the upload is the older {uploaded}. "
            "Versions only move forward: upload a newer version, or repeat with allow_downgrade=true to go back"
        )
    else:
        reason = f"{uploaded} is already stored with other content: bump the version"
        message = (
            f"skill {skill.skill_id} is already at version {known} with other content; bump the version "
            "(e.g. to the next patch), or repeat with allow_downgrade=true to replace it"
        )
    refusal = LifecycleError("conflict", message, {"skill.version": [reason]})
    refusal.extra.update({"current_version": known, "uploaded_version": uploaded})
    raise refusal


def skill_index_of(skill: Skill) -> SkillIndex:
    """The stored, already validated document of ``skill`` as a SkillIndex."""
    return SkillIndex(skill.document, [YamlProblem(w["path"], w["line"], w["message"]) for w in skill.warnings])


# ---------------------------------------------------------------------------- dependencies
def _declared_addresses(skill: Skill) -> dict[str, str]:
    """address -> capability name, for the canonical and declared addresses of ``skill``."""
    out = {}
    for capability in skill.document.get("skill", {}).get("capabilities") or []:
        out[f"cap://{skill.skill_id}/{capability['name']}"] = capability["name"]
        if capability.get("address"):
            out[capability["address"]] = capability["name"]
    return out


def resolve_dependency(dependency: dict[str, Any], skills: list[Skill]) -> dict[str, Any]:
    """Where a dependency ``{skillId, capability, required, config}`` stands now.

    Returns ``{skillId, capability, address, required, config, providedBy, capabilityId,
    status, installed, active}``: ``providedBy`` is the skill declaring that address (the
    named skill, or another one declaring it as its address, e.g. a PROVIDER's
    ``cap://llm/default``), ``status`` its lifecycle state or ``MISSING``; a built-in card
    at that address counts as installed and active while enabled."""
    address = f"cap://{dependency['skillId']}/{dependency['capability']}"
    out = {**dependency, "address": address, "providedBy": None, "capabilityId": None, "status": "MISSING"}
    candidates = [s for s in skills if s.status != S.UNINSTALLED and address in _declared_addresses(s)]
    candidates.sort(key=lambda s: (s.skill_id != dependency["skillId"], s.status != S.ACTIVATED, s.skill_id))
    if candidates:
        provider = candidates[0]

        out.update(
            providedBy=provider.skill_id,
            status=provider.status,
            capabilityId=capability_id_for(provider.skill_id, _declared_addresses(provider)[address]),
        )
    else:
        card = CapabilityCard.objects.filter(address=address, skill__isnull=True).first()
        if card is not None:
            out.update(providedBy="(built-in)", status=S.ACTIVATED if card.enabled else S.DEACTIVATED)
            out["capabilityId"] = card.capability_id
    out["installed"] = out["status"] in INSTALLED_STATES
    out["active"] = out["status"] == S.ACTIVATED
    return out


def dependency_status(skill: Skill, skills: list[Skill] | None = None) -> list[dict[str, Any]]:
    """Every dependency of ``skill`` with where it stands (see ``resolve_dependency``)."""
    everyone = skills if skills is not None else list(Skill.objects.exclude(pk=skill.pk))
    others = [s for s in everyone if s.pk != skill.pk]
    return [resolve_dependency(d, others) for d in skill.document.get("skill", {}).get("dependencies") or []]


# ---------------------------------------------------------------------------- install
def install_skill(skill_id: str, config: dict[str, Any] | None = None, *, actor: Any = None) -> SkillOperation:
    """``POST /skills/{skillId}/install {config}``: DISCOVERED|ERROR -> INSTALLING ->
    INSTALLED, or ERROR with the reason when a required dependency is not installed (seed
    003 "dependencies ... required"); a missing optional one is a warning."""
    if config is not None and not isinstance(config, dict):
        raise LifecycleError(
            "invalid", worded(_lazy("config must be a mapping")), {"config": [worded(_lazy("must be a mapping"))]}
        )

    def body(run: _Run) -> None:
        skill = run.skill
        run.move(S.INSTALLING)
        missing = []
        for index, dep in enumerate(dependency_status(skill)):
            if dep["installed"]:
                continue
            reason = f"{dep['address']} is {'not installed' if dep['status'] != 'MISSING' else 'missing'}"
            if dep["providedBy"]:
                reason += f" (skill {dep['providedBy']} is {dep['status']})"
            if dep["required"]:
                missing.append((index, reason))
            else:
                run.warn(f"skill.dependencies[{index}]", f"optional dependency {reason}; installed without it")
        if missing:
            skill.error_reason = "required dependencies missing: " + "; ".join(reason for _, reason in missing)
            run.move(S.ERROR)
            return
        skill.error_reason = ""
        skill.install_config = config or {}
        skill.warnings = [w for w in skill.warnings if not w["path"].startswith("skill.dependencies")] + run.warnings
        run.move(S.INSTALLED)

    return _operate(skill_id, "install", actor, body, config=config)


# ---------------------------------------------------------------------------- activate
@dataclass(frozen=True, slots=True)
class OwnerRoleFit:
    """Whether ``role`` fits as the owner of a skill's capabilities (``owner_role_fit``):
    ``fits`` and the ``reasons`` why (or why not), in the operator's language."""

    role: str
    display_name: str
    emoji: str
    fits: bool
    reasons: tuple[str, ...]


def owner_role_fit(skill: Skill) -> list[OwnerRoleFit]:
    """Every role, judged as the owner activation would register ``skill``'s capabilities
    for (seed 003 ``activateSceneSkill(sceneId, skillId, role)``), enabled roles first.

    A role fits when it is enabled (a disabled role's capabilities never run, PRD §4.1) and,
    when the skill has EXPOSED capabilities, some other role may invoke it under the global
    effective invoke matrix (PRD §4.7), else nobody could call them. ENTRY capabilities are
    called from outside the team and INTERNAL ones only inside the skill, so they fit any
    enabled role. The skill's last owner is named as such."""
    types = {c.get("type") for c in (skill_index_of(skill).skill.get("capabilities") or [])}
    invoke = matrix_document(INVOKE)["matrix"]
    out = []
    for row in AgentRole.objects.order_by("-enabled", "role"):
        callers = sorted(c for c, cells in invoke.items() if c != row.role and cells.get(row.role))
        reasons: list[str] = []
        fits = row.enabled
        if not row.enabled:
            reasons.append(gettext("disabled: capabilities it owns would not run"))
        if "EXPOSED" in types:
            if callers:
                reasons.append(
                    gettext("its EXPOSED capabilities can be invoked by %(roles)s (invoke matrix)")
                    % {"roles": ", ".join(callers)}
                )
            else:
                fits = False
                reasons.append(
                    gettext("no role may invoke it (invoke matrix): its EXPOSED capabilities could not be called")
                )
        if "ENTRY" in types and row.enabled:
            reasons.append(
                gettext("ENTRY capabilities are called from outside the team, so any enabled role can serve them")
            )
        if not reasons:
            reasons.append(gettext("enabled"))
        if skill.role == row.role:
            reasons.append(gettext("it owned this skill when it was last active"))
        out.append(OwnerRoleFit(row.role, row.display_name, row.emoji, fits, tuple(reasons)))
    return out


def _owner_problem(role: str) -> LifecycleError | None:
    """The refusal for an activation ``role`` that is missing, unknown or disabled, else None."""
    owner = AgentRole.objects.filter(role=role).first() if role else None
    if owner is None:
        if not role:
            return LifecycleError(
                "invalid", worded(_lazy("role is required")), {"role": [worded(_lazy("is required"))]}
            )
        reason = worded(_lazy("there is no role %(role)r"), role=role)
        return LifecycleError("invalid", reason, {"role": [reason]})
    if not owner.enabled:
        disabled = worded(_lazy("role %(role)s is disabled"), role=role)
        return LifecycleError("invalid", disabled, {"role": [disabled]})
    return None


def activate_skill(skill_id: str, role: str, *, actor: Any = None) -> SkillOperation:
    """``POST /skills/{skillId}/activate {role}``: INSTALLED|DEACTIVATED -> ACTIVATING ->
    ACTIVATED through the phases INITIALIZING, INSTALLING (required dependencies must be
    ACTIVATED), CONFIGURING (cards built from the capabilities; ids and addresses must not
    clash with another skill's enabled cards), ACTIVATING (cards registered, owned by
    ``role``, enabled) and COMPLETED. Any failure: phase FAILED, state unchanged.

    A missing, unknown or disabled ``role`` is refused (LifecycleError ``invalid``, 400)
    before anything starts: no phase runs and no history entry is written (nothing was
    attempted)."""
    require_skill(skill_id)
    problem = _owner_problem(role)
    if problem is not None:
        raise problem

    def body(run: _Run) -> None:
        skill = run.skill
        run.move(S.ACTIVATING)
        run.phase("INITIALIZING", f"role {role}")
        changed = _owner_problem(role)  # the role changed since the check above
        if changed is not None:
            raise changed
        owner = AgentRole.objects.get(role=role)
        run.phase("INSTALLING", "checking dependencies")
        problems: dict[str, list[str]] = {}
        for index, dep in enumerate(dependency_status(skill)):
            if dep["active"]:
                continue
            where = f"skill {dep['providedBy']} is {dep['status']}" if dep["providedBy"] else "nothing provides it"
            if dep["required"]:
                problems.setdefault(f"dependencies[{index}]", []).append(f"{dep['address']} is not active ({where})")
            else:
                run.warn(
                    f"skill.dependencies[{index}]", f"optional dependency {dep['address']} is not active ({where})"
                )
        if problems:
            raise LifecycleError("dependency", "required dependencies are not active", problems)
        run.phase("CONFIGURING", "building capability cards")
        cards = capability_cards(skill_index_of(skill))
        _check_cards(skill, cards)
        run.phase("ACTIVATING", f"registering {len(cards)} capabilities for {role}")
        for doc in cards:
            doc["executor_config"] = {**doc["executor_config"], "install_config": skill.install_config}
            card, _ = CapabilityCard.objects.update_or_create(
                capability_id=doc["capability_id"],
                defaults={
                    **{k: v for k, v in doc.items() if k != "capability_id"},
                    "skill": skill,
                    "enabled": True,
                    "is_builtin": False,
                },
            )
            card.owner_roles.set([owner])
        skill.role = role
        run.move(S.ACTIVATED)
        run.phase("COMPLETED", f"{len(cards)} capabilities active")

    return _operate(skill_id, "activate", actor, body, role=role)


def _check_cards(skill: Skill, cards: list[dict[str, Any]]) -> None:
    problems: dict[str, list[str]] = {}
    ids = [c["capability_id"] for c in cards]
    for taken_by in CapabilityCard.objects.filter(capability_id__in=ids).exclude(skill=skill).select_related("skill"):
        owner = f"skill {taken_by.skill.skill_id}" if taken_by.skill else "a built-in card"
        problems.setdefault(f"capabilities.{taken_by.capability_id}", []).append(f"the id is taken by {owner}")
    wanted = {}
    for card in cards:
        wanted[card["address"]] = card["name"]
        wanted[f"cap://{skill.skill_id}/{card['name']}"] = card["name"]
    foreign = set(Skill.objects.exclude(pk=skill.pk).exclude(status=S.UNINSTALLED).values_list("skill_id", flat=True))
    for card in cards:
        namespace = card["address"][len("cap://") :].split("/", 1)[0]
        if namespace in foreign:
            problems.setdefault(f"capabilities.{card['name']}.address", []).append(
                f"{card['address']} is in the namespace of skill {namespace}; a skill may not claim another's addresses"
            )
    others = CapabilityCard.objects.filter(enabled=True).exclude(skill=skill).select_related("skill")
    for other in others:
        taken = {other.address} if other.address else set()
        if other.skill:
            taken.add(f"cap://{other.skill.skill_id}/{other.name}")
        for address in taken & set(wanted):
            owner = f"skill {other.skill.skill_id}" if other.skill else f"card {other.capability_id}"
            problems.setdefault(f"capabilities.{wanted[address]}.address", []).append(
                f"{address} is already served by {owner}"
            )
    for card in cards:
        for key in ("input_schema", "output_schema"):
            for problem in stored_schema_problems(card[key]):
                problems.setdefault(f"capabilities.{card['name']}.{key}", []).append(problem)
    if problems:
        raise LifecycleError("conflict", "the skill's capabilities clash with the registry", problems)


# ---------------------------------------------------------------------------- dependents
RunningContexts = Callable[[set[str]], list[dict[str, Any]]]
"""``(capability ids) -> [{contextId, taskId, role, status, step}]``: the running execution
contexts busy with one of those capabilities (``monitoring.skill_contexts.running_contexts``;
the runs are recorded above this app, so the caller hands the lookup in)."""


def no_running_contexts(capability_ids: set[str]) -> list[dict[str, Any]]:
    """A ``RunningContexts`` for callers without run records: none."""
    return []


def skill_dependents(
    skill: Skill, running_contexts: RunningContexts = no_running_contexts
) -> dict[str, list[dict[str, Any]]]:
    """What depends on ``skill`` (shown before deactivating or uninstalling it):
    ``capabilities`` (its cards), ``skills`` (other skills whose dependency it provides),
    ``workflows`` (that call its capabilities), ``roles`` (that own its cards) and
    ``contexts`` (running execution contexts busy with one of its capabilities)."""
    cards = list(skill.cards.prefetch_related("owner_roles").order_by("capability_id"))
    card_ids = {c.capability_id for c in cards}
    addresses = set(_declared_addresses(skill))
    dependents = []
    for other in Skill.objects.exclude(pk=skill.pk).exclude(status=S.UNINSTALLED):
        for dep in other.document.get("skill", {}).get("dependencies") or []:
            if f"cap://{dep['skillId']}/{dep['capability']}" in addresses:
                dependents.append(
                    {"skillId": other.skill_id, "status": other.status, "required": dep["required"], "address": dep}
                )
                break
    workflows = []
    for workflow in Workflow.objects.all():
        used = sorted(
            {
                step.get("capability", "")
                for step in workflow.definition.get("steps", [])
                if step.get("capability_id") in card_ids or step.get("capability", "").split("?")[0] in addresses
            }
        )
        if used:
            workflows.append({"workflowId": workflow.workflow_id, "name": workflow.name, "capabilities": used})
    roles = sorted({r.role for c in cards for r in c.owner_roles.all()})
    return {
        "capabilities": [
            {"capabilityId": c.capability_id, "address": c.address, "type": c.capability_type, "enabled": c.enabled}
            for c in cards
        ],
        "skills": dependents,
        "workflows": workflows,
        "roles": [{"role": r} for r in roles],
        "contexts": running_contexts(card_ids),
    }


def _blocking(skill: Skill, *, active_only: bool, running_contexts: RunningContexts) -> dict[str, Any]:
    dependents = skill_dependents(skill, running_contexts)
    states = {S.ACTIVATED} if active_only else set(INSTALLED_STATES) | {S.ERROR}
    skills = [d for d in dependents["skills"] if d["required"] and d["status"] in states]
    workflows = [] if active_only else dependents["workflows"]
    return {"skills": skills, "workflows": workflows, "dependents": dependents}


# ---------------------------------------------------------------------------- deactivate / uninstall
def deactivate_skill(
    skill_id: str,
    *,
    actor: Any = None,
    force: bool = False,
    running_contexts: RunningContexts = no_running_contexts,
) -> SkillOperation:
    """``POST /skills/{skillId}/deactivate``: ACTIVATED -> DEACTIVATING -> DEACTIVATED. Its
    cards are disabled (out of routing: invokes get ``capability_disabled``) but kept with
    their history; tasks already running keep their pinned config (PRD §4.8). Refused with
    ``dependents`` while an ACTIVATED skill requires it, unless ``force``."""

    def body(run: _Run) -> None:
        skill = run.skill
        run.move(S.DEACTIVATING)
        blocking = _blocking(skill, active_only=True, running_contexts=running_contexts)
        if blocking["skills"] and not force:
            names = ", ".join(d["skillId"] for d in blocking["skills"])
            raise LifecycleError(
                "dependents",
                f"active skills require {skill_id}: {names}; deactivate them first or force",
                {"dependents": [f"{d['skillId']} requires it" for d in blocking["skills"]]},
                details={"dependents": blocking["dependents"]},
            )
        skill.cards.update(enabled=False)
        run.move(S.DEACTIVATED)

    return _operate(skill_id, "deactivate", actor, body)


def uninstall_skill(
    skill_id: str,
    *,
    actor: Any = None,
    force: bool = False,
    running_contexts: RunningContexts = no_running_contexts,
) -> SkillOperation:
    """``DELETE /skills/{skillId}``: DISCOVERED|INSTALLED|DEACTIVATED|ERROR -> UNINSTALLING ->
    UNINSTALLED. Its cards leave the registry (messages that mention them stay); the row,
    document and history stay. An ACTIVATED skill must be deactivated first. Refused with
    ``dependents`` while installed skills require it or workflows call it, unless ``force``."""

    def body(run: _Run) -> None:
        skill = run.skill
        if skill.status == S.ACTIVATED:
            raise LifecycleError(
                "illegal_transition",
                f"skill {skill_id} is ACTIVATED; deactivate it before uninstalling",
                {"status": ["is ACTIVATED"]},
            )
        run.move(S.UNINSTALLING)
        blocking = _blocking(skill, active_only=False, running_contexts=running_contexts)
        if (blocking["skills"] or blocking["workflows"]) and not force:
            reasons = [f"skill {d['skillId']} ({d['status']}) requires it" for d in blocking["skills"]]
            reasons += [
                f"workflow {w['workflowId']} calls {', '.join(w['capabilities'])}" for w in blocking["workflows"]
            ]
            raise LifecycleError(
                "dependents",
                f"{skill_id} is still needed: " + "; ".join(reasons),
                {"dependents": reasons},
                details={"dependents": blocking["dependents"]},
            )
        skill.cards.all().delete()
        skill.role = ""
        run.move(S.UNINSTALLED)

    return _operate(skill_id, "uninstall", actor, body)


__all__ = [
    "OPERATIONS",
    "PHASES",
    "TRANSITIONS",
    "LifecycleError",
    "SkillIndexError",
    "activate_skill",
    "allowed_operations",
    "check_transition",
    "deactivate_skill",
    "dependency_status",
    "discover_skill",
    "install_skill",
    "skill_dependents",
    "uninstall_skill",
]
