"""The draft from the interview: numbered requirements in EARS form, one thought each, built
only from the operator's words (issue 27 item 6; seed 002 phase 4 req_writer).

- Each answer splits into sentences and clauses (``interview_files/ears.yaml``: one thought
  per requirement); each clause becomes ``FR-NNN`` in EARS form ("当…时，系统应…" / "When …,
  the system shall …") by the grammar's forms and responses. Only the EARS keywords of the
  templates are added; every other word is the operator's.
- A follow-up's answer replaces the clause it followed up (``quote``); a contradiction's
  answer withdraws the other statement; an option marked ``none`` adds no requirement.
- What was not answered stays an open point (the question), never an invented answer; a
  clause the engine flagged whose follow-up was never answered stays too, and its question
  is an open point.
- ``Clarifications`` logs every question and answer by round, as Spec Kit's clarify does.

Errors: a grammar file that is incomplete or whose pattern does not compile raises
``InterviewFileError`` naming the file and the entry.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from teamclaw.workflows.clarify import INTERVIEW_FILES, ClarifyRules, InterviewFileError, answered, load_clarify_rules

FORM_KEYS = ("sentences", "clauses", "continues", "trigger_end", "trigger_start", "end")


@dataclass(frozen=True)
class Grammar:
    """One language of ``ears.yaml``: its splitters, ``forms`` and ``responses`` as
    ``(pattern, template, example)`` rows."""

    splitters: dict[str, re.Pattern[str] | None]
    end: str
    forms: tuple[tuple[re.Pattern[str], str, dict[str, str]], ...]
    responses: tuple[tuple[re.Pattern[str], str], ...]


def _compile(path: Path, entry: str, pattern: Any) -> re.Pattern[str] | None:
    if pattern in ("", None):
        return None
    try:
        return re.compile(str(pattern), re.IGNORECASE)
    except re.error as error:
        raise InterviewFileError(path, entry, f"pattern does not compile: {error}") from None


def _rows(path: Path, language: str, data: dict[str, Any], key: str) -> list[dict[str, Any]]:
    rows = data.get(key)
    if not isinstance(rows, list) or not rows:
        raise InterviewFileError(path, f"{language}.{key}", "must be a non-empty list")
    for index, row in enumerate(rows):
        if not isinstance(row, dict) or not row.get("pattern") or not isinstance(row.get("template"), str):
            raise InterviewFileError(path, f"{language}.{key}[{index}]", "needs a pattern and a template")
    return rows


def _grammar(path: Path, language: str, data: Any) -> Grammar:
    if not isinstance(data, dict):
        raise InterviewFileError(path, language, "the language's grammar is missing")
    splitters = {key: _compile(path, f"{language}.{key}", data.get(key)) for key in FORM_KEYS if key != "end"}
    forms = tuple(
        (_compile(path, f"{language}.forms.{row.get('id')}", row["pattern"]), row["template"], row.get("example") or {})
        for row in _rows(path, language, data, "forms")
    )
    responses = tuple(
        (_compile(path, f"{language}.responses[{i}]", row["pattern"]), row["template"])
        for i, row in enumerate(_rows(path, language, data, "responses"))
    )
    return Grammar(splitters, str(data.get("end", "")), forms, responses)  # type: ignore[arg-type]


@functools.cache
def load_grammar(path: Path = INTERVIEW_FILES / "ears.yaml") -> dict[str, Grammar]:
    """``ears.yaml`` by language (``yaml.safe_load``). Raises InterviewFileError."""
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    return {language: _grammar(path, language, data.get(language)) for language in ("en", "zh")}


# -- one thought per requirement ---------------------------------------------------------------
def _joins_next(clause: str, grammar: Grammar) -> bool:
    """True when ``clause`` is only a trigger ("预约成功后", "如果…") that the next clause completes."""
    end, start = grammar.splitters["trigger_end"], grammar.splitters["trigger_start"]
    return bool((end and end.search(clause)) or (start and start.search(clause)))


def clauses(text: str, grammar: Grammar) -> list[str]:
    """``text`` as its thoughts: sentences, each split at ``clauses`` unless a part continues
    the one before or completes a trigger. Words are kept as written."""
    out: list[str] = []
    for sentence in grammar.splitters["sentences"].split(text) if grammar.splitters["sentences"] else [text]:
        sentence = re.sub(r"^\s*(?:[-*+]|\d+[.)])\s+", "", sentence).strip(" \t.。;；")
        if not sentence:
            continue
        out += _split_sentence(sentence, grammar)
    return out


def _split_sentence(sentence: str, grammar: Grammar) -> list[str]:
    splitter, continues = grammar.splitters["clauses"], grammar.splitters["continues"]
    if splitter is None:
        return [sentence]
    parts = [p.strip() for p in splitter.split(sentence) if p.strip()]
    merged: list[str] = []
    glue = False
    for part in parts:
        if merged and (glue or (continues and continues.search(part))):
            merged[-1] = f"{merged[-1]}，{part}"
        else:
            merged.append(part)
        glue = _joins_next(part, grammar)
    return merged


def _response(rest: str, grammar: Grammar) -> str:
    for pattern, template in grammar.responses:
        found = pattern.match(rest)
        if found:
            values = {k: v.strip() for k, v in found.groupdict().items() if v is not None}
            if "actor" in values and values["actor"][1:2].islower():
                values["actor"] = values["actor"][0].lower() + values["actor"][1:]
            return template.format_map(values)
    return rest


def ears(clause: str, grammar: Grammar) -> str:
    """``clause`` in EARS form: the first form whose pattern matches, its ``{trigger}`` the
    clause's own condition and ``{response}`` the rest shaped by ``responses``."""
    clause = clause.strip().rstrip(".。")
    for pattern, template, _ in grammar.forms:
        found = pattern.match(clause)
        if found:
            values = found.groupdict()
            text = template.format(trigger=(values.get("trigger") or "").strip(),
                                   response=_response((values.get("rest") or "").strip(), grammar))  # fmt: skip
            return text[:1].upper() + text[1:] + grammar.end
    return clause + grammar.end


