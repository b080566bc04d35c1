"""A requirement document read line by line: headings, statements and their sections.

The offline reviewers (``review_rules``) work on this structure so every finding can point at
a line and a section of the user's own text.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_BULLET = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
_CHECKBOX = re.compile(r"^\[[ xX]\]\s+")
_FENCE = re.compile(r"^\s*(```|~~~)")
OPEN_POINT_SECTIONS = ("Open points", "待确认事项")
"""Section titles of the questions still open (the interview's and the consolidator's):
questions, not requirements, so the reviewers do not review them."""
CLARIFICATION_SECTIONS = ("Clarifications", "澄清记录")
"""Section titles of the interview's log of questions and answers (its sub-headings too):
a record, not requirements, so the reviewers do not review it."""
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_LATIN_WORD = re.compile(r"[A-Za-z]+")


def document_language(text: str) -> str:
    """``"zh"`` when the text is mostly Chinese, else ``"en"`` (seed 002 §6.2: the experts
    write in the document's language).

    A Chinese character carries about as much as an English word, so the text is Chinese
    when it has at least as many CJK characters as Latin words (acronyms and product
    names inside Chinese prose do not tip it over)."""
    cjk = len(_CJK.findall(text))
    return "zh" if cjk and cjk >= len(_LATIN_WORD.findall(text)) else "en"


def has_cjk(text: str) -> bool:
    """True when ``text`` contains a Chinese character."""
    return bool(_CJK.search(text))


@dataclass(frozen=True, slots=True)
class Statement:
    """One content line: ``number`` (1-based), the raw ``line``, its ``text`` without list
    markers, and the ``section`` heading it sits under ('' before the first heading)."""

    number: int
    line: str
    text: str
    section: str


@dataclass(slots=True)
class RequirementDocument:
    """``title``, ``headings`` as ``(level, title, line)``, the content ``statements`` and
    the ``language`` ("zh" or "en", ``document_language``)."""

    source: str
    language: str = "en"
    title: str = ""
    headings: list[tuple[int, str, int]] = field(default_factory=list)
    statements: list[Statement] = field(default_factory=list)

    @property
    def lines(self) -> list[str]:
        return self.source.splitlines()

    def has_section(self, *keywords: str) -> bool:
        """True when a heading contains one of ``keywords`` (case-insensitive)."""
        return any(any(k.lower() in title.lower() for k in keywords) for _, title, _ in self.headings)

    def mentions(self, pattern: re.Pattern[str]) -> bool:
        return bool(pattern.search(self.source))

    def section_titles(self) -> list[str]:
        return [title for _, title, _ in self.headings]


def parse_document(source: str) -> RequirementDocument:
    """Split Markdown into headings and statements, skipping code blocks and blank lines."""
    document = RequirementDocument(source=source, language=document_language(source))
    section = ""
    in_code = False
    for number, line in enumerate(source.splitlines(), start=1):
        if _FENCE.match(line):
            in_code = not in_code
            continue
        if in_code or not line.strip():
            continue
        heading = _HEADING.match(line)
        if heading:
            level, title = len(heading.group(1)), heading.group(2).strip()
            document.headings.append((level, title, number))
            if level == 1 and not document.title:
                document.title = title
            section = title
            continue
        text = _CHECKBOX.sub("", _BULLET.sub("", line)).strip()
        if text.startswith("|") and set(text) <= set("|-: "):
            continue  # table rule line
        document.statements.append(Statement(number, line, text, section))
    if not document.title:
        first = next((s.text for s in document.statements), "")
        document.title = first[:80]
    return document


SECTIONS_FILE = Path(__file__).with_name("document_sections.yaml")


@lru_cache(maxsize=1)
def out_of_scope_words() -> tuple[str, ...]:
    """The heading words (lower case, every language) of ``document_sections.yaml``
    ``out_of_scope`` that put a section out of scope ("不在范围内", "Non-goals")."""
    data = yaml.safe_load(SECTIONS_FILE.read_text(encoding="utf-8")) or {}
    return tuple(w.lower() for words in data.get("out_of_scope", {}).values() for w in words)


def out_of_scope(title: str) -> bool:
    """True when heading ``title`` puts its section out of scope (``out_of_scope_words``)."""
    return any(w in title.lower() for w in out_of_scope_words())


@lru_cache(maxsize=1)
def _sections_data() -> dict[str, Any]:
    return yaml.safe_load(SECTIONS_FILE.read_text(encoding="utf-8")) or {}


_ROLE_LINE = re.compile(r"^(?:\*\*)?[^：:。；;，,.!?！？]{1,24}?(?:\*\*)?\s*[：:]\s*\S")
_BOLD_ONLY = re.compile(r"^(?:\*\*|__)[^*_]+(?:\*\*|__)\s*[：:]?$")


def role_line_categories() -> frozenset[str]:
    """The categories still reviewed on a role line (``document_sections.yaml``)."""
    return frozenset(_sections_data().get("role_line_categories", ()))


def role_lines(document: RequirementDocument) -> set[int]:
    """The numbers of the lines that introduce a role ("Name: who they are") under a heading
    with a ``roles`` word of ``document_sections.yaml`` ("2. Roles", "用户与角色")."""
    words = tuple(w.lower() for ws in _sections_data().get("roles", {}).values() for w in ws)
    return {
        s.number for s in document.statements if any(w in s.section.lower() for w in words) and _ROLE_LINE.match(s.text)
    }


def glossary_lines(document: RequirementDocument) -> set[int]:
    """The numbers of the statements under a heading with a ``glossary`` word of
    ``document_sections.yaml`` ("1. Glossary", "术语"): definitions, not requirements."""
    words = tuple(w.lower() for ws in _sections_data().get("glossary", {}).values() for w in ws)
    return {s.number for s in document.statements if any(w in s.section.lower() for w in words)}


def heading_lines(document: RequirementDocument) -> set[int]:
    """The numbers of the statements that are headings in all but name: a line of bold text
    alone ("**US-2 临时委托接送**", "**Payments:**") titles what follows, it states nothing."""
    return {s.number for s in document.statements if _BOLD_ONLY.match(s.text)}


def set_aside_lines(document: RequirementDocument) -> set[int]:
    """The line numbers under a clarifications or an out-of-scope heading, up to the next
    heading of the same level or higher (its sub-headings included): a log of the interview,
    or what the document says it will not build, is exempt from every review rule."""
    out: set[int] = set()
    headings = sorted(document.headings, key=lambda h: h[2])
    for index, (level, title, line) in enumerate(headings):
        if title not in CLARIFICATION_SECTIONS and not out_of_scope(title):
            continue
        end = next((h[2] for h in headings[index + 1 :] if h[0] <= level), len(document.lines) + 1)
        out.update(range(line, end))
    return out


def reviewable(document: RequirementDocument) -> RequirementDocument:
    """``document`` without the statements under an open-points or clarifications section
    (same line numbers): what the experts review. A question the user left open, or the log
    of the interview, is not the user's requirement."""
    aside = set_aside_lines(document)
    return dataclasses.replace(
        document,
        headings=list(document.headings),
        statements=[s for s in document.statements if s.section not in OPEN_POINT_SECTIONS and s.number not in aside],
    )


NOTHING_TO_REVIEW = "has nothing to review: no requirement text, only headings, code blocks or table rules"
"""Why a document without statements is refused (seed 002 §6.2 reviews requirement text)."""


def nothing_to_review(text: str) -> str | None:
    """``NOTHING_TO_REVIEW`` when ``text`` holds no statement outside code blocks, headings
    and open points (a title alone, a skeleton of headings, a pasted code block), else None."""
    return None if reviewable(parse_document(text)).statements else NOTHING_TO_REVIEW
