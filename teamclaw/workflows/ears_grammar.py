"""The grammar of the interview's draft (``interview_files/ears.yaml``; issue 27 item 6):
how an answer splits into one thought per clause, how a clause takes its EARS form ("当…时，
系统应…" / "When …, the system shall …"), and how two clauses compare (``relation``: the
same thing said twice, a disagreement, or different). Used by ``clarify`` (the follow-ups on
two answers that disagree) and ``ears`` (the draft).

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

INTERVIEW_FILES = Path(__file__).resolve().parent / "interview_files"


class InterviewFileError(ValueError):
    """An interview data file that cannot be used: ``str()`` names the file and the entry."""

    def __init__(self, path: Path | str, entry: str, reason: str) -> None:
        super().__init__(f"{Path(path).name}: {entry}: {reason}")


FORM_KEYS = ("sentences", "clauses", "continues", "trigger_end", "trigger_start", "end")


@dataclass(frozen=True)
class Grammar:
    """One language of ``ears.yaml``: its splitters, ``forms`` and ``responses`` as
    ``(pattern, template, example)`` rows."""

    splitters: dict[str, re.Pattern[str] | None]
    end: str
    refined: str
    forms: tuple[tuple[re.Pattern[str], str, dict[str, str]], ...]
    responses: tuple[tuple[re.Pattern[str], str], ...]
    step: str = "{requirement}"
    """How a clause of a numbered step is written: ``{number}`` the operator's step number."""
    in_steps: tuple[tuple[str, str], ...] = ()
    """``(response template, its form inside a numbered step)``: "{actor}的步骤：" is not
    repeated after "第 1 步："."""
    plan: re.Pattern[str] | None = None
    """A rollout or plan statement (试用, 上线, pilot, go live): not a system requirement."""


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
    refined = data.get("refined")
    if not isinstance(refined, str) or "{requirement}" not in refined or "{refinement}" not in refined:
        raise InterviewFileError(path, f"{language}.refined", "needs {requirement} and {refinement}")
    step = str(data.get("step") or "{requirement}")
    if "{requirement}" not in step:
        raise InterviewFileError(path, f"{language}.step", "needs {requirement}")
    in_steps = tuple(
        (row["template"], str(row["in_steps"])) for row in data["responses"] if isinstance(row.get("in_steps"), str)
    )
    plan = _compile(path, f"{language}.plan", data.get("plan"))
    return Grammar(splitters, str(data.get("end", "")), refined, forms, responses, step, in_steps, plan)  # type: ignore[arg-type]


@functools.cache
def load_grammar(path: Path = INTERVIEW_FILES / "ears.yaml") -> dict[str, Grammar]:
    """``ears.yaml`` by language (``yaml.safe_load``). Raises InterviewFileError."""
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    return {language: _grammar(path, language, data.get(language)) for language in ("en", "zh")}


def _words(path: Path, entry: str, words: Any) -> list[str]:
    if not isinstance(words, list) or not words or not all(isinstance(w, str) and w for w in words):
        raise InterviewFileError(path, entry, "must be a non-empty list of words")
    return sorted(words, key=len, reverse=True)


def _compare(path: Path, language: str, data: Any) -> dict[str, Any]:
    compare = (data or {}).get("compare") if isinstance(data, dict) else None
    if not isinstance(compare, dict) or not isinstance(compare.get("same"), float) or not 0 < compare["same"] <= 1:
        raise InterviewFileError(path, f"{language}.compare", "needs `same`, a fraction above 0 and at most 1")
    filler = "|".join(re.escape(w) for w in _words(path, f"{language}.compare.filler", compare.get("filler")))
    negation = "|".join(re.escape(w) for w in _words(path, f"{language}.compare.negation", compare.get("negation")))
    bound = (r"\b", r"\b") if language == "en" else ("", "")
    return {"same": compare["same"], "filler": re.compile(f"(?:{filler})"),
            "negation": re.compile(f"{bound[0]}(?:{negation}){bound[1]}")}  # fmt: skip


