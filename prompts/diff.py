"""Differences between two prompt versions (PRD §4.5 "支持版本回退和 diff 对比").

``difflib`` does the work: ``unified_diff`` for the text form, ``SequenceMatcher`` over
lines for the side-by-side rows and, within each changed pair of lines, over words, so the
changed words can be highlighted. Rows hold plain text; the ``prompts/_diff.html`` fragment
renders them (Django escapes every value) for the page and for the API's ``html``.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from typing import Any

from django.template.loader import render_to_string

_TOKEN = re.compile(r"\s+|[\u3400-\u9fff\uf900-\ufaff]|[^\W\u3400-\u9fff\uf900-\ufaff]+|[^\w\s]", re.UNICODE)
"""Diff tokens: runs of spaces, one CJK character (Chinese has no spaces, so a whole clause
would be one "word" and be marked whole), a run of other word characters, one punctuation."""


@dataclass(frozen=True)
class Segment:
    """A run of text in a diff row; ``changed`` marks words that differ on the other side."""

    text: str
    changed: bool = False


@dataclass
class DiffRow:
    """One side-by-side row. ``kind``: ``equal``, ``replace`` (both sides, words highlighted),
    ``delete`` (left only) or ``insert`` (right only). Line numbers are 1-based; None on an
    empty side."""

    kind: str
    left_no: int | None
    right_no: int | None
    left: list[Segment] = field(default_factory=list)
    right: list[Segment] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "left_no": self.left_no,
            "right_no": self.right_no,
            "left": [{"text": s.text, "changed": s.changed} for s in self.left],
            "right": [{"text": s.text, "changed": s.changed} for s in self.right],
        }


@dataclass
class PromptDiff:
    """A diff of two texts: ``unified`` text, side-by-side ``rows`` and line counts."""

    unified: str
    rows: list[DiffRow]
    added: int
    removed: int

    @property
    def identical(self) -> bool:
        return not self.added and not self.removed

    def _count(self, kind: str) -> int:
        return sum(1 for row in self.rows if row.kind == kind)

    @property
    def changed(self) -> int:
        """Lines changed in place (a ``replace`` row: one line before, one after), counted once."""
        return self._count("replace")

    @property
    def inserted(self) -> int:
        """Lines only on the right (``insert`` rows): added, not a changed line."""
        return self._count("insert")

    @property
    def deleted(self) -> int:
        """Lines only on the left (``delete`` rows): removed, not a changed line."""
        return self._count("delete")

    def html(self) -> str:
        """The side-by-side table as an HTML fragment (every value escaped)."""
        return render_to_string("prompts/_diff.html", {"diff": self})


def _words(left: str, right: str) -> tuple[list[Segment], list[Segment]]:
    a, b = _TOKEN.findall(left), _TOKEN.findall(right)
    out_a: list[Segment] = []
    out_b: list[Segment] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if i2 > i1:
            out_a.append(Segment("".join(a[i1:i2]), tag != "equal"))
        if j2 > j1:
            out_b.append(Segment("".join(b[j1:j2]), tag != "equal"))
    return out_a, out_b


def diff_texts(old: str, new: str, *, old_label: str = "old", new_label: str = "new") -> PromptDiff:
    """Compare ``old`` with ``new`` line by line, and changed lines word by word."""
    a, b = old.splitlines(), new.splitlines()
    unified = "\n".join(difflib.unified_diff(a, b, fromfile=old_label, tofile=new_label, lineterm=""))
    rows: list[DiffRow] = []
    added = removed = 0
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            rows.extend(
                DiffRow("equal", i + 1, j + 1, [Segment(a[i])], [Segment(b[j])])
                for i, j in zip(range(i1, i2), range(j1, j2), strict=True)
            )
            continue
        removed += i2 - i1
        added += j2 - j1
        pairs = min(i2 - i1, j2 - j1) if tag == "replace" else 0
        for k in range(pairs):
            left, right = _words(a[i1 + k], b[j1 + k])
            rows.append(DiffRow("replace", i1 + k + 1, j1 + k + 1, left, right))
        rows.extend(DiffRow("delete", i + 1, None, [Segment(a[i], True)], []) for i in range(i1 + pairs, i2))
        rows.extend(DiffRow("insert", None, j + 1, [], [Segment(b[j], True)]) for j in range(j1 + pairs, j2))
    return PromptDiff(unified, rows, added, removed)
