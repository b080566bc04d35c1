"""Domain packs: the rules a domain expert applies, one YAML file per domain (issue 27;
seed 002 §6.1 领域识别, §6.2 领域专家: 行业规范、特殊要求).

A pack is a file of ``teamclaw/workflows/pack_files/`` (docs/review-rules.md, "Domain packs")::

    domain: health_care                    # unique; the file's name without .yaml
    label: {en: health care, zh: 医疗健康}
    applies_when:                          # the pack applies to a document that uses at least
      words: {en: [patient], zh: [患者]}    # ``min_words`` distinct words of these (Chinese:
      min_words: 2                         # whole jieba words, never substrings)
    norms:                                 # what the expert reviews against, by jurisdiction
      CN: {en: [...], zh: [...]}           # (codes of personal_data.yaml) and ``unknown``
      unknown: {en: [...], zh: [...]}
    rules:                                 # rule rows as in rule_files/, each with its category
      - id: add-on-beyond-slot-cap
        category: domain_rule_gap
        ...

A pack with an unknown key, category or jurisdiction, a pattern that does not compile or a
language without its texts is refused at load with ``quality_rules.RuleFileError`` naming the
file and the line (Django system check ``runs.E001`` at start-up). Adding a pack adds a domain:
its rows are tested from their examples like every rule (tests/workflows/test_domain_packs.py).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from teamclaw.workflows import chinese_words
from teamclaw.workflows.quality_rules import (
    CATEGORIES,
    LANGUAGES,
    DomainPack,
    Rule,
    RuleFileError,
    parse_rule,
    read_yaml,
    row_line,
)

PACKS_DIR = Path(__file__).with_name("pack_files")
JURISDICTION_CODES = ("CN", "EU", "US", "UK", "unknown")
"""The jurisdictions a pack may give norms for (``unknown``: the text names none)."""
_PACK_KEYS = {"domain", "label", "applies_when", "norms", "rules"}
_APPLIES_KEYS = {"words", "min_words"}


def _texts(path: Path, value: Any, what: str, line: int) -> dict[str, str]:
    if not isinstance(value, dict) or set(LANGUAGES) - set(value) or set(value) - set(LANGUAGES):
        raise RuleFileError(path, "?", f"{what} must give a text for each language ({', '.join(LANGUAGES)})", line)
    if not all(isinstance(v, str) and v.strip() for v in value.values()):
        raise RuleFileError(path, "?", f"{what} has an empty text", line)
    return dict(value)


def _word_lists(path: Path, value: Any, what: str, line: int) -> dict[str, list[str]]:
    if not isinstance(value, dict) or set(LANGUAGES) - set(value) or set(value) - set(LANGUAGES):
        raise RuleFileError(path, "?", f"{what} must give a list for each language ({', '.join(LANGUAGES)})", line)
    if not all(isinstance(v, list) and v and all(isinstance(w, str) for w in v) for v in value.values()):
        raise RuleFileError(path, "?", f"{what} must give a non-empty list of texts per language", line)
    return {lang: [str(w) for w in items] for lang, items in value.items()}


def _applies_when(path: Path, value: Any, line: int) -> tuple[dict[str, tuple[str, ...]], int]:
    if not isinstance(value, dict) or set(value) - _APPLIES_KEYS:
        raise RuleFileError(path, "?", f"applies_when may only hold {', '.join(sorted(_APPLIES_KEYS))}", line)
    words = _word_lists(path, value.get("words"), "applies_when.words", line)
    min_words = value.get("min_words", 2)
    if not isinstance(min_words, int) or min_words < 1:
        raise RuleFileError(path, "?", "applies_when.min_words must be a whole number of at least 1", line)
    chinese_words.add_words(words["zh"])
    return {lang: tuple(w.lower() for w in items) for lang, items in words.items()}, min_words


def _norms(path: Path, value: Any, line: int) -> dict[str, dict[str, list[str]]]:
    if not isinstance(value, dict) or "unknown" not in value:
        raise RuleFileError(path, "?", "norms must map jurisdictions to texts and include 'unknown'", line)
    unknown = set(value) - set(JURISDICTION_CODES)
    if unknown:
        raise RuleFileError(path, "?", f"unknown jurisdiction {', '.join(sorted(map(str, unknown)))}", line)
    return {code: _word_lists(path, texts, f"norms.{code}", line) for code, texts in value.items()}


def _pack_rule(path: Path, domain: str, row: Any, line: int) -> Rule:
    if not isinstance(row, dict):
        raise RuleFileError(path, "?", "each rule is a mapping", line)
    category = row.get("category")
    if category not in CATEGORIES:
        raise RuleFileError(path, str(row.get("id", "?")), f"unknown category {category!r}", line)
    try:
        rule = parse_rule(path, category, {k: v for k, v in row.items() if k != "category"})
    except RuleFileError as error:
        raise error.at(line) from None
    return Rule(**{**rule.__dict__, "pack": domain})


def load_pack(path: Path) -> DomainPack:
    """One pack file. Raises ``RuleFileError`` naming the file and the line at fault."""
    data, keys, rows = read_yaml(path)
    if not isinstance(data, dict):
        raise RuleFileError(path, "?", "a domain pack is a mapping with domain, label, applies_when and rules", 1)
    unknown = set(data) - _PACK_KEYS
    if unknown:
        key = sorted(map(str, unknown))[0]
        raise RuleFileError(path, "?", f"unknown key {', '.join(sorted(map(str, unknown)))}", keys.get(key, 1))
    domain = data.get("domain")
    if domain != path.stem:
        raise RuleFileError(path, "?", f"domain must be the file's name {path.stem!r}", keys.get("domain", 1))
    words, min_words = _applies_when(path, data.get("applies_when"), keys.get("applies_when", 1))
    if not isinstance(data.get("rules"), list) or not data["rules"]:
        raise RuleFileError(path, "?", "rules must be a non-empty list", keys.get("rules", 1))
    rules = tuple(_pack_rule(path, domain, row, row_line(rows, i)) for i, row in enumerate(data["rules"]))
    english = words.get("en", ())
    alternatives = "|".join(re.escape(w) for w in sorted(english, key=len, reverse=True))
    return DomainPack(
        domain=domain,
        label=_texts(path, data.get("label"), "label", keys.get("label", 1)),
        words=words,
        min_words=min_words,
        norms=_norms(path, data.get("norms"), keys.get("norms", 1)),
        rules=rules,
        source=path.name,
        _patterns={"en": re.compile(rf"(?<![A-Za-z])(?:{alternatives})(?![A-Za-z])", re.IGNORECASE)},
    )


def load_packs(directory: Path = PACKS_DIR, taken: Iterable[str] = ()) -> tuple[DomainPack, ...]:
    """Every ``*.yaml`` pack of ``directory``. Rule ids are unique across the packs and the
    ``taken`` ids (the rule files'). Raises ``RuleFileError`` for the first bad file."""
    seen = dict.fromkeys(taken, "rule_files")
    packs = []
    for path in sorted(directory.glob("*.yaml")):
        pack = load_pack(path)
        for rule in pack.rules:
            if rule.id in seen:
                raise RuleFileError(path, rule.id, f"id already used in {seen[rule.id]}")
            seen[rule.id] = path.name
        packs.append(pack)
    return tuple(packs)
