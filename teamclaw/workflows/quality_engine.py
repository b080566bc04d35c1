"""The requirement-quality engine: runs the rule rows of ``quality_rules`` over a document
(issue 27; seed 002 §6.2 independent review, §6.7 quality check).

Each finding carries one ``category`` of docs/review-rules.md, the ``rule`` id of its row,
the ``line`` (1-based) and the exact ``quote`` (a clause of that line, verbatim), a message
and a suggestion in the document's language, and the change it proposes. Detectors:

- ``line``: the rule's trigger hits a statement, all of its ``requires`` hit, no ``exempt`` hits.
- ``defined_elsewhere``: as ``line``, unless another line defines the matched term
  (a ``definition`` pattern with ``{term}`` in it).
- ``pair``: two lines contradict each other: one hits ``trigger``, the other ``counterpart``,
  and they share a content word (``same: duration``: and the same duration phrase).
  Both lines get a finding with the same ``pair`` id.
- ``bounds`` and ``exclusive`` (``contradiction_detectors``): two lines give incompatible
  numbers for one quantity, or one reserves an action for one actor and another lets another
  actor do it; both lines get a finding with the same ``pair`` id.
- ``personal_data``: as ``line``, and the message names the data fields found, their
  sensitive categories and the law of the jurisdiction the text implies (never a guessed one).

The rules of the domain packs (``domain_packs``) that apply to the document run beside the
rule files' rules; their findings carry ``data["pack"]`` (the domain expert reports them).
"""

from __future__ import annotations

import bisect
import dataclasses
import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from teamclaw.workflows import action_detectors, chinese_words
from teamclaw.workflows import contradiction_detectors as compare
from teamclaw.workflows.document import (
    RequirementDocument,
    Statement,
    glossary_lines,
    heading_lines,
    parse_document,
    reviewable,
    role_line_categories,
    role_lines,
)
from teamclaw.workflows.domain_packs import PACKS_DIR, DomainPack, load_packs
from teamclaw.workflows.ears_grammar import bracket_depths
from teamclaw.workflows.quality_rules import LANGUAGES, Matcher, Rule, RuleSet, load_rules
from teamclaw.workflows.review_findings import Finding

_NUMBERING = re.compile(r"^\s*\d+(?:\.\d+)*\.?\s+")
_EN_TOKEN = re.compile(r"[A-Za-z][A-Za-z0-9'’-]*")
_CLAUSE_END = {"en": re.compile(r"[;；]|\.(?:\s|$)"), "zh": re.compile(r"[，,；;。！？!?]")}
_DURATION = re.compile(
    r"\d+(?:[.,]\d+)?\s*(?:(?:working|calendar|business)\s+)?"
    r"(?:minutes?|hours?|days?|weeks?|months?|years?|分钟|小时|个工作日|工作日|天|日|周|个月|月|年)",
    re.IGNORECASE,
)
NOT_REVIEWED_SECTIONS = ("background", "introduction", "overview", "goal", "背景", "概述", "简介", "目标")
"""Sections that describe or set business goals, not requirements (seed 002 §6.2 reviews the
requirements; the product manager's own checks read the goals)."""


@dataclass(frozen=True)
class Line:
    """One statement prepared for matching: ``text`` without its requirement number
    (``offset`` characters were cut), its ``words`` (jieba words for Chinese, tokens for
    English) and their ``edges`` (word start and end offsets)."""

    number: int
    section: str
    language: str
    raw: str
    text: str
    offset: int
    words: tuple[chinese_words.Word, ...]
    edges: frozenset[int]


@dataclass
class QualityFinding:
    """One engine finding (see the module docstring)."""

    rule: str
    category: str
    severity: str
    line: int
    section: str
    quote: str
    message: str
    suggestion: str
    change: dict[str, Any] = field(default_factory=dict)
    pair: str = ""
    data: dict[str, Any] = field(default_factory=dict)

    def as_finding(self) -> Finding:
        """The finding as a ``review_findings.Finding`` (``review_*.json`` issue)."""
        change = dict(self.change)
        if self.pair:
            change["pair"] = self.pair
        return Finding(
            self.rule, self.category, self.severity, self.message, self.suggestion,
            self.line, self.section, self.quote, change,
        )  # fmt: skip


