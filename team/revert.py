"""Revert one saved configuration change from the audit trail (issue 30, PRD §4.8).

A change (``ConfigChange``, outcome ``applied``) records each key it changed as
``{old, new}``. Reverting it writes each key back to its recorded ``old`` value, as one new
change of its own (a new config version, audited, with the note "Revert of change #N"), so
history stays linear: nothing is deleted. Which keys can be written back:

- ``tool_matrix.<role>.<tool>`` and ``invoke_matrix.<caller>.<callee>`` (PRD §4.7) in the
  change's layer (global, or the project's overrides: ``null`` means "inherit");
- ``constraints.<role>.<field>`` (PRD §4.7) in the change's layer;
- ``<template_type>.active_version`` of a prompt change (PRD §4.5): a rollback to the old
  version (``prompts.actions.rollback``: a new version with the old one's content).

Other changes (roles, skills, capabilities, imports, the built-in team) are not offered a
revert here; the preview says so.

``revert_preview(change)`` shows what a revert would do *now*: per key the recorded old and
new values, the current value, and whether the key changed since (then the revert overwrites
a later change as well). ``revert(change, version=...)`` applies it under optimistic
concurrency: ``version`` is the config version the preview was read at (``current_version``);
another change since is a StaleVersion (409) carrying the fresh preview.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.utils.translation import gettext_lazy as _

from capabilities.config import current_version
from capabilities.errors import ConfigInvalid
from capabilities.matrices import INVOKE, TOOL, MatrixKind, apply_cells, layers, self_invocation_conflicts
from capabilities.models import AgentRole, ConfigChange, Project
from capabilities.role_constraints import apply_values, check_values, constraints_document
from capabilities.versions import commit_change, documents_for, lock_config, single_role
from prompts.actions import rollback
from prompts.models import PromptTemplate
from teamclaw.errors import Conflict, NotFound
from teamclaw.labels import worded

REVERTIBLE_TYPES = ("permission", "tool_binding", "constraint", "prompt")
"""The audit trail's ``config_type``s whose changes a revert can write back."""

MATRICES: dict[str, MatrixKind] = {INVOKE.name: INVOKE, TOOL.name: TOOL}
"""Change-key prefix -> the matrix it names."""


@dataclass(frozen=True, slots=True)
class RevertKey:
    """One key of a change as a revert sees it: what was recorded and what is there now."""

    key: str
    recorded_old: Any
    recorded_new: Any
    current: Any
    settled: bool | None = None
    """Whether the key already holds what ``old`` stands for, when equality of values does not
    say it (a prompt rolled back to ``old`` is a new version number with ``old``'s content)."""

    @property
    def effective(self) -> bool:
        """True when reverting still changes this key (it is not back at ``old`` already)."""
        return not self.settled if self.settled is not None else self.current != self.recorded_old

    @property
    def changed_since(self) -> bool:
        """True when a later change moved the key away from what this change wrote (and the
        revert would overwrite that too); never for a key already back at ``old``."""
        return self.effective and self.current != self.recorded_new

    def as_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "old": self.recorded_old,
            "new": self.recorded_new,
            "current": self.current,
            "after": self.recorded_old,
            "changed_since": self.changed_since,
            "changes_now": self.effective,
        }


def find_change(change_id: Any) -> ConfigChange:
    """The applied change ``change_id``; NotFound (404) for an unknown id, Conflict (409) for
    a refused attempt or a fork's override (nothing of them was saved)."""
    change = ConfigChange.every.select_related("project", "actor").filter(pk=change_id).first()
    if change is None:
        raise NotFound(worded(_("there is no configuration change %(change)s"), change=change_id))
    if change.outcome != ConfigChange.APPLIED:
        raise Conflict(
            worded(
                _("change %(change)s was not applied (%(outcome)s): there is nothing to revert"),
                change=change.pk,
                outcome=change.outcome,
            )
        )
    return change


def _kind(key: str) -> str:
    head = key.split(".", 1)[0]
    if head in MATRICES:
        return "matrix"
    if head == "constraints" and key.count(".") == 2:
        return "constraints"
    if key.endswith(".active_version"):
        return "prompt"
    return ""


def unsupported_keys(change: ConfigChange) -> list[str]:
    """The keys of ``change`` a revert cannot write back (see module docstring)."""
    if change.config_type not in REVERTIBLE_TYPES:
        return sorted(change.changes)
    return sorted(key for key in change.changes if not _kind(key))


