"""Who may fork with which overrides (issue 31, docs/architecture.md §3 "Replay and fork").

A fork runs under the saved permission matrices (PRD §4.7) unless its ``overrides`` say
otherwise, and an override may *narrow* them for anyone who may fork the task, but *widening*
them is a configuration decision:

- a tool matrix cell moved towards ``allow`` (deny < confirm < allow) needs the right to
  change the tool matrix (``capabilities.access.can_change(user, "tool_matrix")``: staff, or
  the ``change_toolpermission`` permission);
- an invoke matrix cell moved from ``false`` to ``true`` needs the right to change the invoke
  matrix;
- another executor or model for a role needs the right to change roles;
- asking again for a tool use that the source task's operator rejected needs the staff flag
  (``overrides.reconsider_rejected``): otherwise the fork holds that rejection for every use
  of the tool by that role (``rejected_tools``), whatever its mode.

Cells are compared with the configuration the fork would run under without overrides (the
saved matrices of the task's project), after the overlay the fork inherits from its source
is merged in: a fork of a staff user's widened fork widens too. A widening fork needs a
``reason``; it is audited as a ``ConfigChange`` of type ``fork`` with outcome ``override``
(who, why, each widened cell ``{old, new}``), and a refused one as outcome ``refused``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from capabilities.access import can_change
from capabilities.config import current_version, record_refusal
from capabilities.matrices import INVOKE, TOOL, matrix_document
from capabilities.models import ConfigChange, Project
from monitoring.models import Task, ToolConfirmation
from teamclaw.errors import DomainError, InvalidField
from teamclaw.runtime.config import ToolMode

TOOL_ORDER = {ToolMode.DENY.value: 0, ToolMode.CONFIRM.value: 1, ToolMode.ALLOW.value: 2}
"""How far a tool mode lets a tool through (PRD §4.7): a higher rank widens."""

MAX_REASON = 2000
"""Most characters a fork's ``reason`` may hold."""


@dataclass(frozen=True, slots=True)
class Widening:
    """One override that lets a fork do more than the saved configuration:
    ``field`` as the API names it (``overrides.tool_modes.main/file_write``), ``old`` and
    ``new`` values, the config ``action`` whose right it needs (``capabilities.access``), and
    the task it was inherited from (None: this fork's own override)."""

    field: str
    old: Any
    new: Any
    action: str
    inherited_from: str | None = None

    def describe(self) -> str:
        """``field: old -> new`` (and where it came from) for messages and the audit note."""
        text = f"{self.field}: {self.old} -> {self.new}"
        return f"{text} (inherited from task {self.inherited_from})" if self.inherited_from else text


class ForkRefused(DomainError):
    """A fork whose overrides the user may not make (403), naming each of them in ``errors``."""

    status = 403
    code = "permission_denied"


def widenings(overlay: Mapping[str, Any], own: Mapping[str, Any], source: Task) -> list[Widening]:
    """The widenings in the fork's merged ``overlay`` (``ConfigOverlay.as_dict`` shape, the
    inherited cells included), compared with the saved matrices of ``source.project``.
    ``own`` is the overlay of this fork's own overrides: a cell not in it was inherited from
    ``source``."""
    project: Project | None = source.project
    found: list[Widening] = []
    tools = matrix_document(TOOL, project)["matrix"]
    for key, mode in sorted((overlay.get("tool_modes") or {}).items()):
        role, _, tool = key.partition("/")
        saved = tools.get(role, {}).get(tool, TOOL.default)
        if TOOL_ORDER.get(mode, 0) > TOOL_ORDER.get(saved, 0):
            found.append(_widening("tool_modes", key, saved, mode, "tool_matrix", own, source))
    invoke = matrix_document(INVOKE, project)["matrix"]
    for key, allow in sorted((overlay.get("invoke") or {}).items()):
        caller, _, callee = key.partition("/")
        saved = bool(invoke.get(caller, {}).get(callee, INVOKE.default))
        if allow and not saved:
            found.append(_widening("invoke", key, saved, allow, "invoke_matrix", own, source))
    for role, value in sorted((overlay.get("executors") or {}).items()):
        found.append(_widening("executors", role, "saved", dict(value), "role", own, source))
    return found


def _widening(
    section: str, key: str, old: Any, new: Any, action: str, own: Mapping[str, Any], source: Task
) -> Widening:
    mine = key in (own.get(section) or {})
    return Widening(f"overrides.{section}.{key}", old, new, action, None if mine else source.id)