def prepare(statement: Statement, language: str) -> Line:
    """``statement`` ready for matching in ``language``."""
    numbering = _NUMBERING.match(statement.text)
    offset = numbering.end() if numbering else 0
    text = statement.text[offset:]
    if language == "zh":
        words = chinese_words.segment(text)
    else:
        words = tuple(chinese_words.Word(m.group(0).lower(), "", m.start()) for m in _EN_TOKEN.finditer(text))
    return Line(statement.number, statement.section, language, statement.text, text, offset, words,
                frozenset(chinese_words.boundaries(words)))  # fmt: skip


@lru_cache(maxsize=512)
def _english_words(words: tuple[str, ...]) -> re.Pattern[str] | None:
    if not words:
        return None
    alternatives = "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True))
    return re.compile(rf"(?<![A-Za-z])(?:{alternatives})(?![A-Za-z])", re.IGNORECASE)


def _whole(line: Line, start: int, end: int, suffix: bool) -> bool:
    """True when ``start:end`` is whole words of ``line``, or (``suffix``) ends a longer word."""
    if end not in line.edges:
        return False
    return start in line.edges or (suffix and any(w.start < start and w.end == end for w in line.words))


def _chinese_word_hit(
    words: tuple[str, ...], tags: frozenset[str], line: Line, suffix: bool = False
) -> tuple[int, int] | None:
    for word in words:
        start = line.text.find(word)
        while start >= 0:
            end = start + len(word)
            if _whole(line, start, end, suffix) and _tag_ok(line, start, end, tags):
                return start, end
            start = line.text.find(word, start + 1)
    return None


def _tag_ok(line: Line, start: int, end: int, tags: frozenset[str]) -> bool:
    if not tags:
        return True
    return any(w.start == start and w.end == end and w.tag in tags for w in line.words)


def hit(matcher: Matcher, line: Line) -> tuple[int, int] | None:
    """The span (offsets in ``line.text``) of the first word or pattern of ``matcher`` in
    ``line``, or None."""
    language = line.language
    words = matcher.words.get(language, ())
    if language == "zh":
        tags, suffix = matcher.pos.get(language, frozenset()), language in matcher.suffix
        span = _chinese_word_hit(words, tags, line, suffix) if words else None
    else:
        pattern = _english_words(words)
        found = pattern.search(line.text) if pattern else None
        span = found.span() if found else None
    if span:
        return span
    patterns = matcher.patterns.get(language, ())
    if not patterns or not any_pattern(patterns, line.text):
        return None
    for pattern in patterns:
        found = pattern.search(line.text)
        if found:
            return found.span("term") if "term" in pattern.groupindex else found.span()
    return None


_COMBINED: dict[int, tuple[tuple[re.Pattern[str], ...], re.Pattern[str] | None]] = {}
_UNCOMBINABLE = re.compile(r"\\\d|\(\?P=|\(\?\(|\(\?[aiLmsux]+\)")
"""Back-references and inline flags: a pattern with one is not joined with others."""
_NAMED = re.compile(r"\(\?P<\w+>")


def _combined(patterns: tuple[re.Pattern[str], ...]) -> re.Pattern[str] | None:
    """One pattern matching where any of ``patterns`` (compiled with ``re.IGNORECASE``)
    matches, its named groups made plain; None when they cannot be joined. Built once per
    tuple of a loaded rule (kept by identity)."""
    entry = _COMBINED.get(id(patterns))
    if entry is None or entry[0] is not patterns:
        joined = None
        if len(patterns) > 1 and not any(_UNCOMBINABLE.search(p.pattern) for p in patterns):
            text = "|".join("(?:" + _NAMED.sub("(?:", p.pattern) + ")" for p in patterns)
            joined = re.compile(text, re.IGNORECASE)
        entry = _COMBINED[id(patterns)] = (patterns, joined)
    return entry[1]


def any_pattern(patterns: tuple[re.Pattern[str], ...], text: str) -> bool:
    """True when one of ``patterns`` matches ``text``: one search of them joined."""
    joined = _combined(patterns)
    if joined is None:
        return any(p.search(text) for p in patterns)
    return joined.search(text) is not None


def spans(matcher: Matcher, line: Line) -> list[tuple[int, int]]:
    """Every span of ``line.text`` that a word or pattern of ``matcher`` hits (whole words as
    in ``hit``), in text order."""
    language = line.language
    found: set[tuple[int, int]] = set()
    for word in matcher.words.get(language, ()):
        if language == "zh":
            tags, suffix = matcher.pos.get(language, frozenset()), language in matcher.suffix
            found.update(_chinese_word_spans(word, tags, line, suffix))
        else:
            found.update(_english_word_spans(word, line.text))
    for pattern in matcher.patterns.get(language, ()):
        group = "term" if "term" in pattern.groupindex else 0
        found.update(m.span(group) for m in pattern.finditer(line.text) if m.end() > m.start())
    return sorted(found)


