"""Requirement-quality rules as data: loading and validating the rule files (issue 27).

A rule is one row of a YAML file in ``teamclaw/workflows/rule_files/`` (one file per
category of ``docs/review-rules.md``)::

    category: vague_term
    rules:
      - id: vague-quality-word
        severity: major                      # critical | major | minor
        languages: [en, zh]
        trigger:                             # any of these fires the rule
          words: {en: [fast], zh: [快速]}     # whole words (Chinese: jieba words)
          patterns: {en: ['\\bin a timely manner\\b'], zh: ['尽快']}
          pos: {zh: [a, ad, d]}              # a matched Chinese word must carry one of these tags
          suffix: [zh]                       # a word may also end a longer word (数据安全)
        requires: {patterns: {...}}          # all of these kinds must also match the line
        exempt: {words: {...}, patterns: {...}}   # any of these on the line: no finding
        covered_by: {patterns: {...}}        # all of these on one line of the document: no finding
        negation: {patterns: {...}}          # ending in $: a requires/exempt hit after it is negated
        detector: line                       # or a document-level detector (see quality_engine)
        message: {en: "'{match}' ...", zh: "“{match}”……"}
        suggestion: {en: ..., zh: ...}
        change: {action: open_point, question: {en: ..., zh: ...}}
        examples:                            # tested by tests/workflows/test_quality_rules.py
          en: {positive: [...], negative: [...]}
          zh: {positive: [...], negative: [...]}

A file with an unknown category, a pattern that does not compile, a language without its
message, suggestion or examples, or an unknown key is refused at load with ``RuleFileError``
naming the file and the rule. Files are read with ``yaml.safe_load``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from teamclaw.workflows import chinese_words

RULES_DIR = Path(__file__).with_name("rule_files")
CATEGORIES = (
    "vague_term",
    "missing_unit",
    "undefined_term",
    "escape_clause",
    "absolute",
    "compound",
    "passive_no_actor",
    "untestable",
    "missing_error_handling",
    "limit_without_overflow",
    "time_boundary",
    "role_permission_gap",
    "personal_data",
    "notification_consent",
    "contradiction",
    "integration_failure",
    "ai_without_evaluation",
    "domain_rule_gap",
)
"""The defect categories of docs/review-rules.md; every finding carries exactly one."""
LANGUAGES = ("en", "zh")
SEVERITIES = ("critical", "major", "minor")
ACTIONS = ("open_point", "replace", "append_section")
DETECTORS = (
    "line",
    "defined_elsewhere",
    "pair",
    "personal_data",
    "bounds",
    "exclusive",
    "negated",
    "opposed",
    "actions",
)
_RULE_KEYS = {
    "id", "severity", "languages", "trigger", "requires", "exempt", "detector", "counterpart",
    "same", "message", "suggestion", "change", "examples", "definition", "covered_by",
    "negation",
}  # fmt: skip
_MATCH_KEYS = {"words", "patterns", "pos", "suffix"}


class RuleFileError(ValueError):
    """A rule or domain-pack file that cannot be used: ``str()`` names the file, the line
    (1-based, 0 when unknown) of the row or key at fault, the rule and the reason."""

    def __init__(self, path: Path | str, rule: str, reason: str, line: int = 0) -> None:
        self.path, self.rule, self.reason, self.line = str(path), rule, reason, line
        where = f"{Path(path).name}:{line}" if line else Path(path).name
        super().__init__(f"{where}: rule {rule!r}: {reason}")

    def at(self, line: int) -> RuleFileError:
        """The same error naming ``line`` (kept when it already names one)."""
        return self if self.line else RuleFileError(self.path, self.rule, self.reason, line)


@dataclass(frozen=True)
class Matcher:
    """Per-language word lists and regular expressions; a line matches when any hits."""

    words: dict[str, tuple[str, ...]] = field(default_factory=dict)
    patterns: dict[str, tuple[re.Pattern[str], ...]] = field(default_factory=dict)
    pos: dict[str, frozenset[str]] = field(default_factory=dict)
    suffix: frozenset[str] = frozenset()
    """Languages in which a listed word also matches as the end of a longer segmented word
    (数据安全 ends with 安全)."""

    def empty(self, language: str) -> bool:
        return not self.words.get(language) and not self.patterns.get(language)


@dataclass(frozen=True)
class Rule:
    """One validated rule row (see the module docstring for the fields)."""

    id: str
    category: str
    severity: str
    languages: tuple[str, ...]
    trigger: Matcher
    requires: Matcher
    exempt: Matcher
    detector: str
    counterpart: Matcher
    same: str
    definition: Matcher
    covered_by: Matcher
    message: dict[str, str]
    suggestion: dict[str, str]
    change: dict[str, Any]
    examples: dict[str, dict[str, list[str]]]
    source: str
    pack: str = ""
    """The domain of the pack the rule comes from (``domain_packs``), "" for a rule file."""
    negation: Matcher = field(default_factory=Matcher)
    """Patterns ending in ``$`` matched against the clause before a ``requires`` or ``exempt``
    hit: a negated hit does not count (系统不记录个人信息 handles nothing; 不加密 protects nothing)."""


@dataclass(frozen=True)
class DomainPack:
    """One validated pack: its ``domain`` id, ``label`` per language, the ``words`` (per
    language, lower case) that make it apply and how many distinct ones (``min_words``), its
    ``norms`` per jurisdiction and language, its ``rules`` and the file it came from."""

    domain: str
    label: dict[str, str]
    words: dict[str, tuple[str, ...]]
    min_words: int
    norms: dict[str, dict[str, list[str]]]
    rules: tuple[Rule, ...]
    source: str
    _patterns: dict[str, re.Pattern[str]] = field(default_factory=dict, compare=False, repr=False)

    def matched_words(self, language: str, texts: Iterable[str], words: Iterable[str]) -> set[str]:
        """The pack's words found in a document: for Chinese among its segmented ``words``,
        for English as whole words of ``texts``."""
        wanted = self.words.get(language, ())
        if language == "zh":
            return set(wanted) & {w.lower() for w in words}
        pattern = self._patterns.get(language)
        if pattern is None:
            return set()
        return {m.group(0).lower() for text in texts for m in pattern.finditer(text)}

    def applies(self, language: str, texts: Iterable[str], words: Iterable[str]) -> bool:
        """True when the document uses at least ``min_words`` distinct words of the pack."""
        return len(self.matched_words(language, texts, words)) >= self.min_words


@dataclass(frozen=True)
class RuleSet:
    """All rules, and the extra vocabularies some categories carry (``personal_data``:
    ``sensitive`` categories and ``jurisdictions``), by category."""

    rules: tuple[Rule, ...]
    extras: dict[str, dict[str, Any]]
    packs: tuple[DomainPack, ...] = ()
    """The domain packs (``domain_packs``); their rules run on a document a pack applies to."""

    def of(self, *categories: str) -> tuple[Rule, ...]:
        return tuple(r for r in self.rules if r.category in categories)


def _per_language(path: Path, rule: str, value: Any, what: str) -> dict[str, list[Any]]:
    if value is None:
        return {}
    if not isinstance(value, dict) or not set(value) <= set(LANGUAGES):
        raise RuleFileError(path, rule, f"{what} must map languages ({', '.join(LANGUAGES)}) to lists")
    if any(not isinstance(items, list) for items in value.values()):
        raise RuleFileError(path, rule, f"{what} must map each language to a list")
    return value


def _compile(path: Path, rule: str, pattern: Any, language: str) -> re.Pattern[str]:
    if not isinstance(pattern, str):
        raise RuleFileError(path, rule, f"pattern {pattern!r} ({language}) is not a string")
    try:
        return re.compile(pattern, re.IGNORECASE)
    except re.error as error:
        raise RuleFileError(path, rule, f"pattern {pattern!r} ({language}) does not compile: {error}") from None


def _matcher(path: Path, rule: str, value: Any, what: str) -> Matcher:
    if value is None:
        return Matcher()
    if not isinstance(value, dict) or not set(value) <= _MATCH_KEYS:
        raise RuleFileError(path, rule, f"{what} may only hold {', '.join(sorted(_MATCH_KEYS))}")
    words = _per_language(path, rule, value.get("words"), f"{what}.words")
    patterns = _per_language(path, rule, value.get("patterns"), f"{what}.patterns")
    pos = _per_language(path, rule, value.get("pos"), f"{what}.pos")
    suffix = value.get("suffix") or []
    if not isinstance(suffix, list) or not set(suffix) <= set(LANGUAGES):
        raise RuleFileError(path, rule, f"{what}.suffix must list languages ({', '.join(LANGUAGES)})")
    chinese_words.add_words(str(w) for w in words.get("zh", []))
    return Matcher(
        suffix=frozenset(suffix),
        words={lang: tuple(str(w).lower() for w in items) for lang, items in words.items()},
        patterns={lang: tuple(_compile(path, rule, p, lang) for p in items) for lang, items in patterns.items()},
        pos={lang: frozenset(str(t) for t in items) for lang, items in pos.items()},
    )


def _texts(path: Path, rule: str, row: dict[str, Any], key: str, languages: tuple[str, ...]) -> dict[str, str]:
    value = row.get(key)
    if not isinstance(value, dict):
        raise RuleFileError(path, rule, f"{key} must give a text per language")
    missing = [lang for lang in languages if not isinstance(value.get(lang), str) or not value[lang].strip()]
    if missing:
        raise RuleFileError(path, rule, f"{key} has no text for language {', '.join(missing)}")
    return {lang: value[lang] for lang in languages}


def _examples(
    path: Path, rule: str, row: dict[str, Any], languages: tuple[str, ...]
) -> dict[str, dict[str, list[str]]]:
    value = row.get("examples")
    if not isinstance(value, dict):
        raise RuleFileError(path, rule, "examples must give positive and negative examples per language")
    out = {}
    for lang in languages:
        pair = value.get(lang)
        if not isinstance(pair, dict) or not pair.get("positive") or not pair.get("negative"):
            raise RuleFileError(path, rule, f"examples has no positive and negative example for language {lang}")
        out[lang] = {"positive": list(pair["positive"]), "negative": list(pair["negative"])}
    return out


def _change(path: Path, rule: str, row: dict[str, Any], languages: tuple[str, ...]) -> dict[str, Any]:
    change = row.get("change") or {"action": "open_point"}
    if not isinstance(change, dict) or change.get("action") not in ACTIONS:
        raise RuleFileError(path, rule, f"change.action must be one of {', '.join(ACTIONS)}")
    if "question" in change:
        change = {**change, "question": _texts(path, rule, change, "question", languages)}
    return change


def parse_rule(path: Path, category: str, row: Any) -> Rule:
    """One rule row of ``path`` validated as a rule of ``category``. Raises ``RuleFileError``."""
    if not isinstance(row, dict) or not isinstance(row.get("id"), str):
        raise RuleFileError(path, "?", "each rule needs an id")
    rid = row["id"]
    unknown = set(row) - _RULE_KEYS
    if unknown:
        raise RuleFileError(path, rid, f"unknown key {', '.join(sorted(unknown))}")
    languages = tuple(row.get("languages") or ())
    if not languages or not set(languages) <= set(LANGUAGES):
        raise RuleFileError(path, rid, f"languages must be a non-empty subset of {', '.join(LANGUAGES)}")
    if row.get("severity") not in SEVERITIES:
        raise RuleFileError(path, rid, f"severity must be one of {', '.join(SEVERITIES)}")
    detector = row.get("detector", "line")
    if detector not in DETECTORS:
        raise RuleFileError(path, rid, f"unknown detector {detector!r}")
    trigger = _matcher(path, rid, row.get("trigger"), "trigger")
    if any(trigger.empty(lang) for lang in languages):
        raise RuleFileError(path, rid, "trigger has no word or pattern for one of its languages")
    return Rule(
        id=rid,
        category=category,
        severity=row["severity"],
        languages=languages,
        trigger=trigger,
        requires=_matcher(path, rid, row.get("requires"), "requires"),
        exempt=_matcher(path, rid, row.get("exempt"), "exempt"),
        detector=detector,
        counterpart=_matcher(path, rid, row.get("counterpart"), "counterpart"),
        same=str(row.get("same", "")),
        definition=_matcher(path, rid, row.get("definition"), "definition"),
        covered_by=_matcher(path, rid, row.get("covered_by"), "covered_by"),
        negation=_matcher(path, rid, row.get("negation"), "negation"),
        message=_texts(path, rid, row, "message", languages),
        suggestion=_texts(path, rid, row, "suggestion", languages),
        change=_change(path, rid, row, languages),
        examples=_examples(path, rid, row, languages),
        source=path.name,
    )


def read_yaml(path: Path) -> tuple[Any, dict[str, int], list[int]]:
    """``(data, key_lines, row_lines)`` of a rule or pack file: its content, the line of each
    top-level key and the line of each row of its ``rules`` list (1-based). Raises
    ``RuleFileError`` for a file that is not YAML, naming the line of the fault."""
    try:
        text = path.read_text(encoding="utf-8")
        data, node = yaml.safe_load(text), yaml.compose(text)
    except (OSError, UnicodeDecodeError) as error:
        raise RuleFileError(path, "?", f"cannot be read: {error}") from None
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        raise RuleFileError(path, "?", f"not valid YAML: {error}", mark.line + 1 if mark else 0) from None
    keys: dict[str, int] = {}
    rows: list[int] = []
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            keys[str(key.value)] = key.start_mark.line + 1
            if key.value == "rules" and isinstance(value, yaml.SequenceNode):
                rows = [item.start_mark.line + 1 for item in value.value]
    return data, keys, rows


def row_line(rows: list[int], index: int) -> int:
    return rows[index] if index < len(rows) else 0


def load_file(path: Path) -> tuple[str, list[Rule], dict[str, Any]]:
    """The category, rules and extra vocabularies of one rule file. Raises ``RuleFileError``
    naming the file and the line of the key or row at fault."""
    data, keys, lines = read_yaml(path)
    if not isinstance(data, dict):
        raise RuleFileError(path, "?", "a rule file is a mapping with category and rules", 1)
    category = data.get("category")
    if category not in CATEGORIES:
        reason = f"unknown category {category!r} (see docs/review-rules.md)"
        raise RuleFileError(path, "?", reason, keys.get("category", 1))
    rows = data.get("rules")
    if not isinstance(rows, list) or not rows:
        raise RuleFileError(path, "?", "rules must be a non-empty list", keys.get("rules", 1))
    rules = []
    for index, row in enumerate(rows):
        try:
            rules.append(parse_rule(path, category, row))
        except RuleFileError as error:
            raise error.at(row_line(lines, index)) from None
    extras = {k: v for k, v in data.items() if k not in ("category", "rules")}
    return category, rules, extras


def load_rules(directory: Path = RULES_DIR) -> RuleSet:
    """Every ``*.yaml`` rule file of ``directory``; rule ids are unique across files.
    Raises ``RuleFileError`` for the first bad file."""
    rules: list[Rule] = []
    extras: dict[str, dict[str, Any]] = {}
    seen: dict[str, str] = {}
    for path in sorted(directory.glob("*.yaml")):
        category, loaded, extra = load_file(path)
        for rule in loaded:
            if rule.id in seen:
                raise RuleFileError(path, rule.id, f"id already used in {seen[rule.id]}")
            seen[rule.id] = path.name
        rules += loaded
        extras.setdefault(category, {}).update(extra)
    return RuleSet(tuple(rules), extras)
