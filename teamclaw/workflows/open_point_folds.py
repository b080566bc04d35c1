"""Open points that ask the same thing, folded into one (issue 27; seed 002 §6.6).

An open point is ``{id, question, line, source ("review"|"interview"), category}``:
``category`` is a taxonomy category (``quality_rules.CATEGORIES``) for a review point and an
interview coverage category (``interview_files/coverage.yaml``) for an interview question,
which ``interview_files/open_point_folds.yaml`` maps to the taxonomy category it equals.

Two points fold when their taxonomy categories are equal and either they are about the same
line, or one of them is about no line (a whole-document point, an interview question): that
one takes in every point of its category. The folded point keeps the first member's ``id``
and ``question`` and adds ``ids`` (every member's, first first), ``lines`` (every source line,
ascending), ``sources`` ("review", "interview": its origins), ``questions`` (each distinct
question) and ``members`` (the points as they were). ``line`` is the one source line, or
None when there are none or several. A point without a category never folds.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from teamclaw.workflows.quality_rules import CATEGORIES
from teamclaw.workflows.review_text import say

FOLDS_FILE = Path(__file__).with_name("interview_files") / "open_point_folds.yaml"


class FoldFileError(ValueError):
    """The folds file names an unknown category; the message names the file and the row."""


@lru_cache(maxsize=4)
def load_folds(path: Path = FOLDS_FILE) -> dict[str, str]:
    """``{interview coverage category: taxonomy category}`` from ``path``. Raises
    FoldFileError naming the file and row for a coverage category not in coverage.yaml or a
    category not in the taxonomy."""
    coverage_file = path.with_name("coverage.yaml")
    coverage = {c["id"] for c in yaml.safe_load(coverage_file.read_text(encoding="utf-8"))["categories"]}
    rows = (yaml.safe_load(path.read_text(encoding="utf-8")) or {}).get("folds") or []
    folds: dict[str, str] = {}
    for number, row in enumerate(rows, start=1):
        if row.get("coverage") not in coverage or row.get("category") not in CATEGORIES:
            raise FoldFileError(f"{path.name} row {number}: unknown category in {row!r}")
        folds[row["coverage"]] = row["category"]
    return folds


def taxonomy_category(point: dict[str, Any], folds: dict[str, str] | None = None) -> str:
    """The taxonomy category ``point`` asks about ("" for none): an interview question's
    coverage category through ``load_folds``, a review point's own."""
    category = str(point.get("category") or "")
    if point.get("source") == "interview":
        return (load_folds() if folds is None else folds).get(category, "")
    return category


def _line(point: dict[str, Any]) -> int | None:
    line = point.get("line")
    return line if isinstance(line, int) else None


def _group_of(points: list[dict[str, Any]], folds: dict[str, str]) -> list[int]:
    """For each point, the index of the first point of the group it joins (its own when none)."""
    categories = [taxonomy_category(p, folds) for p in points]
    hubs = {c for c, p in zip(categories, points, strict=True) if c and _line(p) is None}
    first: dict[tuple[str, int], int] = {}
    group = []
    for index, (category, point) in enumerate(zip(categories, points, strict=True)):
        if not category:
            group.append(index)
            continue
        key = (category, 0 if category in hubs else (_line(point) or 0))
        group.append(first.setdefault(key, index))
    return group


def _folded(members: list[dict[str, Any]]) -> dict[str, Any]:
    lines = sorted({line for m in members if (line := _line(m)) is not None})
    first = members[0]
    return {
        **first,
        "line": lines[0] if len(lines) == 1 else None,
        "ids": [str(m["id"]) for m in members],
        "lines": lines,
        "sources": list(dict.fromkeys(str(m.get("source") or "review") for m in members)),
        "questions": list(dict.fromkeys(str(m["question"]) for m in members)),
        "members": [dict(m) for m in members],
    }


def fold(points: list[dict[str, Any]], folds: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """``points`` with those that ask the same thing folded into one (module docstring), in
    the order of each group's first member. A point already folded (``members``) is unfolded
    first, so folding twice gives the same list."""
    folds = load_folds() if folds is None else folds
    flat = [m for p in points for m in (p.get("members") or [p])]
    groups: dict[int, list[dict[str, Any]]] = {}
    for point, index in zip(flat, _group_of(flat, folds), strict=True):
        groups.setdefault(index, []).append(point)
    return [_folded(groups[index]) for index in sorted(groups)]


def where(lines: list[int], language: str) -> str:
    """Where a point is, after its question: " (line 3)" / "（第 3 行）", " (lines 3, 4)" /
    "（第 3、4 行）", "" for none."""
    if not lines:
        return ""
    if len(lines) == 1:
        return say(language, f" (line {lines[0]})", f"（第 {lines[0]} 行）")
    return say(language, f" (lines {', '.join(map(str, lines))})", f"（第 {'、'.join(map(str, lines))} 行）")
