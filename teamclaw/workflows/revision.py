"""The final document revised with an operator's answers to its open points (seed 002 §6.6:
what only the requirement owner can answer; issue 27, "answers change the final document").

``revise(final, points, language)`` takes ``requirement_final.md`` and the answered open
points (``monitoring.outcome.open_points``: ``{id, question, line, answer, answered_by,
answered_at}``) and returns the revised text and its report. It never changes ``final``
itself: the caller stores the result as a new artifact ``requirement_final.r<N>.md``
(``revision_name``) beside ``revision.r<N>.json`` and keeps the original.

Each answer is put where its point is:

- in place, at the end of the point's line (a requirement line of the body; a folded point
  ``open_point_folds.fold``: at the end of each of its ``lines``), followed by the
  mark ``（运营方答复，2026-12-05）`` / `` (operator's answer, 2026-12-05)``;
- otherwise (no line, a heading, an interview question) as a bullet of a section "Operator's
  answers" / "运营方答复" at the end, with the question it answers.

The requirement-quality engine re-checks the words of each answer (the wording categories the
consolidation never adopts, ``consolidation.WORDING_CATEGORIES``). An answer it finds nothing
in resolves its point: the point's entry leaves the "Open points" list. An answer it flags
(still vague, an escape clause, a number without a unit...) stays listed there, honestly,
with what the engine found.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from teamclaw.workflows.consolidation import WORDING_CATEGORIES
from teamclaw.workflows.document import parse_document
from teamclaw.workflows.open_point_folds import where
from teamclaw.workflows.quality_engine import check_document
from teamclaw.workflows.review_text import say

REVISION_NAME = re.compile(r"^requirement_final\.r(\d{1,6})\.md$")
"""The name of a revision of ``requirement_final.md`` (``revision_name``)."""
OPEN_POINTS_TITLE = {"en": "Open points", "zh": "待确认事项"}
"""The heading the consolidation gives the open points' list (``consolidation._list_open_points``)."""
ANSWERS_TITLE = {"en": "Operator's answers", "zh": "运营方答复"}
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s")


def revision_name(version: int) -> str:
    """``requirement_final.r<version>.md`` (version >= 1)."""
    return f"requirement_final.r{version}.md"


def report_name(version: int) -> str:
    """``revision.r<version>.json``: what ``revise`` reports for that revision."""
    return f"revision.r{version}.json"


def answer_mark(language: str, day: str, unclear: bool = False) -> str:
    """How an operator's words are marked in the document, in its language (``day``: ISO
    date); an answer the engine still finds unclear says so in its mark, so the revised line
    never reads as settled."""
    if unclear:
        return say(language, f" (operator's answer, {day}; still unclear)", f"（运营方答复，{day}；仍不明确）")
    return say(language, f" (operator's answer, {day})", f"（运营方答复，{day}）")


def answer_findings(text: str, language: str) -> list[dict[str, str]]:
    """What the engine still finds in an answer's words: ``[{category, quote, message}]``
    (``WORDING_CATEGORIES`` only); [] for an answer it finds nothing in."""
    heading = say(language, "Requirements", "功能需求")
    document = parse_document(f"# r\n\n## {heading}\n\n- {' '.join(text.split())}\n")
    found = check_document(document, categories=WORDING_CATEGORIES)
    return [{"category": f.category, "quote": f.quote, "message": f.message} for f in found]


@dataclass
class _Revision:
    """The revision under way: the final document's ``lines`` (answers appended in place),
    the bullets of the answers' section, and the entries of the open points' list to drop or
    to mark as still unclear (by their text)."""

    language: str
    lines: list[str]
    limit: int  # the index of the open points' heading (or len(lines)): the body is above it
    section: list[str] = field(default_factory=list)
    drop: set[str] = field(default_factory=set)
    unclear: dict[str, str] = field(default_factory=dict)
    entries: set[str] = field(default_factory=set)  # every point's entry, answered or not


def _entry(point: dict[str, Any], language: str) -> str:
    """The open point's bullet in the list as the consolidation wrote it, without its marker
    (a folded point: its question and all its lines, ``open_point_folds.where``)."""
    lines = point.get("lines")
    if lines is None:
        lines = [point["line"]] if isinstance(point.get("line"), int) else []
    return f"- {point['question']}{where(lines, language)}"


def _entries(point: dict[str, Any], language: str) -> list[str]:
    """Every bullet that may list ``point``: its own and, for a folded point, each member's
    (the interview's question stays in the draft's list as it was asked)."""
    return list(dict.fromkeys([_entry(point, language), *(_entry(m, language) for m in point.get("members") or ())]))


def _day(value: Any) -> str:
    return value.date().isoformat() if isinstance(value, datetime) else str(value or "")[:10]


