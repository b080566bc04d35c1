"""Two runs' artifacts side by side (a fork and its source, or any two tasks): which are the
same, which changed (with a unified diff, ``difflib``), which only one of them has."""

from __future__ import annotations

import difflib
from typing import Any

from monitoring.models import Task

MAX_DIFF_LINES = 2000
"""Diff lines shown per artifact; a longer diff is cut (``truncated``)."""
MAX_DIFF_INPUT_LINES = 3000
"""Lines per side beyond which no diff is computed: difflib is quadratic in the worst case
(two 3,000-line texts take about 2 s of CPU; 12,000 lines take 40 s)."""


def too_large_to_diff(before: str, after: str) -> bool:
    """Whether a side has more than ``MAX_DIFF_INPUT_LINES`` lines (not compared here)."""
    return max(before.count("\n"), after.count("\n")) > MAX_DIFF_INPUT_LINES


def text_diff(before: str, after: str, before_name: str, after_name: str) -> tuple[list[str], bool]:
    """``(unified diff lines, truncated)`` from ``before`` to ``after`` (``difflib``), at most
    ``MAX_DIFF_LINES`` lines; no lines and truncated when a side has more than
    ``MAX_DIFF_INPUT_LINES`` lines (too large to compare here: download both)."""
    if too_large_to_diff(before, after):
        return [], True
    diff = list(
        difflib.unified_diff(
            before.splitlines(), after.splitlines(), fromfile=before_name, tofile=after_name, lineterm=""
        )
    )
    return diff[:MAX_DIFF_LINES], len(diff) > MAX_DIFF_LINES


def compare_artifacts(left: Task, right: Task) -> list[dict[str, Any]]:
    """``[{name, status, diff, truncated}]`` by artifact name: ``status`` is ``same``,
    ``changed`` (``diff``: unified diff lines, left -> right), ``only_left`` or ``only_right``."""
    ours = {a.name: a.content for a in left.artifacts.all()}
    theirs = {a.name: a.content for a in right.artifacts.all()}
    rows = []
    for name in sorted(ours.keys() | theirs.keys()):
        if name not in theirs:
            rows.append({"name": name, "status": "only_left", "diff": [], "truncated": False})
        elif name not in ours:
            rows.append({"name": name, "status": "only_right", "diff": [], "truncated": False})
        elif ours[name] == theirs[name]:
            rows.append({"name": name, "status": "same", "diff": [], "truncated": False})
        else:
            diff, truncated = text_diff(ours[name], theirs[name], f"{left.id}/{name}", f"{right.id}/{name}")
            rows.append({"name": name, "status": "changed", "diff": diff, "truncated": truncated})
    return rows