@functools.cache
def load_compare(path: Path = INTERVIEW_FILES / "ears.yaml") -> dict[str, dict[str, Any]]:
    """``ears.yaml``'s ``compare`` rows by language: ``{same: Dice threshold, filler:
    pattern of words left out of a comparison, negation: pattern}``. Raises
    InterviewFileError naming the file and the entry."""
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    return {language: _compare(path, language, data.get(language)) for language in ("en", "zh")}


# -- one thought per requirement ---------------------------------------------------------------
OPENERS = "（([【「『《“‘"
CLOSERS = "）)]】」』》”’"
"""Brackets and quotes an answer is never split inside: "（敏感信息：需单独同意，查看的人更少）"
is one part of its clause, whatever separator it holds."""


def bracket_depths(text: str) -> list[int]:
    """The bracket / quote depth before each character of ``text`` (an unmatched closer counts
    as nothing; ASCII double quotes toggle)."""
    depths, depth, in_quote = [], 0, False
    for char in text:
        depths.append(depth + in_quote)
        if char in OPENERS:
            depth += 1
        elif char in CLOSERS:
            depth = max(0, depth - 1)
        elif char == '"':
            in_quote = not in_quote
    return depths


def split_outside(pattern: re.Pattern[str], text: str) -> list[str]:
    """``text`` split at the matches of ``pattern`` that are outside brackets and quotes."""
    depths = bracket_depths(text)
    parts, start = [], 0
    for match in pattern.finditer(text):
        if match.end() > match.start() and depths[match.start()] == 0:
            parts.append(text[start : match.start()])
            start = match.end()
    return [*parts, text[start:]]


def _joins_next(clause: str, grammar: Grammar) -> bool:
    """True when ``clause`` is only a trigger ("预约成功后", "如果…") that the next clause completes."""
    end, start = grammar.splitters["trigger_end"], grammar.splitters["trigger_start"]
    return bool((end and end.search(clause)) or (start and start.search(clause)))


LIST_MARKER = re.compile(
    r"^\s*(?:[-*+•]\s+|(?P<number>\d{1,3})(?:[.．](?!\d)|[)、])\s*|[（(](?P<paren>\d{1,3})[）)]\s*)"
)
"""A list marker opening an answer line: a bullet, or a step number ("1.", "2)", "3、", "（4）")."""


def clauses(text: str, grammar: Grammar, whole: bool = False) -> list[str]:
    """``text`` as its thoughts: sentences, each split at ``clauses`` unless a part continues
    the one before or completes a trigger (``whole``: sentences only, as an option's text is
    written: "被服务的人和工作人员两类，权限不同" is one thought). Words are kept as written;
    nothing is split inside brackets or quotes."""
    return [clause for _, clause in numbered_clauses(text, grammar, whole)]


def numbered_clauses(text: str, grammar: Grammar, whole: bool = False) -> list[tuple[str, str]]:
    """``clauses`` with the step number of the numbered line each comes from (``"1"`` for
    "1. 病人选择科室"; ``""`` when the line has no number): the operator's numbering of steps
    is kept, in order (issue 27)."""
    out: list[tuple[str, str]] = []
    for line in text.splitlines() or [text]:
        marker = LIST_MARKER.match(line)
        step = (marker.group("number") or marker.group("paren") or "") if marker else ""
        line = line[marker.end() :] if marker else line
        sentences = grammar.splitters["sentences"]
        for sentence in split_outside(sentences, line) if sentences else [line]:
            sentence = LIST_MARKER.sub("", sentence).strip(" \t.。;；")
            if sentence:
                out += [(step, part) for part in ([sentence] if whole else _split_sentence(sentence, grammar))]
    return out


def _split_sentence(sentence: str, grammar: Grammar) -> list[str]:
    splitter, continues = grammar.splitters["clauses"], grammar.splitters["continues"]
    if splitter is None:
        return [sentence]
    parts = [p.strip() for p in split_outside(splitter, sentence) if p.strip()]
    merged: list[str] = []
    glue = False
    for part in parts:
        if merged and (glue or (continues and continues.search(part))):
            merged[-1] = f"{merged[-1]}，{part}"
        else:
            merged.append(part)
        glue = _joins_next(part, grammar)
    return merged