def _matrix_current(key: str, project: Project | None) -> Any:
    prefix, row, col = key.split(".", 2)
    kind = MATRICES[prefix]
    global_cells, overrides = layers(kind, project)
    if project is None:
        return global_cells.get((row, col), kind.default)
    return overrides.get((row, col))


def _constraint_current(key: str, project: Project | None) -> Any:
    _prefix, role, name = key.split(".", 2)
    found = AgentRole.objects.filter(role=role).first()
    if found is None:
        return None
    doc = constraints_document(found, project)
    return (doc["overrides"] if project is not None else doc["constraints"]).get(name)


def _prompt_key(change: ConfigChange, key: str, values: dict[str, Any]) -> RevertKey:
    """A prompt change's ``<type>.active_version`` key: its active version now, and whether
    the active version already has the old version's content (a rollback makes a new number
    with the old content, so equal numbers cannot tell)."""
    template_type = key.split(".", 1)[0]
    template = PromptTemplate.objects.filter(
        role__role=change.role, template_type=template_type, project=change.project
    ).first()
    active = template.versions.filter(is_active=True).first() if template else None
    old = template.versions.filter(version=values.get("old")).first() if template else None
    settled = bool(active and old) and _same_text(active, old)
    return RevertKey(key, values.get("old"), values.get("new"), active.version if active else None, settled)


def _same_text(one: Any, other: Any) -> bool:
    return bool((one.content, one.variables, one.language) == (other.content, other.variables, other.language))


def _current(change: ConfigChange, key: str) -> Any:
    readers: dict[str, Callable[[], Any]] = {
        "matrix": lambda: _matrix_current(key, change.project),
        "constraints": lambda: _constraint_current(key, change.project),
    }
    return readers[_kind(key)]()


def revert_keys(change: ConfigChange) -> list[RevertKey]:
    """Each revertible key of ``change`` with its recorded and current values, sorted."""
    out = []
    for key, values in sorted(change.changes.items()):
        if not _kind(key) or not isinstance(values, dict):
            continue
        if _kind(key) == "prompt":
            out.append(_prompt_key(change, key, values))
        else:
            out.append(RevertKey(key, values.get("old"), values.get("new"), _current(change, key)))
    return out


def gone_roles(change: ConfigChange) -> list[str]:
    """The roles ``change``'s keys (or its prompt's role) name that no longer exist, sorted."""
    named = {key.split(".")[1] for key in change.changes if _kind(key) in ("matrix", "constraints")}
    named |= {key.split(".")[2] for key in change.changes if key.startswith(f"{INVOKE.name}.")}
    if change.config_type == "prompt" and change.role:
        named.add(change.role)
    return sorted(named - set(AgentRole.objects.filter(role__in=named).values_list("role", flat=True)))


def revert_preview(change: ConfigChange) -> dict[str, Any]:
    """What reverting ``change`` would do now: ``{change_id, config_type, role, project,
    version (the config version to send back), revertible, reason, why, keys: [{key, old, new,
    current, after, changed_since, changes_now}]}``. ``revertible`` is False (with the
    ``reason``, in English, and ``why``: ``{"unsupported": [keys]}``, ``{"gone": [roles]}`` or
    ``{"unchanged": true}``, which a page words in its language) when a key cannot be
    written back or nothing would change; ``why`` is ``{}`` otherwise."""
    keys = revert_keys(change)
    unsupported = unsupported_keys(change)
    reason = ""
    why: dict[str, Any] = {}
    if unsupported:
        reason = f"a revert cannot write back {', '.join(unsupported)} ({change.config_type} changes)"
        why = {"unsupported": list(unsupported)}
    elif gone := gone_roles(change):
        reason, why = f"role {', '.join(gone)} no longer exists", {"gone": list(gone)}
    elif not any(k.effective for k in keys):
        reason = "every key already holds the value this change replaced: nothing to revert"
        why = {"unchanged": True}
    return {
        "change_id": change.pk,
        "config_type": change.config_type,
        "role": change.role,
        "project": change.project.slug if change.project else None,
        "version": current_version(),
        "revertible": not reason,
        "reason": reason,
        "why": why,
        "keys": [k.as_dict() for k in keys],
    }