def _chinese_word_spans(word: str, tags: frozenset[str], line: Line, suffix: bool) -> list[tuple[int, int]]:
    """The whole-word hits of ``word`` in ``line``, each search starting where the last hit
    ended (as ``hit`` on the rest of the line would find them)."""
    out = []
    start = line.text.find(word)
    while start >= 0:
        end = start + len(word)
        if _whole(line, start, end, suffix) and _tag_ok(line, start, end, tags):
            out.append((start, end))
            start = line.text.find(word, max(end, start + 1))
        else:
            start = line.text.find(word, start + 1)
    return out


@lru_cache(maxsize=4096)
def _english_word_at(word: str) -> re.Pattern[str]:
    """``word`` with ``_english_words``' right edge but no left one: a hit right where the
    previous one ended (the text before it blanked, as ``spans`` always searched)."""
    return re.compile(rf"(?:{re.escape(word)})(?![A-Za-z])", re.IGNORECASE)


def _english_word_spans(word: str, text: str) -> list[tuple[int, int]]:
    """The whole-word hits of ``word`` in ``text``, each search starting where the last hit
    ended; the text before that point counts as blank (no letter before the next hit)."""
    pattern = _english_words((word,))
    out: list[tuple[int, int]] = []
    start = 0
    while pattern is not None:
        found = (_english_word_at(word).match(text, start) if start else None) or pattern.search(text, start)
        if found is None:
            break
        out.append(found.span())
        start = found.end()
    return out


def negated(rule: Rule, line: Line, span: tuple[int, int]) -> bool:
    """True when a ``negation`` pattern of ``rule`` matches the clause text right before
    ``span`` (its patterns end with ``$``: 不/没有/无需 + the handling, "do not" + the verb)."""
    before = line.text[: span[0]]
    cut = max((m.end() for m in _CLAUSE_END[line.language].finditer(before)), default=0)
    return any(p.search(before[cut:]) for p in rule.negation.patterns.get(line.language, ()))


def _affirmed(rule: Rule, matcher: Matcher, line: Line) -> bool:
    """True when ``matcher`` hits ``line`` at least once where it is not negated (a rule
    without ``negation``: when it hits at all)."""
    if rule.negation.empty(line.language):
        return hit(matcher, line) is not None
    return any(not negated(rule, line, span) for span in spans(matcher, line))


def trigger_hit(rule: Rule, line: Line) -> tuple[int, int] | None:
    """The first span of ``rule``'s trigger in ``line`` that its ``negation`` does not negate
    (a rule without ``negation``: ``hit``): "不对接其他系统" names no external system."""
    if rule.negation.empty(line.language):
        return hit(rule.trigger, line)
    return next((span for span in spans(rule.trigger, line) if not negated(rule, line, span)), None)


def _requires(rule: Rule, line: Line) -> bool:
    return rule.requires.empty(line.language) or _affirmed(rule, rule.requires, line)


def _exempt(rule: Rule, line: Line) -> bool:
    return not rule.exempt.empty(line.language) and _affirmed(rule, rule.exempt, line)


def clause(line: Line, span: tuple[int, int]) -> str:
    """The clause of ``line`` around ``span``, verbatim (the finding's ``quote``); a comma
    inside brackets or quotes ends no clause, so a quote never stops inside "（运营方答复，…）"."""
    ends = _clause_ends(line.text, line.language)
    after = bisect.bisect_left(ends, span[0])
    start = ends[after - 1] + 1 if after else 0
    last = bisect.bisect_left(ends, span[1])
    end = ends[last] if last < len(ends) else len(line.text)
    return line.text[start:end].strip() or line.text[span[0] : span[1]]


@lru_cache(maxsize=256)
def _clause_ends(text: str, language: str) -> tuple[int, ...]:
    """The offsets of the clause ends of ``text`` outside brackets and quotes, in order;
    cached, so a long line is scanned once for all the clauses quoted from it."""
    depths = bracket_depths(text)
    return tuple(m.start() for m in _CLAUSE_END[language].finditer(text) if not depths[m.start()])


