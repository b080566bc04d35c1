"""What-if: replay recorded traffic against a staged matrix change before it is saved.

For the invoke matrix (PRD §4.7 权限矩阵) every ``invoke_request`` of the last N days whose
caller -> callee cell the change touches is judged twice, under the current effective
matrix and under the staged one: calls the current matrix lets through and the staged one
refuses *would now be denied*; the reverse are *newly allowed*. Calls refused for another
reason (disabled capability, bad params, ...) are counted apart: the matrix is not what
stops them. Operator-started tasks (caller ``user``) are not governed by the matrix.

For the tool matrix (工具权限矩阵) two things are counted. First the **recorded tool uses**
themselves (``tool_uses``): every ``{type: "tool"}`` reference in a context's
``input_context.messages`` (``ExecutionCall.use_tool`` writes one per use, with its outcome)
whose ``(role, tool)`` cell changes: it would be *denied* (``tool_denied``), *sent for
confirmation* (⚠️) or *newly allowed* (a use the matrix refused). This is what a tool cell
governs directly: main's three ``file_write`` uses are three affected uses. Second the
recorded invokes whose capability declares such a tool (``required_tools``), judged the same
way (a declared tool is not always used, so these are counted apart).

A global change does not reach projects that override the cell; a project's change only
reaches that project's traffic. Results are grouped by caller -> callee with counts, the
recorded delivery statuses and the capabilities involved.

**Who sees which traffic.** The report is governance analytics over other people's runs, so
it follows who may see which task (``monitoring.access``): a user who sees every task (staff,
superusers, holders of ``monitoring.view_task``) gets aggregates over all recorded traffic
(``"traffic": "all"``); anyone else gets aggregates over the tasks they may see, the ones they
started (``"traffic": "your tasks"``), never counts that include other users' invokes. The
API and the matrix pages both pass the requesting user as ``viewer``.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from django.db.models import Count, Q

from capabilities.matrices import INVOKE, TOOL, Cell, MatrixKind, layers
from capabilities.models import CapabilityCard, InvokePermission, Project, ToolPermission
from monitoring.access import sees_every_task, visible_tasks
from monitoring.models import ExecutionContext, Message

DEFAULT_DAYS = 7
MAX_DAYS = 90
DAY_MS = 86_400_000

EFFECT_LABELS = {
    "denied": "would now be denied",
    "allowed": "newly allowed",
    "confirm": "would now wait for confirmation",
}


def _other_overrides(kind: MatrixKind, cells: list[Cell]) -> dict[Cell, set[str]]:
    """Projects overriding each cell (a global change does not reach them)."""
    rows: set[tuple[str, str, str]]
    if kind is INVOKE:
        rows = set(
            InvokePermission.objects.filter(project__isnull=False).values_list(
                "caller__role", "target__role", "project__slug"
            )
        )
    else:
        rows = set(
            ToolPermission.objects.filter(project__isnull=False).values_list("role__role", "tool", "project__slug")
        )
    wanted = set(cells)
    out: dict[Cell, set[str]] = defaultdict(set)
    for row, col, slug in rows:
        if (row, col) in wanted:
            out[(row, col)].add(slug)
    return out


def _transitions(kind: MatrixKind, project: Project | None, staged: Mapping[Cell, Any]) -> dict[Cell, tuple[Any, Any]]:
    """``cell -> (current effective value, staged effective value)`` for cells that change."""
    global_cells, overrides = layers(kind, project)
    out = {}
    for cell, value in staged.items():
        base = global_cells.get(cell, kind.default)
        current = overrides.get(cell, base)
        proposed = base if value is None else value
        if current != proposed:
            out[cell] = (current, proposed)
    return out


def _window(days: int) -> int:
    return int(time.time() * 1000) - days * DAY_MS


TRAFFIC_ALL = "all"
TRAFFIC_OWN = "your tasks"


def traffic_scope(viewer: Any) -> str:
    """Which recorded traffic ``viewer``'s what-if counts (module docstring): ``"all"`` or
    ``"your tasks"``."""
    return TRAFFIC_ALL if sees_every_task(viewer) else TRAFFIC_OWN


def _messages(project: Project | None, since_ms: int, q: Q, viewer: Any) -> Any:
    rows = Message.objects.filter(q, type="invoke_request", timestamp_ms__gte=since_ms)
    if traffic_scope(viewer) != TRAFFIC_ALL:
        rows = rows.filter(task_id__in=visible_tasks(viewer).values("id"))
    if project is not None:
        rows = rows.filter(project_id=project.slug)
    return rows.values("from_role", "to_role", "capability_id", "project_id", "status", "reason").annotate(
        n=Count("id")
    )


def _group(groups: dict[tuple[str, str, str], dict[str, Any]], key: tuple[str, str, str], row: Mapping[str, Any]):
    group = groups.setdefault(
        key,
        {
            "caller": key[0],
            "callee": key[1],
            "effect": key[2],
            "label": EFFECT_LABELS[key[2]],
            "count": 0,
            "statuses": {},
            "capabilities": [],
            "tools": [],
            "projects": [],
        },
    )
    group["count"] += row["n"]
    group["statuses"][row["status"]] = group["statuses"].get(row["status"], 0) + row["n"]
    if row["capability_id"] and row["capability_id"] not in group["capabilities"]:
        group["capabilities"].append(row["capability_id"])
    scope = row["project_id"] or "(global)"
    if scope not in group["projects"]:
        group["projects"].append(scope)
    return group


def _report(
    kind: MatrixKind,
    project: Project | None,
    days: int,
    transitions: dict[Cell, tuple[Any, Any]],
    groups: dict[tuple[str, str, str], dict[str, Any]],
    considered: int,
    elsewhere: int,
    pinned: int,
    viewer: Any,
) -> dict[str, Any]:
    ordered = sorted(groups.values(), key=lambda g: (-g["count"], g["caller"], g["callee"], g["effect"]))
    summary = {effect: sum(g["count"] for g in ordered if g["effect"] == effect) for effect in EFFECT_LABELS}
    return {
        "matrix": kind.name,
        "project": project.slug if project else None,
        "days": days,
        "traffic": traffic_scope(viewer),
        "changed_cells": [
            {"row": row, "column": col, "current": current, "proposed": proposed}
            for (row, col), (current, proposed) in sorted(transitions.items())
        ],
        "considered": considered,
        "summary": summary,
        "groups": ordered,
        "refused_for_other_reasons": elsewhere,
        "unaffected_by_project_overrides": pinned,
    }


def invoke_what_if(
    project: Project | None, staged: Mapping[Cell, Any], days: int = DEFAULT_DAYS, *, viewer: Any
) -> dict[str, Any]:
    """What the staged invoke cells (``(caller, callee) -> bool | None``) would have done to
    the ``invoke_request`` traffic of the last ``days`` days (1..90) that ``viewer`` may see
    (module docstring, "Who sees which traffic").

    Returns ``{matrix, project, days, traffic ("all" | "your tasks"), changed_cells,
    considered, summary {denied, allowed, confirm}, groups [{caller, callee, effect, label,
    count, statuses, capabilities, projects}], refused_for_other_reasons, unaffected_by_project_overrides}``.
    """
    transitions = _transitions(INVOKE, project, staged)
    pinned_projects = _other_overrides(INVOKE, list(transitions)) if project is None else {}
    groups: dict[tuple[str, str, str], dict[str, Any]] = {}
    considered = elsewhere = pinned = 0
    if transitions:
        q = Q()
        for caller, callee in transitions:
            q |= Q(from_role=caller, to_role=callee)
        for row in _messages(project, _window(days), q, viewer):
            cell = (row["from_role"], row["to_role"])
            if cell not in transitions:
                continue
            if row["project_id"] in pinned_projects.get(cell, ()):
                pinned += row["n"]
                continue
            if row["status"] == "denied" and row["reason"] != "permission_denied":
                elsewhere += row["n"]
                continue
            considered += row["n"]
            _current, proposed = transitions[cell]
            _group(groups, (cell[0], cell[1], "allowed" if proposed else "denied"), row)
    return _report(INVOKE, project, days, transitions, groups, considered, elsewhere, pinned, viewer)


def _tool_effect(current: str, proposed: str) -> str:
    if proposed == "deny":
        return "denied"
    if proposed == "confirm":
        return "confirm"
    return "allowed"


def _tool_uses(
    project: Project | None, since_ms: int, roles: set[str], viewer: Any
) -> dict[tuple[str, str, str, str], int]:
    """Recorded tool uses since ``since_ms`` (epoch ms) by ``roles``, in the contexts ``viewer``
    may see: ``(role, tool, outcome, project slug or "") -> count``. A reference without its
    own ``timestamp`` (recorded before uses carried one) counts when its context was updated
    within the window."""
    since = datetime.fromtimestamp(since_ms / 1000, tz=UTC)
    contexts = ExecutionContext.objects.filter(role__in=roles, updated_at__gte=since)
    if traffic_scope(viewer) != TRAFFIC_ALL:
        contexts = contexts.filter(task_id__in=visible_tasks(viewer).values("id"))
    if project is not None:
        contexts = contexts.filter(project_id=project.slug)
    counts: dict[tuple[str, str, str, str], int] = defaultdict(int)
    for role, project_id, input_context in contexts.values_list("role", "project_id", "input_context").iterator():
        for reference in (input_context or {}).get("messages") or ():
            if not isinstance(reference, dict) or reference.get("type") != "tool":
                continue
            stamp = reference.get("timestamp")
            if isinstance(stamp, int) and stamp < since_ms:
                continue
            counts[
                (role, str(reference.get("tool", "")), str(reference.get("outcome", "used")), str(project_id or ""))
            ] += 1
    return counts


def _tool_use_report(
    project: Project | None,
    since_ms: int,
    transitions: dict[Cell, tuple[Any, Any]],
    pinned_projects: Mapping[Cell, set[str]],
    viewer: Any,
) -> dict[str, Any]:
    """The ``tool_uses`` part of ``tool_what_if``: ``{considered, summary {denied, allowed,
    confirm}, groups [{role, tool, effect, label, count, outcomes {used|denied|rejected|failed:
    n}, projects}], unaffected_by_project_overrides}``."""
    groups: dict[tuple[str, str, str], dict[str, Any]] = {}
    considered = pinned = 0
    roles = {role for role, _tool in transitions}
    for (role, tool, outcome, project_id), n in sorted(_tool_uses(project, since_ms, roles, viewer).items()):
        cell = (role, tool)
        if cell not in transitions:
            continue
        if project_id in pinned_projects.get(cell, ()):
            pinned += n
            continue
        current, proposed = transitions[cell]
        effect = _tool_effect(current, proposed)
        considered += n
        group = groups.setdefault(
            (role, tool, effect),
            {
                "role": role,
                "tool": tool,
                "effect": effect,
                "label": EFFECT_LABELS[effect],
                "count": 0,
                "outcomes": {},
                "projects": [],
            },
        )
        group["count"] += n
        group["outcomes"][outcome] = group["outcomes"].get(outcome, 0) + n
        scope = project_id or "(global)"
        if scope not in group["projects"]:
            group["projects"].append(scope)
    ordered = sorted(groups.values(), key=lambda g: (-g["count"], g["role"], g["tool"], g["effect"]))
    return {
        "considered": considered,
        "summary": {effect: sum(g["count"] for g in ordered if g["effect"] == effect) for effect in EFFECT_LABELS},
        "groups": ordered,
        "unaffected_by_project_overrides": pinned,
    }


def tool_what_if(
    project: Project | None, staged: Mapping[Cell, Any], days: int = DEFAULT_DAYS, *, viewer: Any
) -> dict[str, Any]:
    """What the staged tool cells (``(role, tool) -> mode | None``) would have done to the
    invokes of the last ``days`` days (that ``viewer`` may see) served by those roles, through the tools each called
    capability declares (``required_tools``). Same shape as ``invoke_what_if``; each group
    also lists the ``tools`` involved. ``tool_uses`` adds the recorded tool uses of those
    cells themselves (``_tool_use_report``: ``{considered, summary, groups [{role, tool,
    effect, label, count, outcomes, projects}], unaffected_by_project_overrides}``).
    """
    transitions = _transitions(TOOL, project, staged)
    pinned_projects = _other_overrides(TOOL, list(transitions)) if project is None else {}
    groups: dict[tuple[str, str, str], dict[str, Any]] = {}
    considered = elsewhere = pinned = 0
    roles = {role for role, _tool in transitions}
    if transitions:
        tools_of: dict[str, tuple[str, ...]] = {}
        for capability_id, address, tools in CapabilityCard.objects.values_list(
            "capability_id", "address", "required_tools"
        ):
            tools_of[capability_id] = tuple(tools or ())
            if address:
                tools_of[address] = tuple(tools or ())
        for row in _messages(project, _window(days), Q(to_role__in=roles), viewer):
            reference = (row["capability_id"] or "").split("?", 1)[0]
            touched = [tool for tool in tools_of.get(reference, ()) if (row["to_role"], tool) in transitions]
            if not touched:
                continue
            reached = [t for t in touched if row["project_id"] not in pinned_projects.get((row["to_role"], t), ())]
            if not reached:
                pinned += row["n"]
                continue
            if row["status"] == "denied":  # refused before it ran: its tools never came into play
                elsewhere += row["n"]
                continue
            considered += row["n"]
            effects = {_tool_effect(*transitions[(row["to_role"], t)]) for t in reached}
            effect = next(e for e in ("denied", "confirm", "allowed") if e in effects)
            group = _group(groups, (row["from_role"] or "user", row["to_role"], effect), row)
            for tool in reached:
                if tool not in group["tools"]:
                    group["tools"].append(tool)
    report = _report(TOOL, project, days, transitions, groups, considered, elsewhere, pinned, viewer)
    report["tool_uses"] = _tool_use_report(project, _window(days), transitions, pinned_projects, viewer)
    return report


def what_if(
    kind: MatrixKind, project: Project | None, staged: Mapping[Cell, Any], days: int, *, viewer: Any
) -> dict[str, Any]:
    """Dispatch to ``invoke_what_if`` or ``tool_what_if``, over the traffic ``viewer`` may see."""
    return (invoke_what_if if kind is INVOKE else tool_what_if)(project, staged, days, viewer=viewer)