# -- the draft --------------------------------------------------------------------------------
def _same(a: str, b: str) -> bool:
    strip = re.compile(r"[\s.。,，;；!！?？]")
    a, b = strip.sub("", a), strip.sub("", b)
    return bool(a and b) and (a == b or a in b or b in a)


def dropped_clauses(entries: list[dict[str, Any]]) -> list[str]:
    """The operator's clauses a later answer replaced (a follow-up answered) or withdrew (a
    contradiction settled)."""
    out = []
    for entry in entries:
        if entry.get("kind") != "follow_up" or not answered(entry):
            continue
        option: dict[str, Any] = next(
            (o for o in entry.get("options", ()) if o["key"] == entry["answer"]["choice"]), {}
        )
        if option.get("withdraws"):
            out.append(option["withdraws"])
        elif entry.get("quote"):
            out.append(entry["quote"])
    return out


def requirements(entries: list[dict[str, Any]], sections: list[str], language: str) -> list[dict[str, Any]]:
    """The numbered requirements: ``[{id: "FR-001", text, section, source: entry id,
    clause}]`` by section (in ``sections`` order; an entry whose section is not listed goes by
    its topic, as the unknown type's custom sections do), then the order asked."""
    grammar = load_grammar()[language]
    dropped = dropped_clauses(entries)
    order = {section: index for index, section in enumerate(sections)}
    usable = [e for e in entries if answered(e) and not e["answer"]["none"]]
    usable.sort(key=lambda e: order.get(e["section"], order.get(e.get("topic", ""), len(order))))
    out: list[dict[str, Any]] = []
    for entry in usable:
        for clause in clauses(entry["answer"]["text"], grammar):
            if any(_same(clause, gone) for gone in dropped) or any(r["clause"] == clause for r in out):
                continue
            out.append({"id": f"FR-{len(out) + 1:03d}", "text": ears(clause, grammar), "section": entry["section"],
                        "source": entry["id"], "clause": clause})  # fmt: skip
    return out


def open_points(entries: list[dict[str, Any]], pending: list[dict[str, Any]]) -> list[str]:
    """The questions left open: every question not answered (or answered with the open
    option), and every follow-up the interview had no room to ask."""
    texts = [e["text"] for e in entries if not answered(e)]
    texts += [q["text"] for q in pending]
    return list(dict.fromkeys(texts))


def _answer_line(entry: dict[str, Any], rules: ClarifyRules, language: str) -> str:
    titles = rules.titles
    if not answered(entry):
        return titles["open"][language]
    answer = entry["answer"]
    choice = answer["choice"]
    if not choice:
        return entry["raw"].strip().replace("\n", " ")
    which = "recommended" if choice == entry.get("recommended") else "option"
    return (
        f"{answer['text']}（{titles[which][language].format(key=choice)}）"
        if language == "zh"
        else (f"{answer['text']} ({titles[which][language].format(key=choice)})")
    )


def clarifications(entries: list[dict[str, Any]], language: str, rules: ClarifyRules | None = None) -> list[str]:
    """The Clarifications section's lines: a sub-heading per round, then ``- Q: … → A: …``."""
    rules = rules or load_clarify_rules()
    titles = rules.titles
    lines = ["", f"## {titles['clarifications'][language]}"]
    current = None
    for entry in entries:
        if entry["round"] != current:
            current = entry["round"]
            lines += ["", f"### {titles['round'][language].format(number=current)}", ""]
        sep = "：" if language == "zh" else ": "
        lines.append(f"- {titles['question'][language]}{sep}{entry['text']} → "
                     f"{titles['answer'][language]}{sep}{_answer_line(entry, rules, language)}")  # fmt: skip
    return lines