def _format(template: str, values: dict[str, str]) -> str:
    return template.format_map(_Defaults(values))


class _Defaults(dict[str, str]):
    def __missing__(self, key: str) -> str:
        return ""


def _finding(rule: Rule, line: Line, span: tuple[int, int], values: dict[str, str] | None = None) -> QualityFinding:
    language = line.language
    values = {"match": line.text[span[0] : span[1]], "quote": clause(line, span), **(values or {})}
    change = dict(rule.change)
    if isinstance(change.get("question"), dict):
        change["question"] = _format(change["question"][language], values)
    return QualityFinding(
        rule.id, rule.category, rule.severity, line.number, line.section, values["quote"],
        _format(rule.message[language], values), _format(rule.suggestion[language], values), change,
    )  # fmt: skip


def covered(rule: Rule, lines: list[Line]) -> bool:
    """True when one line of the document matches every ``covered_by`` pattern of ``rule``
    (a document-wide statement, such as a privacy policy, that settles the rule's point)."""
    if not lines:
        return False
    patterns = rule.covered_by.patterns.get(lines[0].language, ())
    return bool(patterns) and any(all(p.search(line.text) for p in patterns) for line in lines)


def _line_rule(rule: Rule, lines: list[Line], context: dict[str, Any]) -> list[QualityFinding]:
    if covered(rule, context["all_lines"]):
        return []
    out = []
    for line in lines:
        span = trigger_hit(rule, line)
        if span and _requires(rule, line) and not _exempt(rule, line):
            out.append(_finding(rule, line, span))
    return out


def _defined(rule: Rule, term: str, lines: list[Line], here: int) -> bool:
    """True when a ``definition`` pattern (``{term}`` replaced by ``term``, ``{stem}`` by the
    term without an English -s/-es/-ing/-ed/-e ending) matches a line of the document
    (``same: line``: the line ``here`` only)."""
    searched = [line for line in lines if line.number == here] if rule.same == "line" else lines
    stem = re.sub(r"(?:ing|es|s|ed|e)$", "", term) if term.isascii() else term
    for pattern in rule.definition.patterns.get(lines[0].language, ()):
        text = pattern.pattern.replace("{term}", re.escape(term)).replace("{stem}", re.escape(stem))
        concrete = re.compile(text, re.IGNORECASE)
        if any(concrete.search(line.raw) for line in searched):
            return True
    return False


def _defined_once(rule: Rule, term: str, context: dict[str, Any], here: int) -> bool:
    """``_defined`` on the document's lines, worked out once a document for each rule and
    term (``same: line``: and line), kept in ``context``: a term repeated on many lines
    would otherwise search the whole document each time."""
    cache: dict[tuple[int, str, int], bool] = context.setdefault("_defined", {})
    key = (id(rule), term, here if rule.same == "line" else 0)
    if key not in cache:
        cache[key] = _defined(rule, term, context["all_lines"], here)
    return cache[key]


def _defined_elsewhere_rule(rule: Rule, lines: list[Line], context: dict[str, Any]) -> list[QualityFinding]:
    out = []
    for line in lines:
        span = trigger_hit(rule, line)
        if not span or not _requires(rule, line) or _exempt(rule, line):
            continue
        term = line.text[span[0] : span[1]]
        if not _defined_once(rule, term, context, line.number):
            out.append(_finding(rule, line, span))
    return out


def content_words(
    line: Line, span: tuple[int, int] | None = None, stop: frozenset[str] = frozenset(), after: bool = False
) -> set[str]:
    """The content words of ``line`` (of the clause around ``span`` when given, only the part
    after ``span`` when ``after``): Chinese nouns and verbs of 2+ characters, English words
    of 4+ letters without a plural -s; ``stop`` words left out."""
    text = clause(line, span) if span else line.text
    start = line.text.find(text)
    end = start + len(text)
    if after and span:
        start = span[1]
    inside = [w for w in line.words if start <= w.start < end]
    if line.language == "zh":
        found = {w.text for w in inside if len(w.text) > 1 and w.tag[:1] in ("n", "v")}
    else:
        found = {w.text.removesuffix("s") for w in inside if len(w.text) > 3}
    return found - stop


def _durations(line: Line) -> set[str]:
    return {re.sub(r"\s+", " ", m.group(0)).lower() for m in _DURATION.finditer(line.text)}


