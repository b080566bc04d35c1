"""One review finding (seed 002 §6.2 ``review_*.json`` issue) and the helpers every expert
uses to quote the user's line in the document's language."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from teamclaw.workflows.document import Statement
from teamclaw.workflows.review_text import say


@dataclass
class Finding:
    """One review issue as written to ``review_*.json``."""

    rule: str
    category: str
    severity: str
    problem: str
    suggestion: str
    line: int | None = None
    section: str = ""
    quote: str = ""
    change: dict[str, Any] = field(default_factory=dict)

    def as_dict(self, index: int, perspective: str) -> dict[str, Any]:
        return {
            "id": f"{perspective}-{index + 1}",
            "rule": self.rule,
            "category": self.category,
            "severity": self.severity,
            "location": {"line": self.line, "section": self.section},
            "quote": self.quote,
            "problem": self.problem,
            "suggestion": self.suggestion,
            "change": self.change,
        }


def quote(statement: Statement) -> str:
    return statement.text[:240]


def clip(text: str, limit: int = 120) -> str:
    """``text`` without its final period, cut at a word boundary to at most ``limit`` characters."""
    text = text.strip().rstrip(".。")
    if len(text) <= limit:
        return text
    cut = text[:limit]
    return (cut.rsplit(" ", 1)[0] if " " in cut else cut) + "…"


def q(language: str, text: str) -> str:
    """``text`` in the quotation marks of ``language``."""
    return say(language, f'"{text}"', f"“{text}”")