def _in_body(revision: _Revision, line: Any) -> bool:
    """Whether ``line`` (1-based) is a requirement line of the body an answer can join."""
    if not isinstance(line, int) or not 1 <= line <= revision.limit:
        return False
    text = revision.lines[line - 1]
    return bool(text.strip()) and not _HEADING.match(text)


def _place(revision: _Revision, point: dict[str, Any], words: str) -> str:
    """Put the marked ``words`` at the end of each of the point's lines (a folded point has
    several, ``lines``), else into the answers' section."""
    lines = point.get("lines") or [point.get("line")]
    body = [line for line in lines if _in_body(revision, line)]
    gap = "" if revision.language == "zh" else " "
    for line in body:
        revision.lines[line - 1] = revision.lines[line - 1].rstrip() + gap + words
    if body:
        return "line"
    revision.section.append(f"- {point['question']}{say(revision.language, ' — ', '——')}{words}")
    return "section"


def _still_unclear(language: str, findings: list[dict[str, str]]) -> str:
    quotes = (
        "、".join(f"“{f['quote']}”" for f in findings)
        if language == "zh"
        else ", ".join(f"'{f['quote']}'" for f in findings)
    )
    return say(
        language,
        f" — answered by the operator, still unclear: {quotes}",
        f"——运营方已答复，但仍不明确：{quotes}",
    )


def _answer(revision: _Revision, point: dict[str, Any]) -> dict[str, Any]:
    """Place one answered point and decide whether it is resolved; its line of the report."""
    language = revision.language
    answer = " ".join(str(point["answer"]).split())
    day = _day(point.get("answered_at"))
    findings = answer_findings(answer, language)
    placed = _place(revision, point, answer + answer_mark(language, day, bool(findings)))
    for entry in _entries(point, language):
        if findings:
            revision.unclear[entry] = _still_unclear(language, findings)
        else:
            revision.drop.add(entry)
    return {
        "id": point["id"],
        "question": point["question"],
        "line": point.get("line"),
        "lines": point.get("lines") or ([point["line"]] if isinstance(point.get("line"), int) else []),
        "answer": answer,
        "answered_by": point.get("answered_by", ""),
        "answered_at": day,
        "placed": placed,
        "resolved": not findings,
        "findings": findings,
    }


def _list_line(revision: _Revision, text: str) -> str | None:
    """An entry of the open points' list as it reads after the answers (None: dropped). A
    line is the entry of the point whose entry is the longest one it begins with: a point
    whose question begins another's ("- Q" and "- Q (line 6)") must not take the other's
    entry with it."""
    owner = max((e for e in revision.entries if text.startswith(e)), key=len, default=None)
    if owner in revision.drop:
        return None
    if owner is None or owner not in revision.unclear:
        return text
    return owner + revision.unclear[owner] + text[len(owner) :]


def _tail(revision: _Revision) -> list[str]:
    """The open points' section (and what follows it) with the answered entries updated."""
    tail = [kept for text in revision.lines[revision.limit :] if (kept := _list_line(revision, text)) is not None]
    if revision.limit < len(revision.lines) and not any(t.startswith("- ") for t in tail):
        tail.append(say(revision.language, "- Every open point is answered.", "- 全部待确认事项均已答复。"))
    return tail


def _heading_index(lines: list[str], title: str) -> int:
    for index, text in enumerate(lines):
        if _HEADING.match(text) and text.lstrip("# ").strip() == title:
            return index
    return len(lines)


def revise(final: str, points: list[dict[str, Any]], language: str) -> tuple[str, dict[str, Any]]:
    """``(revised text, report)`` of ``final`` with the ``answer`` of each of ``points`` that
    has one (the others are left as they are). ``language``: "en" or "zh", the document's.
    The report is ``{language, answers: [{id, question, line, answer, answered_by,
    answered_at (ISO date), placed: "line"|"section", resolved, findings}], resolved,
    still_unclear, unanswered}`` (counts of points). ``final`` is never changed."""
    language = "zh" if language == "zh" else "en"
    lines = final.splitlines()
    revision = _Revision(language, lines, _heading_index(lines, OPEN_POINTS_TITLE[language]))
    revision.entries = {entry for point in points for entry in _entries(point, language)}
    answered = [p for p in points if p.get("answer")]
    report_answers = [_answer(revision, point) for point in answered]
    text_lines = revision.lines[: revision.limit] + _tail(revision)
    if revision.section:
        while text_lines and not text_lines[-1].strip():
            text_lines.pop()
        text_lines += ["", f"## {ANSWERS_TITLE[language]}", "", *revision.section]
    report = {
        "language": language,
        "answers": report_answers,
        "resolved": sum(1 for a in report_answers if a["resolved"]),
        "still_unclear": sum(1 for a in report_answers if not a["resolved"]),
        "unanswered": len(points) - len(answered),
    }
    return "\n".join(text_lines).rstrip() + "\n", report
