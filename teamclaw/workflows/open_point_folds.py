"""Open points that ask the same thing, folded into one (issue 27; seed 002 §6.6).

An open point is ``{id, question, line, source ("review"|"interview"), category}``:
``category`` is a taxonomy category (``quality_rules.CATEGORIES``) for a review point and an
interview coverage category (``interview_files/coverage.yaml``) for an interview question,
which ``interview_files/open_point_folds.yaml`` maps to the taxonomy category it equals.

Two points fold when their taxonomy categories are equal and they are about the same
subject (``fold_key``): the same line, or both no line (a whole-document point, an interview
question), or the same ``topic`` (the per-line "…如何验收" points and the interview's
acceptance question are all "acceptance", whatever their lines). The folded point keeps the
first member's ``id`` and ``question`` (for several lines: every member's question in turn,
so each line's words stay) and adds ``ids`` (every member's, first first), ``lines`` (every source line,
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
def load_folds(path: Path = FOLDS_FILE) -> dict[str, dict[str, str]]:
    """``{interview coverage category: {"category": taxonomy category, "topic": topic or ""}}``
    from ``path``. Raises FoldFileError naming the file and row for a coverage category not in
    coverage.yaml or a category not in the taxonomy."""
    coverage_file = path.with_name("coverage.yaml")
    coverage = {c["id"] for c in yaml.safe_load(coverage_file.read_text(encoding="utf-8"))["categories"]}
    rows = (yaml.safe_load(path.read_text(encoding="utf-8")) or {}).get("folds") or []
    folds: dict[str, dict[str, str]] = {}
    for number, row in enumerate(rows, start=1):
        if row.get("coverage") not in coverage or row.get("category") not in CATEGORIES:
            raise FoldFileError(f"{path.name} row {number}: unknown category in {row!r}")
        folds[row["coverage"]] = {"category": row["category"], "topic": str(row.get("topic") or "")}
    return folds


def fold_key(point: dict[str, Any], folds: dict[str, dict[str, str]] | None = None) -> tuple[str, str] | None:
    """What ``point`` asks about: ``(taxonomy category, subject)``, the subject being its
    ``topic`` when it has one ("acceptance": how each line is verified), else its line, else
    "document"; an interview question's coverage category and topic come through
    ``load_folds``. None for a point that never folds (no category, no row)."""
    category, topic = str(point.get("category") or ""), str(point.get("topic") or "")
    if point.get("source") == "interview":
        row = (load_folds() if folds is None else folds).get(category)
        if row is None:
            return None
        category, topic = row["category"], row["topic"]
    if not category:
        return None
    line = _line(point)
    return category, topic or (str(line) if line is not None else "document")


def _line(point: dict[str, Any]) -> int | None:
    line = point.get("line")
    return line if isinstance(line, int) else None


def _group_of(points: list[dict[str, Any]], folds: dict[str, dict[str, str]]) -> list[int]:
    """For each point, the index of the first point of the group it joins (its own when none)."""
    first: dict[tuple[str, str], int] = {}
    group = []
    for index, point in enumerate(points):
        key = fold_key(point, folds)
        group.append(index if key is None else first.setdefault(key, index))
    return group


def _folded(members: list[dict[str, Any]]) -> dict[str, Any]:
    lines = sorted({line for m in members if (line := _line(m)) is not None})
    questions = list(dict.fromkeys(str(m["question"]) for m in members))
    first = members[0]
    return {
        **first,
        # one question, or, for a point about several lines, each line's own words in turn
        "question": " ".join(questions) if len(lines) > 1 else questions[0],
        "line": lines[0] if len(lines) == 1 else None,
        "ids": [str(m["id"]) for m in members],
        "lines": lines,
        "sources": list(dict.fromkeys(str(m.get("source") or "review") for m in members)),
        "questions": questions,
        "members": [dict(m) for m in members],
    }


def fold(points: list[dict[str, Any]], folds: dict[str, dict[str, str]] | None = None) -> list[dict[str, Any]]:
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


def review_points(report: Any) -> list[dict[str, Any]]:
    """The consolidation report's open points as ``fold`` takes them (a
    folded one unfolds into its ``members``)."""
    points = []
    for point in (report.get("open_points") or ()) if isinstance(report, dict) else ():
        if not (isinstance(point, dict) and point.get("id") and point.get("question")):
            continue
        for member in point.get("members") or [point]:
            line = member.get("line")
            line = line if isinstance(line, int) else None
            category = member.get("category", "")
            points.append(
                {"id": str(member["id"]), "question": str(member["question"]), "source": "review"}
                | {"line": line, "category": category, "topic": member.get("topic", "")}
            )
    return points


def interview_points(interview: Any) -> list[dict[str, Any]]:
    """The interview's questions left empty (``q-<n>``), each with the coverage category of
    the question it repeats ("" when none is known)."""
    if not isinstance(interview, dict):
        return []
    asked = {
        str(a.get("question")): a.get("category", "") for a in interview.get("answers") or () if isinstance(a, dict)
    }
    return [
        {"id": f"q-{number}", "question": str(question), "line": None, "source": "interview",
         "category": asked.get(str(question), "")}
        for number, question in enumerate(interview.get("unanswered") or (), start=1)
    ]  # fmt: skip


def open_point_count(report: Any, interview: Any) -> int:
    """How many open points a finished review leaves: the consolidation ``report``'s and the
    ``interview``'s questions left empty, folded (``fold``), as the outcome panel and
    ``GET /api/v1/tasks/{id}/open_points`` list them."""
    return len(fold(review_points(report) + interview_points(interview)))
