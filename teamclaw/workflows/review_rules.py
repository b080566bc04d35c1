"""What the offline reviewers find in a requirement document (seed 002 §6.2 review focus).

Each expert reports the findings of its own categories: the requirement-quality engine's
(``quality_engine``, one rule row per line rule in ``rule_files/``; ``ENGINE_CATEGORIES``
says which expert owns which category) and the rows of ``document_rules`` that read the
document as a whole (``DOCUMENT_RULES``: missing acceptance criteria, goal, users or error
handling, roles without permissions, undecided and optional wording, AI features without a
fallback or data, card payments without compliance). Every finding carries a taxonomy
``category`` (docs/review-rules.md), ``location.line`` and the exact ``quote``.

- ``dev`` (development expert, role architect): feasibility, performance, risk.
- ``pm`` (product manager): goals, users, scenarios, acceptance, wording.
- ``ai`` (AI expert): AI features without an evaluation target, a fallback or a data source.
- ``domain`` (domain expert): personal data under the law the text implies, notifications,
  times, terms, the rules of the domain.

What a finding says is in the document's language (``RequirementDocument.language``). A
finding's ``change`` says how the consolidator could apply it: ``replace`` (rewrite words in
the line), ``append_section`` (add requirements), ``scope_reduction`` (weaken or drop what the
user asked for: never adopted, seed 002 merge rule 3) or ``open_point`` (needs the owner).
"""

from __future__ import annotations

import re
from typing import Any

from teamclaw.workflows.document import RequirementDocument, reviewable
from teamclaw.workflows.document_rules import document_findings, requirement_statements, testable
from teamclaw.workflows.quality_engine import check_document, pack_rule_ids
from teamclaw.workflows.review_findings import Finding
from teamclaw.workflows.review_text import PROPOSED
from teamclaw.workflows.review_vocabulary import MEASURE, UNDECIDED

__all__ = ["UNDECIDED", "acceptance_criterion", "requirement_statements", "review", "testable"]

PERSPECTIVES: dict[str, dict[str, Any]] = {
    "dev": {
        "label": "Development expert",
        "focus": "technical feasibility, architecture, performance, risk",
        "affinity": set(),
    },
    "pm": {
        "label": "Product manager",
        "focus": "business goals, user value, scenario completeness, acceptance",
        "affinity": set(),
    },
    "ai": {
        "label": "AI expert",
        "focus": "reasonable use of AI, AI capability limits, evaluation, fallbacks",
        "affinity": set(),
    },
    "domain": {
        "label": "Domain expert",
        "focus": "domain compliance, industry norms, terminology",
        "affinity": set(),
    },
}
ROLE_PERSPECTIVE = {"architect": "dev", "pm": "pm", "ai_expert": "ai", "domain_expert": "domain"}


def perspective_of(role: str) -> str:
    """The review perspective key of a role (custom reviewer roles use their own slug)."""
    return ROLE_PERSPECTIVE.get(role, role)


def label_of(perspective: str) -> str:
    return PERSPECTIVES.get(perspective, {}).get("label", perspective)


_EN_MODAL = re.compile(
    r"^(?P<who>(?:\S+\s+){0,5}?\S+?)\s+"
    r"(?:must|shall|can|will|should|may|is able to|are able to|needs? to|wants? to|has to|have to)"
    r"\s+(?!not\b|never\b)(?P<what>.+)$",
    re.I,
)
"""An actor of at most six words, a modal, the action: "Shop admins need to export ...". A
negated modal ("must not delete") is no action a test performs, so it does not match."""
_EN_CLAUSE = re.compile(r"\b(?:who|that|which|if|when|whose)\b", re.I)
"""Words that make an "actor" a clause ("Users who can log in ..."): no actor then."""
_ZH_MODAL = re.compile(r"^(?P<who>[^，,：:]{1,12}?)(?:必须|需要|应当|可以|能够|可在|可)(?P<what>.+)$")


def acceptance_criterion(text: str, language: str) -> str | None:
    """A testable acceptance criterion for the requirement ``text`` (seed 002 §6.6 细化, §6.7
    闭环性): an observable condition and an expected result, not the requirement copied; None
    when the line names no actor and action the expected result could follow from (the
    consolidation then asks the owner, never writes a template)."""
    text = text.strip().rstrip(".。")
    measured = MEASURE.search(PROPOSED.sub("", text))
    marks = PROPOSED.findall(text)
    if language == "zh":
        match = _ZH_MODAL.match(text)
        if not match:
            return None
        who, what = match.group("who").strip(), match.group("what").strip()
        result = f"{measured.group(0)}的要求在每次测试中均满足" if measured else f"操作无报错完成，结果对{who}可见"
        if marks:
            result = "达到" + marks[0] + "，且操作无报错完成"
        return f"给定{who}，当{who}在测试环境中{what}时，预期：{result}。"
    match = _EN_MODAL.match(text)
    if not match or _EN_CLAUSE.search(match.group("who")):
        return None
    # The whole action, purpose and all: cutting "so ..." could drop a second requirement.
    who, what = match.group("who").strip(), PROPOSED.sub("", match.group("what")).strip()
    result = (
        f"the {measured.group(0)} target is met in every run"
        if measured
        else "the action completes without an error and its result is visible to them"
    )
    if marks:
        result = "the target " + marks[0].strip() + " is met in every run"
    return f"Given {who[:1].lower() + who[1:]}, when they {what} in the test environment, then {result}."


ENGINE_CATEGORIES: dict[str, tuple[str, ...]] = {
    "dev": ("missing_unit", "limit_without_overflow", "missing_error_handling", "integration_failure", "absolute"),
    "pm": ("vague_term", "untestable", "compound", "escape_clause", "passive_no_actor", "role_permission_gap",
           "contradiction"),
    "ai": ("ai_without_evaluation",),
    "domain": ("personal_data", "notification_consent", "time_boundary", "undefined_term", "domain_rule_gap"),
}  # fmt: skip
"""The requirement-quality engine's categories (docs/review-rules.md) each expert reports
(seed 002 §6.2 review focus): every category has exactly one owner."""
for _perspective, _categories in ENGINE_CATEGORIES.items():
    PERSPECTIVES[_perspective]["affinity"] |= set(_categories)


def _owner(finding: Finding, packs: frozenset[str]) -> str:
    """The expert who reports an engine finding: the domain expert for a domain pack's rule
    (seed 002 §6.2 领域专家: 行业规范), else the owner of its category (``ENGINE_CATEGORIES``)."""
    if finding.rule in packs:
        return "domain"
    return next((p for p, categories in ENGINE_CATEGORIES.items() if finding.category in categories), "")


def review(document: RequirementDocument, perspective: str) -> list[dict[str, Any]]:
    """The findings of ``perspective`` as ``review_*.json`` issue dicts (ids ``<perspective>-N``;
    seed 002 §6.2), written in the document's language: the rows of ``document_rules`` it owns,
    then the engine's findings it reports (``_owner``: its ``ENGINE_CATEGORIES``, and every
    domain pack's rule for the domain expert), each point (line, category, rule)
    once. An unknown perspective has none."""
    if perspective not in ENGINE_CATEGORIES or not reviewable(document).statements:
        return []  # nothing to review (document.nothing_to_review): no finding about a skeleton
    packs = pack_rule_ids()
    engine = [f.as_finding() for f in check_document(document)]
    engine = [f for f in engine if _owner(f, packs) == perspective]
    findings = [*document_findings(document, perspective), *engine]
    return [finding.as_dict(index, perspective) for index, finding in enumerate(findings)]