def _paired(rule: Rule, a: Line, span: tuple[int, int], b: Line, stop: frozenset[str]) -> bool:
    if a.number == b.number or hit(rule.counterpart, b) is None or _exempt(rule, b):
        return False
    if rule.same == "duration" and not (_durations(a) & _durations(b)):
        return False
    if rule.same == "section":  # both statements sit under the same heading
        return a.section == b.section
    if rule.same == "action":  # what A allows only after a condition is what B promises by a deadline
        words = content_words(a, span, stop, after=a.language == "zh")
        return bool(words & content_words(b, hit(rule.counterpart, b), stop))
    scope = None if rule.same == "duration" else span
    return bool(content_words(a, scope, stop) & content_words(b, None, stop))


def _pair_rule(rule: Rule, lines: list[Line], context: dict[str, Any]) -> list[QualityFinding]:
    stop = frozenset(context.get("stopwords", ()))
    out: list[QualityFinding] = []
    for a in lines:
        span = hit(rule.trigger, a)
        if not span or _exempt(rule, a):
            continue
        for b in lines:
            if not _paired(rule, a, span, b, stop):
                continue
            pair = f"{rule.id}:{min(a.number, b.number)}-{max(a.number, b.number)}"
            other = hit(rule.counterpart, b) or (0, len(b.text))
            for line, where, partner in ((a, span, b), (b, other, a)):
                finding = _finding(rule, line, where, {"other": str(partner.number)})
                finding.pair = pair
                out.append(finding)
    return out


def _personal_data_rule(rule: Rule, lines: list[Line], context: dict[str, Any]) -> list[QualityFinding]:
    """``line`` findings named by fields, sensitive categories and law, on every reviewable
    line (data handled is a fact wherever it is told, background included); a document-wide
    privacy statement (``covered_by``) settles ordinary data, never sensitive data. One
    finding a line, whichever personal-data row finds it first (it names every field)."""
    policy = covered(rule, context["all_lines"])
    reported: set[int] = context.setdefault("personal_data_lines", set())
    lines = [line for line in context["reviewable_lines"] if line.number not in reported]
    out = []
    for finding in _line_rule(dataclasses.replace(rule, covered_by=Matcher()), lines, context):
        line = next(x for x in lines if x.number == finding.line)
        fields, sensitive = personal_data_in(line, context["extras"])
        if policy and not sensitive:
            continue
        labels = context["extras"].get("sensitive_labels", {})
        shown = [labels.get(c, {}).get(line.language, c) for c in sensitive]
        join = "、" if line.language == "zh" else ", "
        values = {"fields": join.join(fields), "sensitive": join.join(shown) or "-",
                  "law": context["law"].get(line.language, "")}  # fmt: skip
        finding.message = _format(rule.message[line.language], {**values, "quote": finding.quote})
        finding.suggestion = _format(rule.suggestion[line.language], {**values, "quote": finding.quote})
        if isinstance(rule.change.get("question"), dict):  # the question names the fields too
            finding.change["question"] = _format(
                rule.change["question"][line.language], {**values, "quote": finding.quote}
            )
        finding.data = {"fields": fields, "sensitive": sensitive, "jurisdiction": context["jurisdiction"]}
        reported.add(line.number)
        out.append(finding)
    return out


def personal_data_in(line: Line, extras: dict[str, Any]) -> tuple[list[str], list[str]]:
    """The personal-data fields ``line`` handles and their sensitive categories, from the
    ``sensitive`` vocabulary of personal_data.yaml (``{category: {lang: [words]}}``)."""
    fields, categories = [], []
    for category, words in extras.get("sensitive", {}).items():
        for word in words.get(line.language, ()):
            if hit(Matcher(words={line.language: (word.lower(),)}), line):
                fields.append(word)
                if category != "ordinary" and category not in categories:
                    categories.append(category)
    specific = [f for f in fields if f.lower() not in GENERIC_PERSONAL_DATA]
    return specific or fields, categories


GENERIC_PERSONAL_DATA = {"personal data", "personal information", "个人信息"}
"""Words that name personal data in general: listed only when the line names no kind of it."""


def jurisdiction(lines: list[Line], extras: dict[str, Any]) -> tuple[str, dict[str, str]]:
    """The jurisdiction code the text implies and its law per language (``"unknown"`` and the
    ``unknown`` texts when no hint is found: a foreign law is never assumed)."""
    code, law, _ = jurisdiction_hints(lines, extras)
    return code, law