def revert(change: ConfigChange, *, version: Any, actor: Any, note: str = "") -> ConfigChange:
    """Write ``change``'s recorded old values back as one new audited change; returns it.

    Raises ConfigInvalid (``version`` not an integer), Conflict 409 ``stale_version`` (with
    ``current_version`` and the fresh ``preview``) when the config version is no longer ``version``,
    Conflict (409) when the change cannot be reverted or nothing would change, ConfigInvalid
    when the old values are no longer valid (a role gone, a self-invocation conflict)."""
    if isinstance(version, bool) or not isinstance(version, int):
        raise ConfigInvalid({"version": ["must be the config version the preview showed (a whole number)"]})
    label = f"Revert of change #{change.pk} (version {change.new_version})"
    note = f"{label}: {note}" if note else label
    if change.config_type == "prompt":
        return _revert_prompt(change, version, actor, note)
    with transaction.atomic():
        lock_config()
        _expect(change, version)
        preview = revert_preview(change)
        if not preview["revertible"]:
            raise Conflict(preview["reason"])
        keys = [k for k in revert_keys(change) if k.effective]
        changes = _write_back(change.project, keys)
        reverted = commit_change(
            change.config_type,
            documents=documents_for(changes),
            changes=changes,
            project=change.project,
            role=single_role(changes),
            note=note[:2000],
            actor=actor,
        )
    if reverted is None:  # every key was already back (checked above, so only under a race)
        raise Conflict(worded(_("every key already holds the value this change replaced: nothing to revert")))
    return reverted


def _expect(change: ConfigChange, version: int) -> None:
    current = current_version()
    if version != current:
        raise Conflict(
            f"the configuration moved from version {version} to {current} since this preview; "
            "read the preview again before reverting (nothing was changed)",
            code="stale_version",
            extra={"current_version": current, "preview": revert_preview(change)},
        )


def _write_back(project: Project | None, keys: list[RevertKey]) -> dict[str, dict[str, Any]]:
    """Write each key's recorded old value in ``project``'s layer (inside the revert's
    transaction); returns the changes made. ConfigInvalid when a role named is gone or the
    old values would let a role invoke itself with fewer than two instances."""
    roles = {r.role: r for r in AgentRole.objects.all()}
    named = {item.key.split(".")[1] for item in keys}
    named |= {item.key.split(".")[2] for item in keys if item.key.startswith(f"{INVOKE.name}.")}
    if gone := sorted(named - set(roles)):
        raise ConfigInvalid({"keys": [f"role {', '.join(gone)} no longer exists"]})
    before = self_invocation_conflicts(sorted(named), project)
    changes: dict[str, dict[str, Any]] = {}
    for prefix, kind in MATRICES.items():
        cells = {_cell(k.key): k.recorded_old for k in keys if k.key.startswith(f"{prefix}.")}
        if cells:
            changes.update(apply_cells(kind, project, cells, roles))
    for role in sorted({k.key.split(".")[1] for k in keys if k.key.startswith("constraints.")}):
        fields = {k.key.split(".")[2]: k.recorded_old for k in keys if k.key.startswith(f"constraints.{role}.")}
        changes.update(apply_values(roles[role], project, check_values(fields, allow_null=project is not None)))
    if conflicts := self_invocation_conflicts(sorted(named), project, excluding=before):
        raise ConfigInvalid({"keys": [c.reason() for c in conflicts]})
    return changes


def _cell(key: str) -> tuple[str, str]:
    _prefix, row, col = key.split(".", 2)
    return row, col


def _revert_prompt(change: ConfigChange, version: int, actor: Any, note: str) -> ConfigChange:
    _expect(change, version)
    preview = revert_preview(change)
    if not preview["revertible"]:
        raise Conflict(preview["reason"])
    key = next((k for k in revert_keys(change) if k.effective), None)
    if key is None or key.recorded_old is None:
        raise Conflict(
            worded(_("this prompt change made the first version: there is no earlier version to go back to"))
        )
    role = AgentRole.objects.get(role=change.role)  # revert_preview refused a role gone
    result = rollback(
        role=role,
        template_type=key.key.split(".", 1)[0],
        version=str(key.recorded_old),
        actor=actor,
        project=change.project,
        note=note,
        base_version=key.current or "",  # another revert or edit since: 409, nothing written
    )
    return result.change
