"""The matrix editor's form: staged cells in, grid rows out (PRD §4.7 editor pages).

The page renders every cell with the value it showed (``base``, sent back as JSON) so the
server can tell which cells the operator changed: only those are staged and saved, as one
change. Invoke cells are checkboxes (``allow`` = ``caller:callee``) plus, for a project's
overridden cells, a "reset to global" box (``reset``); tool cells are selects
(``cell:role:tool``) whose project form offers ``inherit``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from django.conf import settings
from django.utils.translation import gettext_lazy as _lazy

from capabilities.errors import ConfigInvalid
from capabilities.matrices import INVOKE, MODES, Cell, MatrixKind
from teamclaw.labels import worded
from teamclaw.strict_json import loads

INHERIT = "inherit"


def base_values(kind: MatrixKind, doc: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """What each cell shows in the form: the effective value (invoke matrix, and the tool
    matrix globally) or, for a project's tool matrix, the override or ``inherit``."""
    if kind is INVOKE or doc.get("project") is None:
        return {row: dict(cols) for row, cols in doc["matrix"].items()}
    overrides = doc.get("overrides", {})
    return {row: {col: overrides.get(row, {}).get(col, INHERIT) for col in cols} for row, cols in doc["matrix"].items()}


def read_base(post: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The ``base`` JSON the page was rendered with; ConfigInvalid when it is missing or mangled."""
    try:
        base = loads(post.get("base") or "", max_bytes=int(settings.DATA_UPLOAD_MAX_MEMORY_SIZE))
    except ValueError:
        base = None
    if not isinstance(base, dict) or not all(isinstance(v, dict) for v in base.values()):
        raise ConfigInvalid({"base": [worded(_lazy("the form is incomplete; reload the page"))]})
    return base


def desired_values(kind: MatrixKind, post: Any, base: Mapping[str, Mapping[str, Any]]) -> dict[Cell, Any]:
    """What the form asks each cell to be, in the form's terms."""
    if kind is INVOKE:
        checked = set(post.getlist("allow"))
        return {(row, col): f"{row}:{col}" in checked for row, cols in base.items() for col in cols}
    out = {}
    for row, cols in base.items():
        for col, value in cols.items():
            out[(row, col)] = post.get(f"cell:{row}:{col}", value)
    return out


def staged_cells(kind: MatrixKind, post: Any, project: Any) -> tuple[dict[Cell, Any], dict[Cell, Any]]:
    """``(staged, desired)``: the cells the operator changed, in save terms (``None`` = reset
    to global), and every cell's requested form value. Raises ConfigInvalid on a bad value."""
    base = read_base(post)
    desired = desired_values(kind, post, base)
    resets = set(post.getlist("reset")) if project is not None else set()
    staged: dict[Cell, Any] = {}
    for cell, value in desired.items():
        row, col = cell
        if kind is INVOKE and f"{row}:{col}" in resets:
            staged[cell] = None
            continue
        if value == base[row][col]:
            continue
        if kind is not INVOKE:
            if value == INHERIT and project is not None:
                value = None
            elif value not in MODES:
                raise ConfigInvalid(
                    {f"matrix.{row}.{col}": [worded(_lazy("must be one of %(choices)s"), choices=", ".join(MODES))]}
                )
        staged[cell] = value
    return staged, desired


def nested(cells: Mapping[Cell, Any]) -> dict[str, dict[str, Any]]:
    """``{(row, col): value}`` -> ``{row: {col: value}}``."""
    out: dict[str, dict[str, Any]] = {}
    for (row, col), value in cells.items():
        out.setdefault(row, {})[col] = value
    return out


def grid(
    kind: MatrixKind,
    doc: Mapping[str, Any],
    roles: Mapping[str, Any],
    desired: Mapping[Cell, Any] | None = None,
    resets: set[str] | None = None,
) -> list[dict[str, Any]]:
    """Rows for the template: ``{role, cells: [{column, value, base, override, global,
    key}]}``; ``desired`` (after a refused save) replaces the shown values so the operator's
    staged changes survive a conflict."""
    base = base_values(kind, doc)
    overrides = doc.get("overrides", {})
    global_values = doc.get("global", doc["matrix"])
    rows = []
    for row, cols in doc["matrix"].items():
        cells = []
        for col in cols:
            shown = base[row][col]
            value = desired.get((row, col), shown) if desired else shown
            cells.append(
                {
                    "column": col,
                    "value": value,
                    "base": shown,
                    "staged": value != shown or f"{row}:{col}" in (resets or set()),
                    "override": col in overrides.get(row, {}),
                    "global": global_values[row][col],
                    "key": f"{row}:{col}",
                    "reset": f"{row}:{col}" in (resets or set()),
                }
            )
        rows.append({"role": roles.get(row), "slug": row, "cells": cells})
    return rows


def base_json(kind: MatrixKind, doc: Mapping[str, Any]) -> str:
    """The ``base`` hidden field."""
    return json.dumps(base_values(kind, doc), separators=(",", ":"))
