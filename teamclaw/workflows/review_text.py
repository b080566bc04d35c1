"""What the review writes into a document, in the document's language (seed 002 §6.6/§6.7).

The section titles the consolidator may add, the experts' labels, and the marker that sets
an expert's proposed figure apart from the user's own words: nothing an expert proposed is
presented as the user's requirement until someone confirms it.
"""

from __future__ import annotations

import re

SECTION_TITLES: dict[str, dict[str, str]] = {
    "Acceptance criteria": {"en": "Acceptance criteria", "zh": "验收标准"},
    "Error handling": {"en": "Error handling", "zh": "异常处理"},
    "AI behaviour": {"en": "AI behaviour", "zh": "AI 功能要求"},
    "Privacy and compliance": {"en": "Privacy and compliance", "zh": "隐私与合规"},
    "Open points": {"en": "Open points", "zh": "待确认事项"},
}
"""Canonical (English) section key -> its title per language. Findings name the key."""

LABELS = {
    "dev": {"en": "Development expert", "zh": "开发专家"},
    "pm": {"en": "Product manager", "zh": "产品经理"},
    "ai": {"en": "AI expert", "zh": "AI专家"},
    "domain": {"en": "Domain expert", "zh": "领域专家"},
}

WORDS: dict[str, dict[str, str]] = {
    # consensus levels (seed 002 §6.4)
    "unanimous": {"zh": "一致"},
    "majority": {"zh": "多数"},
    "single": {"en": "raised by one expert", "zh": "单人提出"},
    "contested": {"zh": "有争议"},
    # severities
    "critical": {"zh": "严重"},
    "major": {"zh": "重要"},
    "minor": {"zh": "次要"},
    # issue categories
    "performance": {"zh": "性能"},
    "reliability": {"zh": "可靠性"},
    "scalability": {"zh": "容量"},
    "integration": {"zh": "系统集成"},
    "units": {"zh": "单位"},
    "scope": {"zh": "范围"},
    "acceptance": {"zh": "验收"},
    "users": {"zh": "用户"},
    "goals": {"zh": "目标"},
    "ambiguity": {"zh": "歧义"},
    "ai": {"zh": "AI"},
    "data": {"zh": "数据"},
    "evaluation": {"zh": "评估"},
    "compliance": {"zh": "合规"},
    "privacy": {"zh": "隐私"},
    "terminology": {"zh": "术语"},
    "time": {"zh": "时间"},
    # the requirement-quality engine's categories (docs/review-rules.md)
    "vague_term": {"zh": "模糊用语"},
    "missing_unit": {"zh": "缺少单位"},
    "undefined_term": {"zh": "术语未定义"},
    "escape_clause": {"zh": "逃避条款"},
    "absolute": {"zh": "绝对化表述"},
    "compound": {"zh": "复合需求"},
    "passive_no_actor": {"zh": "缺少执行者"},
    "untestable": {"zh": "不可测试"},
    "missing_error_handling": {"zh": "缺少异常处理"},
    "limit_without_overflow": {"zh": "上限未定处理"},
    "time_boundary": {"zh": "时间边界"},
    "role_permission_gap": {"zh": "权限缺口"},
    "personal_data": {"zh": "个人信息"},
    "notification_consent": {"zh": "通知同意"},
    "contradiction": {"zh": "前后矛盾"},
    "integration_failure": {"zh": "外部依赖失败"},
    "ai_without_evaluation": {"zh": "AI 未评估"},
    "domain_rule_gap": {"zh": "领域规则缺口"},
}
"""Field values (consensus levels, severities, categories) as a reader sees them, per
language; the values themselves stay English in the JSON."""

PROPOSED = re.compile(r"\(proposed, to be confirmed: [^()]*\)|（建议值，待确认：[^（）]*）")
"""A proposed figure as written by ``proposed``."""


def say(language: str, en: str, zh: str) -> str:
    """``zh`` for a Chinese document, ``en`` otherwise."""
    return zh if language == "zh" else en


def proposed(language: str, text: str) -> str:
    """``text`` marked as an expert's proposal awaiting confirmation (seed 002 principle 4:
    the user's requirement is the baseline): "(proposed, to be confirmed: …)" /
    "（建议值，待确认：…）". Parentheses inside ``text`` are dropped so the marker stays one span."""
    inner = re.sub(r"[()（）]", "", text).strip()
    return say(language, f" (proposed, to be confirmed: {inner})", f"（建议值，待确认：{inner}）")


def confirm(text: str) -> str:
    """``text`` with its proposal markers turned into plain parentheses (confirmed by the operator)."""
    text = re.sub(r"\(proposed, to be confirmed: ([^()]*)\)", r"(\1)", text)
    return re.sub(r"（建议值，待确认：([^（）]*)）", r"（\1）", text)


def label(perspective: str, language: str) -> str:
    """The expert's human label in ``language`` (the perspective key for custom reviewers)."""
    return LABELS.get(perspective, {}).get(language, perspective)


def section_title(key: str, language: str) -> str:
    """The title of the added section ``key`` in ``language`` (``key`` itself when unknown)."""
    return SECTION_TITLES.get(key, {}).get(language, key)


def word(value: str, language: str) -> str:
    """A field value (``WORDS``) in ``language``; the value itself when there is no translation."""
    return WORDS.get(value, {}).get(language, value)


SUMMARIES: dict[str, dict[str, str]] = {
    "review": {
        "en": "{count} issue(s) from the {expert}'s perspective",
        "zh": "从{expert}的角度发现 {count} 个问题",
    },
    "evaluate": {
        "en": "{count} comment(s) on {reviews} other review(s)",
        "zh": "对另外 {reviews} 份评审提出 {count} 条评价",
    },
    "respond": {
        "en": "{count} final issue(s), {withdrawn} withdrawn, {new} new from the debate",
        "zh": "最终保留 {count} 个问题，撤回 {withdrawn} 个，博弈中新增 {new} 个",
    },
}
"""The one-line summary of each expert round's artifact (seed 002 §6.2-§6.4), per language."""


def summary(kind: str, language: str, **values: object) -> str:
    """The summary line of round ``kind`` (``SUMMARIES``) in ``language`` (English unless "zh"),
    with ``expert`` (a perspective key) shown as the expert's label in that language."""
    language = "zh" if language == "zh" else "en"
    if "expert" in values:
        shown = label(str(values["expert"]), language)
        values = {**values, "expert": shown.lower() if language == "en" else shown}
    return SUMMARIES[kind][language].format(**values)
