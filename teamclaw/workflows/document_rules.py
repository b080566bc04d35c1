"""The review's rules that read the document as a whole (seed 002 §6.2), as rows.

The requirement-quality engine (``quality_engine``, rule files in ``rule_files/``) judges
each line. What it cannot see on one line lives here: a section or a kind of statement that
is missing altogether (no acceptance criteria, no goal, no user, no error handling, an AI
feature without a fallback or a data source, card payments without compliance), a role
without permissions in a document that has no permission section, an acceptance criterion
that cannot be tested, and two wording rules of the product manager (an undecided line, a
"should" that leaves a duty open). Each row names its owner (``perspective``), a taxonomy
``category`` (docs/review-rules.md), a severity, the finder that says where it applies, and
its message, suggestion and change per language. A point about the whole document is
anchored on the title (its line and its exact text), so every finding has a line and a quote.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from teamclaw.workflows.document import RequirementDocument, Statement
from teamclaw.workflows.review_findings import Finding, clip, q
from teamclaw.workflows.review_vocabulary import (
    ACCEPTANCE_HEADINGS,
    AI_DATA,
    AI_FALLBACK,
    AI_TERMS,
    CONDITION,
    CONTRACT,
    ERROR_HANDLING,
    GOAL_HEADINGS,
    MEASURE,
    PAYMENT,
    PAYMENT_COMPLIANCE,
    PERMISSION,
    PERMISSION_HEADINGS,
    RESULT,
    ROLE_HEADINGS,
    SHOULD,
    UNDECIDED,
    UNTESTABLE,
    USER_STORY,
    USERS,
    VAGUE_QUALITY,
)

Where = list[tuple[int, str, str, dict[str, str]]]
"""Where a row applies: ``(line, section, quote, values for the texts)`` per finding."""


def testable(text: str) -> bool:
    """True when an acceptance criterion is testable (seed 002 §6.7 闭环性): it names an
    observable condition and an expected result, or a measurable quantity, and no vague
    judgement ("works well", "用户满意")."""
    if UNTESTABLE.search(text) or (VAGUE_QUALITY.search(text) and not MEASURE.search(text)):
        return False
    return bool((CONDITION.search(text) and RESULT.search(text)) or MEASURE.search(text))


def _title(document: RequirementDocument) -> Where:
    """The whole document, anchored on its first heading (or its first line)."""
    if document.headings:
        _, title, line = document.headings[0]
        return [(line, "", document.lines[line - 1].strip() if line <= len(document.lines) else title, WHOLE)]
    first = next((i for i, text in enumerate(document.lines, start=1) if text.strip()), 1)
    return [(first, "", document.lines[first - 1].strip() if document.lines else "", WHOLE)]


WHOLE = {"scope": "document"}
"""The values of a point about the whole document: its change carries ``scope: document``, so
it is shown as about the whole document, never as a question on the title line."""


def title_anchor(document: RequirementDocument) -> tuple[int, str]:
    """``(line, exact text)`` of the line a point about the whole document is anchored on."""
    line, _, quote, _ = _title(document)[0]
    return line, quote


def _at(statement: Statement, **values: str) -> tuple[int, str, str, dict[str, str]]:
    return statement.number, statement.section, statement.text[:240], values


def _in_section(statement: Statement, keywords: tuple[str, ...]) -> bool:
    return any(k in statement.section.lower() for k in keywords)


def _no_acceptance_section(document: RequirementDocument) -> Where:
    return [] if document.has_section(*ACCEPTANCE_HEADINGS) else _title(document)


def _untestable_criteria(document: RequirementDocument) -> Where:
    return [
        _at(s, quote=clip(s.text, 80))
        for s in document.statements
        if _in_section(s, ACCEPTANCE_HEADINGS) and not testable(s.text)
    ]


def _goal_stated(document: RequirementDocument) -> bool:
    """True when a goal heading (``GOAL_HEADINGS``) holds at least one statement, in its own
    text or in a subsection of it (the document's title is not a section)."""
    headings = document.headings
    for index, (level, title, line) in enumerate(headings):
        if (index == 0 and level == 1) or not any(k in title.lower() for k in GOAL_HEADINGS):
            continue
        end = next((n for lv, _, n in headings[index + 1 :] if lv <= level), None)
        if any(s.number > line and (end is None or s.number < end) for s in document.statements):
            return True
    return False


def _no_goal(document: RequirementDocument) -> Where:
    return [] if _goal_stated(document) else _title(document)


def _no_users(document: RequirementDocument) -> Where:
    return _title(document) if document.statements and not document.mentions(USERS) else []


def _role_name(text: str) -> str:
    name = re.split(r"[：:，,（(]| - | who | that ", text, maxsplit=1)[0].strip()
    return clip(name, 40)


def _roles_without_permissions(document: RequirementDocument) -> Where:
    if document.has_section(*PERMISSION_HEADINGS):
        return []
    return [
        _at(s, role=_role_name(s.text))
        for s in document.statements
        if _in_section(s, ROLE_HEADINGS) and not PERMISSION.search(s.text)
    ]


def _undecided(document: RequirementDocument) -> Where:
    return [
        _at(s, match=m.group(0), quote=s.text[:100]) for s in document.statements if (m := UNDECIDED.search(s.text))
    ]


GRANT = re.compile(r"(?<![A-Za-z])(?:only|not|cannot|allowed|permitted)(?![A-Za-z])", re.IGNORECASE)
"""Words beside "may" that make it grant or refuse a permission ("only admins may export,
staff may not") rather than leave a duty optional."""


def weak_word(statement: Statement) -> str | None:
    """The first word of ``statement`` that leaves open whether it is required ("should",
    "could", "may" ...), or None: none, the statement also says "must" (``CONTRACT``), it is
    undecided (``UNDECIDED``, its own rule), or the word is a "may" that grants a permission
    (beside "only"/"not"/"allowed", or in a permissions or roles section: "Shop admins: may
    see and export orders"), where "must" would turn the right into a duty."""
    if CONTRACT.search(statement.text) or UNDECIDED.search(statement.text):
        return None
    granting = _in_section(statement, PERMISSION_HEADINGS + ROLE_HEADINGS) or bool(GRANT.search(statement.text))
    words = (m.group(0) for m in SHOULD.finditer(statement.text))
    return next((w for w in words if not (w.lower() == "may" and granting)), None)


def _weak_wording(document: RequirementDocument) -> Where:
    return [_at(s, match=w) for s in document.statements if (w := weak_word(s)) is not None]


def _no_error_handling(document: RequirementDocument) -> Where:
    return _title(document) if document.statements and not document.mentions(ERROR_HANDLING) else []


def _first(document: RequirementDocument, pattern: re.Pattern[str], unless: re.Pattern[str]) -> Where:
    """The first statement ``pattern`` finds, when no statement of the document says ``unless``."""
    found = next((s for s in document.statements if pattern.search(s.text)), None)
    return [_at(found)] if found and not document.mentions(unless) else []


@dataclass(frozen=True)
class DocumentRule:
    """One row: see the module docstring. ``change`` holds per-language texts under
    ``question`` / ``lines`` (formatted with the finder's values) and fixed keys."""

    id: str
    perspective: str
    category: str
    severity: str
    where: Callable[[RequirementDocument], Where]
    message: dict[str, str]
    suggestion: dict[str, str]
    change: dict[str, Any] = field(default_factory=lambda: {"action": "open_point"})


DOCUMENT_RULES: tuple[DocumentRule, ...] = (
    DocumentRule(
        "no_error_handling", "dev", "missing_error_handling", "major", _no_error_handling,
        {"en": "The document never says what happens when something fails.",
         "zh": "文档没有说明任何操作失败时的处理。"},
        {"en": "Add error handling requirements: what the user sees, what is retried, what is logged.",
         "zh": "补充异常处理要求：用户看到什么、哪些操作重试、记录哪些信息。"},
        {"action": "open_point", "question": {
            "en": "When an operation fails, what does the user see, what is retried and what is logged?",
            "zh": "操作失败时用户看到什么？哪些操作会重试？记录哪些信息？"}},
    ),
    DocumentRule(
        "missing_acceptance_criteria", "pm", "untestable", "major", _no_acceptance_section,
        {"en": "There are no acceptance criteria, so nobody can tell when the work is done.",
         "zh": "文档没有验收标准，无法判断工作何时算完成。"},
        {"en": "Add an 'Acceptance criteria' section with one testable criterion (condition and expected result) "
               "per requirement.",
         "zh": "增加“验收标准”一节，每条需求对应一条可测试的标准（可观察的条件和预期结果）。"},
        # The question is asked instead when no criterion follows from the text (consolidation.nothing_to_write).
        {"action": "append_section", "section": "Acceptance criteria", "criteria": True, "lines": [],
         "question": {"en": "For each requirement, under which condition is it tested and what result is expected?",
                      "zh": "每条需求在什么条件下验收？预期看到什么结果？"}},
    ),
    DocumentRule(
        "untestable_acceptance_criterion", "pm", "untestable", "major", _untestable_criteria,
        {"en": "This acceptance criterion has no observable condition and expected result, so no test can pass or "
               "fail it.",
         "zh": "这条验收标准没有可观察的条件和预期结果，无法据此判定测试通过与否。"},
        {"en": "Rewrite it as 'When <condition>, then <expected result>' with a measurable result.",
         "zh": "改写为“当……时，预期：……”，并给出可度量的结果。"},
        {"action": "open_point", "question": {
            "en": "How is {quoted} verified: under which condition, with which expected result?",
            "zh": "{quoted}如何验证：在什么条件下，预期什么结果？"}},
    ),
    DocumentRule(
        "missing_goal", "pm", "untestable", "minor", _no_goal,
        {"en": "The document does not say what business goal the work serves.", "zh": "文档没有说明要达成的业务目标。"},
        {"en": "Add a short 'Goal' section: the problem, who has it and how success is measured.",
         "zh": "增加“目标”一节：要解决的问题、谁遇到这个问题、如何衡量成功。"},
        {"action": "open_point", "question": {"en": "What business goal does this serve, and how is success measured?",
                                              "zh": "这项需求服务于什么业务目标？如何衡量成功？"}},
    ),
    DocumentRule(
        "missing_users", "pm", "role_permission_gap", "major", _no_users,
        {"en": "No user or customer is named, so the value to anyone is unclear.",
         "zh": "文档没有指明用户，价值归属不清。"},
        {"en": "Name the users (roles or personas) and what each needs.", "zh": "写明用户（角色）以及各自的需要。"},
        {"action": "open_point", "question": {"en": "Who are the users of this feature?",
                                              "zh": "这个功能的用户是谁？"}},
    ),
    DocumentRule(
        "role_without_permissions", "pm", "role_permission_gap", "major", _roles_without_permissions,
        {"en": "'{role}' is a user role, but what it may see and do is not stated.",
         "zh": "“{role}”是一个用户角色，但没有说明其可查看、可操作的范围。"},
        {"en": "State each role's permissions: what it can see and change, and what it cannot.",
         "zh": "为每个角色写明权限：可以查看和修改什么，不可以做什么。"},
        {"action": "open_point", "question": {"en": "What may '{role}' see and do, and what not?",
                                              "zh": "“{role}”可以查看和操作哪些内容？哪些不可以？"}},
    ),
    DocumentRule(
        "undecided_requirement", "pm", "escape_clause", "major", _undecided,
        {"en": "'{match}' leaves this requirement undecided.", "zh": "“{match}”使这条需求悬而未决。"},
        {"en": "Decide it: state what is required, or move it out of scope.", "zh": "做出决定：写明要求，或移出范围。"},
        {"action": "open_point", "question": {"en": "Decide: {quote}", "zh": "请决定：{quote}"}},
    ),
    DocumentRule(
        "weak_wording", "pm", "escape_clause", "minor", _weak_wording,
        {"en": "'{match}' makes it unclear whether this is required.", "zh": "“{match}”使人不清楚这是否为必须。"},
        {"en": "Use 'must' if it is required; otherwise mark it optional.",
         "zh": "如果是必须的，写“必须”；否则标为可选。"},
        {"action": "replace", "old": "{match}", "new": {"en": "must", "zh": "必须"}, "strengthens": True},
    ),
    DocumentRule(
        "ai_without_fallback", "ai", "ai_without_evaluation", "major",
        lambda document: _first(document, AI_TERMS, AI_FALLBACK),
        {"en": "Nothing says what happens when the AI is wrong, unsure or unavailable.",
         "zh": "没有说明 AI 出错、把握不足或不可用时怎么办。"},
        {"en": "Define a fallback: a confidence threshold below which a human decides, and the behaviour when the "
               "model is down.",
         "zh": "定义兜底方案：置信度低于阈值时由人工决定，以及模型不可用时的行为。"},
        {"action": "open_point", "question": {
            "en": "What happens when the AI is wrong, unsure or unavailable: who decides then?",
            "zh": "AI 出错、把握不足或不可用时怎么办？此时由谁决定？"}},
    ),
    DocumentRule(
        "ai_without_data", "ai", "ai_without_evaluation", "minor", lambda document: _first(document, AI_TERMS, AI_DATA),
        {"en": "The AI feature's data source (training or context data) is not named.",
         "zh": "没有说明 AI 功能使用的数据来源（训练数据或上下文数据）。"},
        {"en": "Name the data the AI uses and who owns it.", "zh": "写明 AI 使用哪些数据，以及数据归谁所有。"},
        {"action": "open_point", "question": {"en": "Which data does the AI feature learn from or use?",
                                              "zh": "AI 功能基于哪些数据训练或运行？"}},
    ),
    DocumentRule(
        "payment_without_compliance", "domain", "personal_data", "critical",
        lambda document: _first(document, PAYMENT, PAYMENT_COMPLIANCE),
        {"en": "Payments are handled but there is no audit trail or payment-card compliance requirement.",
         "zh": "需求涉及支付，但没有审计记录和支付合规方面的要求。"},
        {"en": "Require an audit log of every payment event and PCI-DSS compliant card handling (card data never "
               "stored by the product).",
         "zh": "要求每笔支付事件写入审计日志，支付由持牌支付机构处理，系统不存储银行卡信息。"},
        {"action": "open_point", "question": {
            "en": "Who processes the card payments (a PCI-DSS compliant provider?), and which payment events are "
                  "kept in an audit log?",
            "zh": "支付由哪家持牌支付机构处理？哪些支付事件需要写入审计日志？"}},
    ),
)  # fmt: skip
"""The rows, in the order each expert reports them."""


def _text(value: Any, language: str, values: dict[str, str]) -> Any:
    """A per-language text of a row formatted with ``values``; other values as they are."""
    if isinstance(value, dict) and set(value) == {"en", "zh"}:
        value = value[language]
    return value.format_map(_Blank(values)) if isinstance(value, str) else value


class _Blank(dict[str, str]):
    def __missing__(self, key: str) -> str:
        return ""


def _finding(rule: DocumentRule, document: RequirementDocument, at: tuple[int, str, str, dict[str, str]]) -> Finding:
    line, section, quote, values = at
    language = "zh" if document.language == "zh" else "en"
    values = {"quoted": q(language, values.get("quote", "")), **values}
    change = {key: _text(value, language, values) for key, value in rule.change.items()}
    if values.get("scope") == "document":
        change["scope"] = "document"
    if change.get("criteria"):  # criteria are written from these lines as they read after consolidation
        change["from_lines"] = [s.number for s in requirement_statements(document)[:20]]
    return Finding(
        rule.id, rule.category, rule.severity, _text(rule.message, language, values),
        _text(rule.suggestion, language, values), line, section, quote, change,
    )  # fmt: skip


def document_findings(document: RequirementDocument, perspective: str) -> list[Finding]:
    """The findings of ``perspective``'s rows (``DOCUMENT_RULES``) on ``document``."""
    return [
        _finding(rule, document, at)
        for rule in DOCUMENT_RULES
        if rule.perspective == perspective
        for at in rule.where(document)
    ]


REQUIREMENT_SECTIONS = ("requirement", "feature", "story", "stories", "scope", "functional", "需求", "功能", "故事")
NOT_REQUIREMENT_SECTIONS = ("out of scope", "non-goal", "background", "不包括", "背景")


def requirement_statements(document: RequirementDocument) -> list[Statement]:
    """What the user asks for: statements with 'must/shall/will/...', user stories, and every
    statement under a requirements/features heading (not under 'out of scope')."""
    return [
        s
        for s in document.statements
        if not _in_section(s, NOT_REQUIREMENT_SECTIONS + ACCEPTANCE_HEADINGS)
        and (CONTRACT.search(s.text) or USER_STORY.search(s.text) or _in_section(s, REQUIREMENT_SECTIONS))
    ]