def jurisdiction_hints(lines: list[Line], extras: dict[str, Any]) -> tuple[str, dict[str, str], list[str]]:
    """``jurisdiction`` and the hint words found for it (whole words of ``lines``; the first
    jurisdiction of personal_data.yaml with a hint wins), ``[]`` when unknown."""
    for entry in extras.get("jurisdictions", ()):
        found = []
        for word in entry["hints"].get(lines[0].language if lines else "en", ()):
            matcher = Matcher(words={lang: (word.lower(),) for lang in LANGUAGES})
            if any(hit(matcher, line) for line in lines):
                found.append(word)
        if found:
            return entry["code"], entry["law"], found
    return "unknown", extras.get("unknown_law", {}), []


def _actions_rule(rule: Rule, lines: list[Line], context: dict[str, Any]) -> list[QualityFinding]:
    """``action_detectors``: a finding on each sentence of ``SEVERAL`` actions or more (the
    ``counterpart`` patterns cut the list items, the ``trigger`` words are verbs)."""
    out = []
    for line in lines:
        if _exempt(rule, line):
            continue
        separators = list(rule.counterpart.patterns.get(line.language, ()))
        verbs = frozenset(rule.trigger.words.get(line.language, ()))
        for span in action_detectors.sentences(line):
            if action_detectors.action_count(line, span, separators, verbs) >= action_detectors.SEVERAL:
                out.append(_finding(rule, line, span))
                break
    return out


def _compared(pairs: Any) -> Any:
    """A detector of the pairs found by a comparison of ``contradiction_detectors``: both
    lines of each pair get a finding with the same ``pair`` id, each quoting its own clause
    and naming the other line (``{other}``)."""

    def detector(rule: Rule, lines: list[Line], context: dict[str, Any]) -> list[QualityFinding]:
        out = []
        for a, a_span, b, b_span in pairs(rule, lines, context):
            (first, first_span), (second, second_span) = sorted(((a, a_span), (b, b_span)), key=lambda x: x[0].number)
            for line, span, partner in ((first, first_span, second), (second, second_span, first)):
                finding = _finding(rule, line, span, {"other": str(partner.number)})
                finding.pair = f"{rule.id}:{first.number}-{second.number}"
                out.append(finding)
        return out

    return detector


_DETECTORS = {
    "bounds": _compared(compare.bounds_pairs),
    "exclusive": _compared(compare.exclusive_pairs),
    "negated": _compared(compare.negated_pairs),
    "opposed": _compared(compare.opposed_pairs),
    "actions": _actions_rule,
    "line": _line_rule,
    "defined_elsewhere": _defined_elsewhere_rule,
    "pair": _pair_rule,
    "personal_data": _personal_data_rule,
}


@lru_cache(maxsize=1)
def default_rules() -> RuleSet:
    """The rules shipped in ``teamclaw/workflows/rule_files`` and the domain packs of
    ``teamclaw/workflows/pack_files`` (loaded once). Raises ``RuleFileError``."""
    rules = load_rules()
    for entry in rules.extras.get("personal_data", {}).get("jurisdictions", ()):
        chinese_words.add_words(entry["hints"].get("zh", ()))
    packs = load_packs(PACKS_DIR, (rule.id for rule in rules.rules))
    return dataclasses.replace(rules, packs=packs)


def applicable_packs(lines: list[Line], packs: tuple[DomainPack, ...]) -> list[DomainPack]:
    """The packs that apply to a document of ``lines`` (each uses enough of a pack's words),
    the pack with the most distinct words first."""
    if not lines:
        return []
    language = lines[0].language
    texts = [line.text for line in lines]
    words = [w.text for line in lines for w in line.words]
    scored = [(len(p.matched_words(language, texts, words)), p) for p in packs if p.applies(language, texts, words)]
    return [pack for _, pack in sorted(scored, key=lambda item: -item[0])]


def pack_rule_ids(rules: RuleSet | None = None) -> frozenset[str]:
    """The ids of every domain pack's rules (the domain expert reports their findings)."""
    rules = rules or default_rules()
    return frozenset(rule.id for pack in rules.packs for rule in pack.rules)


def framing_lines(document: RequirementDocument, prepared: _Prepared | None = None) -> list[Line]:
    """Every heading (the title included) and statement of ``document`` prepared for
    matching (by ``prepared`` when given): what the domain and the jurisdiction are read from."""
    prepared = prepared or _Prepared(document.language)
    headings = [Statement(number, title, title, "") for _, title, number in document.headings]
    return [prepared(s) for s in sorted([*headings, *document.statements], key=lambda s: s.number)]