def rejected_tools(source: Task) -> list[str]:
    """``role/tool`` of every tool use an operator rejected on ``source``, and those its own
    source's operator had rejected (a fork of a fork holds them too), sorted."""
    rejected = set(
        f"{role}/{tool}"
        for role, tool in ToolConfirmation.objects.filter(task_id=source.id, kind="tool", status="rejected")
        .values_list("role", "tool")
        .distinct()
    )
    held = ((source.run_spec or {}).get("fork") or {}).get("rejected_tools") or []
    return sorted(rejected | {str(item) for item in held})


def check_reason(reason: Any) -> str:
    """The fork's ``reason``, stripped; InvalidField (400) unless text of at most MAX_REASON
    characters without NUL."""
    if reason is None:
        return ""
    if not isinstance(reason, str) or len(reason) > MAX_REASON or "\x00" in reason:
        raise InvalidField(f"must be text of at most {MAX_REASON:,} characters, without NUL", "reason")
    return reason.strip()


def refusals(user: Any, found: Iterable[Widening], reconsider: bool, held: list[str]) -> dict[str, list[str]]:
    """``{field: [reason]}`` for each override ``user`` may not make (empty: all allowed)."""
    errors: dict[str, list[str]] = {}
    for widening in found:
        if not can_change(user, widening.action):
            where = f" (inherited from task {widening.inherited_from})" if widening.inherited_from else ""
            errors[widening.field] = [
                f"widens the saved configuration ({widening.old} -> {widening.new}){where}: "
                f"only a user who may change the {widening.action.replace('_', ' ')} may fork with it; "
                "a fork may narrow the matrices"
            ]
    if reconsider and held and not getattr(user, "is_staff", False):
        errors["overrides.reconsider_rejected"] = [
            f"asking again for tool uses the operator rejected ({', '.join(held)}) needs a staff user"
        ]
    return errors


def authorise(user: Any, source: Task, found: list[Widening], reconsider: bool, held: list[str], reason: str) -> None:
    """Raise ForkRefused (403, audited as a refused ``fork`` write) when ``user`` may not make
    an override in ``found`` or reconsider the ``held`` rejections; InvalidField (400) on
    ``reason`` when a permitted widening or reconsidering comes without one."""
    errors = refusals(user, found, reconsider, held)
    if errors:
        refused = ForkRefused(
            f"this fork would widen what the saved configuration allows: {'; '.join(errors)}", errors=errors
        )
        _audit_refusal(user, source, refused, list(errors), reason)
        raise refused
    if (found or (reconsider and held)) and not reason:
        raise InvalidField("say why this fork widens the saved configuration (it is audited)", "reason")


def _audit_refusal(user: Any, source: Task, refused: ForkRefused, fields: list[str], reason: str) -> None:
    record_refusal(
        "fork",
        refusal={
            "status": refused.status,
            "code": refused.code,
            "detail": refused.message[:2000],
            "errors": refused.errors,
            "method": "POST",
            "path": f"/tasks/{source.id}/fork",
        },
        attempted_fields=fields,
        project=source.project,
        note=reason,
        actor=user,
    )


def audit_override(
    user: Any, source: Task, fork_id: str, found: list[Widening], reconsidered: list[str], reason: str
) -> None:
    """Audit a fork that widens (``found``) or asks again for rejected tool uses
    (``reconsidered``): a ``ConfigChange`` of type ``fork``, outcome ``override``, with no
    version of its own (nothing saved changed), ``changes`` ``{field: {old, new}}`` and the
    ``reason`` as its note. Does nothing when there is nothing to audit."""
    changes = {w.field: {"old": w.old, "new": w.new} for w in found}
    if reconsidered:
        changes["overrides.reconsider_rejected"] = {"old": reconsidered, "new": []}
    if not changes:
        return
    version = current_version()
    ConfigChange.every.create(
        config_type="fork",
        role="",
        project=source.project,
        old_version=version,
        new_version=version,
        changed_fields=sorted(changes),
        changes={**changes, "task": {"old": source.id, "new": fork_id}},
        note=reason[:MAX_REASON],
        actor=user if getattr(user, "is_authenticated", False) else None,
        outcome=ConfigChange.OVERRIDE,
    )