def _response(rest: str, grammar: Grammar, step: str = "") -> str:
    for pattern, template in grammar.responses:
        found = pattern.match(rest)
        if found:
            values = {k: v.strip() for k, v in found.groupdict().items() if v is not None}
            if "actor" in values and values["actor"][1:2].islower():
                values["actor"] = values["actor"][0].lower() + values["actor"][1:]
            if step:
                template = dict(grammar.in_steps).get(template, template)
            return template.format_map(values)
    return rest


def ears(clause: str, grammar: Grammar, step: str = "") -> str:
    """``clause`` in EARS form: the first form whose pattern matches, its ``{trigger}`` the
    clause's own condition and ``{response}`` the rest shaped by ``responses``; with the
    operator's ``step`` number, in the grammar's ``step`` form ("第 1 步：…" / "Step 1: …")."""
    clause = clause.strip().rstrip(".。")
    text = clause
    for pattern, template, _ in grammar.forms:
        found = pattern.match(clause)
        if found:
            values = found.groupdict()
            text = template.format(trigger=(values.get("trigger") or "").strip(),
                                   response=_response((values.get("rest") or "").strip(), grammar, step))  # fmt: skip
            text = text[:1].upper() + text[1:]
            break
    return (grammar.step.format(number=step, requirement=text) if step else text) + grammar.end


def is_plan(clause: str, grammar: Grammar) -> bool:
    """True when ``clause`` is a rollout or plan statement ("诊所护士长试用一周", "没有问题就上线",
    "Go live after a two-week pilot") that the draft would otherwise state as "系统应满足：…":
    it goes to the plan section, not among the requirements."""
    if grammar.plan is None or not grammar.plan.search(clause):
        return False
    fallback = grammar.responses[-1][1].format(what=clause.strip().rstrip(".。")) + grammar.end
    return ears(clause, grammar).lower() == fallback.lower()


# -- comparing two clauses ---------------------------------------------------------------------
def signature(clause: str, language: str) -> tuple[frozenset[str], tuple[str, ...], bool]:
    """``(units, numbers, negated)`` of a clause for comparing two: the units are the words
    (English) or character pairs (Chinese) left once punctuation, figures and the grammar's
    ``filler`` words are removed; ``numbers`` every figure in order; ``negated`` whether a
    ``negation`` word occurs (``ears.yaml`` ``compare``)."""
    compare = load_compare()[language]
    text = clause.lower()
    numbers = tuple(re.findall(r"\d+(?:[.,]\d+)?|[一二两三四五六七八九十百千万]+", text))
    negated = bool(compare["negation"].search(text))
    text = re.sub(r"\d+(?:[.,]\d+)?", " ", text)
    if language == "zh":
        text = compare["filler"].sub("", re.sub(r"[^\u4e00-\u9fffa-z]", "", text))
        units = frozenset(text[i : i + 2] for i in range(len(text) - 1)) or frozenset({text})
    else:
        units = frozenset(w for w in re.findall(r"[a-z0-9]+", text) if not compare["filler"].fullmatch(w))
    return units, numbers, negated


def relation(a: str, b: str, language: str) -> str:
    """``"same"`` when two clauses say the same thing (their units' Dice coefficient at least
    ``ears.yaml`` ``compare.same``, the same figures and the same polarity), ``"conflict"``
    when they are that alike but a figure or the polarity differs, else ``"different"``."""
    (units_a, numbers_a, neg_a), (units_b, numbers_b, neg_b) = signature(a, language), signature(b, language)
    if not units_a or not units_b:
        return "different"
    dice = 2 * len(units_a & units_b) / (len(units_a) + len(units_b))
    if dice < load_compare()[language]["same"]:
        return "different"
    return "same" if (numbers_a, neg_a) == (numbers_b, neg_b) else "conflict"
