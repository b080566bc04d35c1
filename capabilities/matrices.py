"""The invoke and tool permission matrices as editable documents (PRD §4.7, US-07).

- Invoke matrix: ``{caller: {callee: bool}}`` over every role, custom ones included
  (PRD §4.7 权限矩阵; a missing cell is ❌).
- Tool matrix: ``{role: {tool: "allow"|"deny"|"confirm"}}`` over the six PRD §4.7 tools
  (工具权限矩阵; ⚠️ = confirm; a missing cell is deny) and the tools of the MCP tool sources
  the scope sees (``mcp:<source>/<tool>``, ``capabilities.tool_catalogue``; deny until set).

Globally a document holds the global cells. For a project it holds the effective cells
(override else global, PRD §4.7 "具体权限可在项目级配置中覆盖") plus ``global`` and
``overrides`` so a view can show both. A save names only the cells it sets; cells left out
keep their value. In a project, ``null`` resets a cell to the global value, and setting a
cell to the global value drops the override instead of pinning a copy.

Each save is one config version with one audit row (``permission`` / ``tool_binding``)
and one ConfigChangeEvent after commit (PRD §4.8); see ``capabilities.versions``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy as _lazy

from capabilities.errors import ConfigInvalid
from capabilities.models import AgentRole, ConfigChange, InvokePermission, Project, ToolPermission
from capabilities.snapshot import effective_constraints
from capabilities.tool_catalogue import matrix_tools
from capabilities.versions import commit_change, document_version, expect_version, lock_config, single_role
from teamclaw.labels import worded
from teamclaw.runtime.config import ToolMode

MODES: tuple[str, ...] = tuple(m.value for m in ToolMode)
Cell = tuple[str, str]


@dataclass(frozen=True)
class SaveResult:
    """What a save did: the audit row (None when nothing changed) and the document now."""

    change: ConfigChange | None
    document: dict[str, Any]


@dataclass(frozen=True)
class MatrixKind:
    """One of the two matrices: its document name, audit type, cell values and storage."""

    name: str
    config_type: str
    label: str
    default: Any
    load: Callable[[Project | None], dict[Cell, Any]]
    write: Callable[[Project | None, dict[str, AgentRole], Cell, Any], None]
    delete: Callable[[Project, Cell], None]
    valid: Callable[[Any], bool]
    expected: str


def role_slugs() -> list[str]:
    """Every role in display order (built-in first, then custom)."""
    return list(AgentRole.objects.order_by("sort_order", "role").values_list("role", flat=True))


def _load_invoke(project: Project | None) -> dict[Cell, bool]:
    rows = InvokePermission.objects.filter(project=project).values_list("caller__role", "target__role", "allowed")
    return {(caller, target): allowed for caller, target, allowed in rows}


def _write_invoke(project: Project | None, roles: dict[str, AgentRole], cell: Cell, value: bool) -> None:
    InvokePermission.objects.update_or_create(
        project=project, caller=roles[cell[0]], target=roles[cell[1]], defaults={"allowed": value}
    )


def _delete_invoke(project: Project, cell: Cell) -> None:
    InvokePermission.objects.filter(project=project, caller__role=cell[0], target__role=cell[1]).delete()


def _load_tools(project: Project | None) -> dict[Cell, str]:
    rows = ToolPermission.objects.filter(project=project).values_list("role__role", "tool", "mode")
    return {(role, tool): mode for role, tool, mode in rows}


def _write_tool(project: Project | None, roles: dict[str, AgentRole], cell: Cell, value: str) -> None:
    ToolPermission.objects.update_or_create(
        project=project, role=roles[cell[0]], tool=cell[1], defaults={"mode": value}
    )


def _delete_tool(project: Project, cell: Cell) -> None:
    ToolPermission.objects.filter(project=project, role__role=cell[0], tool=cell[1]).delete()


INVOKE = MatrixKind(
    name="invoke_matrix",
    config_type="permission",
    label="invoke matrix",
    default=False,
    load=_load_invoke,
    write=_write_invoke,
    delete=_delete_invoke,
    valid=lambda value: isinstance(value, bool),
    expected="must be true or false",
)
TOOL = MatrixKind(
    name="tool_matrix",
    config_type="tool_binding",
    label="tool matrix",
    default=ToolMode.DENY.value,
    load=_load_tools,
    write=_write_tool,
    delete=_delete_tool,
    valid=lambda value: isinstance(value, str) and value in MODES,
    expected=f"must be one of {', '.join(MODES)}",
)


def columns(kind: MatrixKind, roles: list[str], project: Project | None = None) -> list[str]:
    """The column names of ``kind``: roles (invoke matrix) or the tools ``project``'s view
    has (tool matrix: the six PRD §4.7 tools, then MCP tools, ``tool_catalogue``)."""
    return roles if kind is INVOKE else matrix_tools(project)


def _nested(cells: Mapping[Cell, Any], rows: list[str], cols: list[str] | None = None) -> dict[str, dict[str, Any]]:
    if cols is None:
        out: dict[str, dict[str, Any]] = {}
        for (row, col), value in cells.items():
            out.setdefault(row, {})[col] = value
        return {row: dict(sorted(out[row].items())) for row in rows if row in out}
    return {row: {col: cells[(row, col)] for col in cols} for row in rows}


def layers(kind: MatrixKind, project: Project | None) -> tuple[dict[Cell, Any], dict[Cell, Any]]:
    """``(global cells, project override cells)`` as stored (overrides empty for global)."""
    return kind.load(None), kind.load(project) if project is not None else {}


def matrix_document(kind: MatrixKind, project: Project | None = None) -> dict[str, Any]:
    """The document an editor loads: ``{version, project, roles, [tools], matrix}``; for a
    project also ``global`` (the global cells) and ``overrides`` (only the overridden cells)."""
    roles = role_slugs()
    cols = columns(kind, roles, project)
    global_cells, overrides = layers(kind, project)
    base = {(r, c): global_cells.get((r, c), kind.default) for r in roles for c in cols}
    effective = {cell: overrides.get(cell, value) for cell, value in base.items()}
    doc: dict[str, Any] = {
        "version": document_version(kind.name, project),
        "project": project.slug if project else None,
        "roles": roles,
    }
    if kind is TOOL:
        doc["tools"] = cols
    doc["matrix"] = _nested(effective, roles, cols)
    if project is not None:
        doc["global"] = _nested(base, roles, cols)
        doc["overrides"] = _nested(overrides, roles)
    return doc


def parse_cells(
    kind: MatrixKind, matrix: Any, roles: list[str], *, allow_null: bool, project: Project | None = None
) -> dict[Cell, Any]:
    """Validate ``{row: {column: value}}`` into ``{(row, column): value}``.

    Raises ConfigInvalid listing every bad path (``matrix.<row>.<column>``): unknown roles
    or tools (a tool ``project``'s view does not have), wrong value types; ``null`` only
    where ``allow_null`` (project scope).
    """
    errors: dict[str, list[str]] = {}
    if not isinstance(matrix, Mapping):
        raise ConfigInvalid({"matrix": [worded(_lazy("must be an object {row: {column: value}}"))]})
    known_rows = set(roles)
    known_cols = set(columns(kind, roles, project))
    col_word = "role" if kind is INVOKE else "tool"
    cells: dict[Cell, Any] = {}
    for row, values in matrix.items():
        path = f"matrix.{row}"
        if row not in known_rows:
            errors.setdefault(path, []).append(f"unknown role {row!r}")
            continue
        if not isinstance(values, Mapping):
            errors.setdefault(path, []).append("must be an object {column: value}")
            continue
        for col, value in values.items():
            cell_path = f"{path}.{col}"
            if col not in known_cols:
                errors.setdefault(cell_path, []).append(f"unknown {col_word} {col!r}")
            elif value is None and allow_null:
                cells[(row, col)] = None
            elif value is None:
                errors.setdefault(cell_path, []).append(
                    f"{kind.expected}; null (reset to global) only applies to a project"
                )
            elif not kind.valid(value):
                errors.setdefault(cell_path, []).append(kind.expected)
            else:
                cells[(row, col)] = value
    if errors:
        raise ConfigInvalid(errors)
    return cells


def apply_cells(
    kind: MatrixKind, project: Project | None, cells: Mapping[Cell, Any], roles: dict[str, AgentRole]
) -> dict[str, dict[str, Any]]:
    """Write ``cells`` to ``project``'s layer; returns ``{change key: {old, new}}``.

    Globally old/new are cell values; in a project they are override values, ``None``
    meaning "inherits the global value". Call inside the save's transaction.
    """
    global_cells, overrides = layers(kind, project)
    changes: dict[str, dict[str, Any]] = {}
    for cell, new in cells.items():
        key = f"{kind.name}.{cell[0]}.{cell[1]}"
        global_value = global_cells.get(cell, kind.default)
        if project is None:
            if new != global_value:
                kind.write(None, roles, cell, new)
                changes[key] = {"old": global_value, "new": new}
            continue
        override = overrides.get(cell)
        if new is None or new == global_value:
            if override is not None:
                kind.delete(project, cell)
                changes[key] = {"old": override, "new": None}
        elif new != override:
            kind.write(project, roles, cell, new)
            changes[key] = {"old": override, "new": new}
    return changes


@dataclass(frozen=True)
class SelfInvocationConflict:
    """A role allowed to invoke itself (its own invoke matrix cell) with fewer than two
    instances, in ``project`` (None = global): every such call would find its only instance
    busy with the caller and fail (``limit_too_low``, ``teamclaw.runtime.routing``)."""

    role: str
    project: str | None
    limit: int

    def reason(self) -> str:
        """The refusal, in the operator's language."""
        values = {"role": self.role, "project": self.project, "limit": self.limit}
        if self.project:
            text = _(
                "%(role)s may invoke itself (invoke matrix %(role)s -> %(role)s) in project '%(project)s', and "
                "a call to itself needs a second instance: max_concurrent_instances %(limit)s would make every "
                "such call fail; set 2 or more, or deny %(role)s -> %(role)s first"
            )
        else:
            text = _(
                "%(role)s may invoke itself (invoke matrix %(role)s -> %(role)s) globally, and a call to "
                "itself needs a second instance: max_concurrent_instances %(limit)s would make every such "
                "call fail; set 2 or more, or deny %(role)s -> %(role)s first"
            )
        return text % values


def self_invocation_conflicts(
    roles: Iterable[str], project: Project | None, *, excluding: Iterable[SelfInvocationConflict] = ()
) -> list[SelfInvocationConflict]:
    """Conflicts (``SelfInvocationConflict``) of ``roles`` as stored now, in ``project``'s
    effective configuration, or for a global change (``project`` None) globally and in every
    project, since a project inherits what it does not override (PRD §4.7: the invoke matrix
    and ``max_concurrent_instances``).

    A save calls it twice inside its transaction: before writing, then after with
    ``excluding`` the first answer, so that only the conflicts the save introduces refuse it
    (a conflict stored before this check existed does not block unrelated saves, such as
    re-importing an export) and the refusal rolls the save back."""
    known = {(c.role, c.project) for c in excluding}
    wanted = set(roles)
    if not wanted:
        return []
    scopes: list[Project | None] = [project] if project is not None else [None, *Project.objects.order_by("slug")]
    global_cells = _load_invoke(None)
    role_rows = {r.role: r for r in AgentRole.objects.filter(role__in=wanted).prefetch_related("constraints")}
    conflicts = []
    for scope in scopes:
        overrides = _load_invoke(scope) if scope is not None else {}
        for slug in sorted(wanted):
            cell = (slug, slug)
            allowed = overrides.get(cell, global_cells.get(cell, INVOKE.default))
            if not allowed or slug not in role_rows:
                continue
            limit = effective_constraints(role_rows[slug], scope).max_concurrent_instances
            if limit < 2 and (slug, scope.slug if scope else None) not in known:
                conflicts.append(SelfInvocationConflict(slug, scope.slug if scope else None, limit))
    return conflicts


def save_matrix(
    kind: MatrixKind,
    *,
    project: Project | None,
    version: int | None,
    matrix: Any,
    note: str = "",
    actor: Any = None,
) -> SaveResult:
    """Save the cells in ``matrix`` as one change (PRD §4.7, §4.8).

    Raises ConfigInvalid (every bad cell listed, nothing saved; allowing a role to invoke
    itself while it may run only one instance, ``self_invocation_conflicts``) or StaleVersion
    when ``version`` is not the document's current version (nothing saved).
    """
    with transaction.atomic():
        lock_config()
        expect_version(kind.name, project, version)
        roles = {r.role: r for r in AgentRole.objects.all()}
        cells = parse_cells(kind, matrix, list(roles), allow_null=project is not None, project=project)
        self_cells = [
            row for (row, col), value in cells.items() if kind is INVOKE and row == col and value is not False
        ]
        before = self_invocation_conflicts(self_cells, project)
        changes = apply_cells(kind, project, cells, roles)
        if conflicts := self_invocation_conflicts(self_cells, project, excluding=before):
            raise ConfigInvalid({f"matrix.{c.role}.{c.role}": [c.reason()] for c in conflicts})
        change = commit_change(
            kind.config_type,
            documents=[kind.name],
            changes=changes,
            project=project,
            role=single_role(changes),
            note=note,
            actor=actor,
        )
    return SaveResult(change, matrix_document(kind, project))