class _Prepared(dict[Statement, Line]):
    """``prepare`` in one language, each statement prepared once (a document's statements
    are read as all lines, reviewable lines and framing lines)."""

    def __init__(self, language: str) -> None:
        super().__init__()
        self.language = language

    def __call__(self, statement: Statement) -> Line:
        if statement not in self:
            self[statement] = prepare(statement, self.language)
        return self[statement]


def packs_of(document: RequirementDocument, rules: RuleSet | None = None) -> list[DomainPack]:
    """``applicable_packs`` for the headings and statements of ``document`` (seed 002 §6.1 领域识别)."""
    rules = rules or default_rules()
    return applicable_packs(framing_lines(document), rules.packs)


def jurisdiction_of(document: RequirementDocument, rules: RuleSet | None = None) -> tuple[str, list[str]]:
    """The jurisdiction every statement of ``document`` implies, ``"CN"``, ``"EU"`` or
    ``"unknown"``, and the hint words found (segmented words; a foreign law is never assumed)."""
    rules = rules or default_rules()
    code, _, hints = jurisdiction_hints(framing_lines(document), rules.extras.get("personal_data", {}))
    return code, hints


def _run(rule: Rule, lines: list[Line], context: dict[str, Any]) -> list[QualityFinding]:
    found = _DETECTORS[rule.detector](rule, lines, context)
    if rule.pack:
        for finding in found:
            finding.data = {**finding.data, "pack": rule.pack}
    return found


def _reviewed_section(section: str) -> bool:
    return not any(k in section.lower() for k in NOT_REVIEWED_SECTIONS)


def checked_lines(document: RequirementDocument) -> set[int]:
    """The numbers of the lines the engine has judged: the requirement statements it reviews
    and the background it finds nothing to review in (goals are left to the product manager's
    own checks, seed 002 §6.2)."""
    goal_sections = ("goal", "目标")
    return {s.number for s in reviewable(document).statements if not any(k in s.section.lower() for k in goal_sections)}


def check_document(
    document: RequirementDocument, rules: RuleSet | None = None, categories: tuple[str, ...] = ()
) -> list[QualityFinding]:
    """Every finding of ``rules`` (the shipped ones by default; only ``categories`` when
    given) on the requirement statements of ``document``, ordered by line."""
    rules = rules or default_rules()
    language = document.language
    prepared = _Prepared(language)
    everything = [prepared(s) for s in document.statements]
    reviewable_lines = [prepared(s) for s in reviewable(document).statements]
    lines = [line for line in reviewable_lines if _reviewed_section(line.section)]
    if not lines:
        return []
    extras = rules.extras.get("personal_data", {})
    framing = framing_lines(document, prepared)
    code, law = jurisdiction(framing, extras)
    context = {
        "all_lines": everything,
        "reviewable_lines": reviewable_lines,
        "extras": extras,
        "law": law,
        "jurisdiction": code,
        "stopwords": rules.extras.get("contradiction", {}).get("stopwords", {}).get(language, ()),
        "compare": rules.extras.get("contradiction", {}).get("compare", {}),
    }
    packs = applicable_packs(framing, rules.packs)
    findings: list[QualityFinding] = []
    for rule in (*rules.rules, *(rule for pack in packs for rule in pack.rules)):
        if language in rule.languages and (not categories or rule.category in categories):
            findings += _run(rule, lines, context)
    return sorted(_stated(document, findings), key=lambda f: (f.line, f.category, f.rule))


def _stated(document: RequirementDocument, findings: list[QualityFinding]) -> list[QualityFinding]:
    """``findings`` without those on lines that state no requirement: a line of bold text alone
    (a heading in all but name), a glossary's definition and, but for ``role_line_categories``, a line introducing a
    role ("Librarian: branch staff who check items"; ``document_sections.yaml``)."""
    titles, roles, kept = (
        heading_lines(document) | glossary_lines(document),
        role_lines(document),
        role_line_categories(),
    )
    return [f for f in findings if f.line not in titles and (f.line not in roles or f.category in kept)]


def check_text(text: str, rules: RuleSet | None = None, categories: tuple[str, ...] = ()) -> list[QualityFinding]:
    """``check_document`` on Markdown ``text``."""
    return check_document(parse_document(text), rules, categories)
