"""Each expert's checklist, generated from the requirement-quality engine's rows (issue 27
item 9; seed 002 §6.2 review focus).

A model-backed expert (``model_review``) gets in its review request the checklist of its
perspective: the rule rows of the categories it owns (``review_rules.ENGINE_CATEGORIES``),
for the domain expert also the rows of the domain packs that apply to the document
(``quality_engine.packs_of``), and the whole-document rows of ``document_rules`` it owns. Each
item is written from its row, in the document's language: the rule id, the category and
severity as a reader sees them, what the row says (its suggestion, its first trigger word
standing for ``{match}``) and its first positive example. Nothing here is a hand-written copy
of a rule: adding a row adds its item.
"""

from __future__ import annotations

from dataclasses import dataclass

from teamclaw.workflows.document import RequirementDocument
from teamclaw.workflows.document_rules import DOCUMENT_RULES
from teamclaw.workflows.quality_engine import default_rules, packs_of
from teamclaw.workflows.quality_rules import Rule
from teamclaw.workflows.review_rules import ENGINE_CATEGORIES
from teamclaw.workflows.review_text import label, say, word

EXAMPLE_CHARS = 80
"""Longest example quoted in an item (characters)."""
STAND_INS = {"en": "…", "zh": "…"}


@dataclass(frozen=True)
class ChecklistItem:
    """One item: the row's ``rule`` id, taxonomy ``category``, ``severity``, what to check
    (``text``, in the document's language), an ``example`` of a line it fires on ("" when
    the row has none) and the ``source`` (rule file, pack file, or ``document_rules``)."""

    rule: str
    category: str
    severity: str
    text: str
    example: str
    source: str


class _StandIn(dict[str, str]):
    def __missing__(self, key: str) -> str:
        return "…"


def _first_word(rule: Rule, language: str) -> str:
    words = rule.trigger.words.get(language, ())
    return words[0] if words else "…"


def _rule_item(rule: Rule, language: str) -> ChecklistItem:
    values = _StandIn(match=_first_word(rule, language))
    examples = rule.examples.get(language, {}).get("positive", [])
    example = " / ".join(x.strip() for x in examples[0].splitlines() if x.strip())[:EXAMPLE_CHARS] if examples else ""
    source = f"pack_files/{rule.source}" if rule.pack else f"rule_files/{rule.source}"
    text = rule.suggestion[language].format_map(values)
    return ChecklistItem(rule.id, rule.category, rule.severity, text, example, source)


def _language(document: RequirementDocument) -> str:
    return "zh" if document.language == "zh" else "en"


def checklist(perspective: str, document: RequirementDocument) -> list[ChecklistItem]:
    """The checklist of ``perspective`` (``"dev"``, ``"pm"``, ``"ai"``, ``"domain"``) for
    ``document``, in its language: the engine's rows of the categories the perspective owns
    (rows that do not run in that language left out), the applicable domain packs' rows for
    ``domain``, then its ``DOCUMENT_RULES`` rows. An unknown perspective (a custom reviewer
    role) has none."""
    owned = ENGINE_CATEGORIES.get(perspective)
    if owned is None:
        return []
    language = _language(document)
    rules = default_rules()
    rows = [r for r in rules.rules if r.category in owned]
    if perspective == "domain":
        rows += [r for pack in packs_of(document, rules) for r in pack.rules]
    items = [_rule_item(r, language) for r in rows if language in r.languages]
    for row in DOCUMENT_RULES:
        if row.perspective == perspective:
            text = f"{row.message[language].format_map(_StandIn())} {row.suggestion[language].format_map(_StandIn())}"
            items.append(ChecklistItem(row.id, row.category, row.severity, text, "", "document_rules"))
    return items


def checklist_text(perspective: str, document: RequirementDocument) -> str:
    """The checklist as the lines of a review request ("" when there is none)::

    Checklist of the development expert (from the requirement-quality rules):
    - [number-without-unit] missing_unit, major: Give the unit of … e.g. "Uploads up to 20."
    """
    items = checklist(perspective, document)
    if not items:
        return ""
    language = _language(document)
    who = label(perspective, language)
    head = say(
        language,
        f"Checklist of the {who.lower()} (from the requirement-quality rules; give an issue the [id] it fits):",
        f"{who}的审查清单（由需求质量规则生成；问题符合某条时填写其 [id]）：",
    )
    lines = [head]
    for item in items:
        example = say(language, f' e.g. "{item.example}"', f"例：“{item.example}”") if item.example else ""
        shown = word(item.category, language)
        category = (
            item.category
            if shown == item.category
            else say(language, f"{item.category} ({shown})", f"{item.category}（{shown}）")
        )
        kind = f"{category}{say(language, ', ', '，')}{word(item.severity, language)}"
        lines.append(f"- [{item.rule}] {kind}{say(language, ': ', '：')}{item.text}{example}")
    return "\n".join(lines)


def rule_categories() -> dict[str, str]:
    """Every rule id a finding may name (the rule files', the domain packs' and
    ``DOCUMENT_RULES``') -> its taxonomy category."""
    rules = default_rules()
    rows = [*rules.rules, *(rule for pack in rules.packs for rule in pack.rules)]
    return {**{r.id: r.category for r in rows}, **{r.id: r.category for r in DOCUMENT_RULES}}
