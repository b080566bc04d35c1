"""Each whole-document row of ``document_rules.DOCUMENT_RULES`` fires on its positive example
and not on its negative one, in English and in Chinese, with a taxonomy category, a line and
the exact text of that line (docs/review-rules.md; seed 002 §6.2)."""

from __future__ import annotations

import pytest

from teamclaw.workflows.document import parse_document
from teamclaw.workflows.document_rules import DOCUMENT_RULES, document_findings
from teamclaw.workflows.quality_rules import CATEGORIES

BASE_EN = (
    "# Orders\n\n## Goal\n- Shop admins reconcile payments faster.\n\n## Users\n- Shop admins: may see and export "
    "orders.\n\n## Requirements\n- Shop admins can export the orders of a month.\n- When the export fails, the admin "
    "sees an error and can retry.\n\n## Acceptance criteria\n- When an admin exports 3 orders, then a file with 3 "
    "rows is downloaded.\n"
)
BASE_ZH = (
    "# 订单导出\n\n## 目标\n- 店铺管理员更快核对收入。\n\n## 用户\n- 店铺管理员：可以查看和导出订单。\n\n## 功能需求\n"
    "- 店铺管理员可以导出一个月的订单。\n- 导出失败时，管理员看到错误提示并可以重试。\n\n## 验收标准\n"
    "- 当管理员导出 3 个订单时，预期：下载一个包含 3 行的文件。\n"
)
# rule id -> (what turns the clean base document into a positive example: old text, new text; no old
# text: the new text is the whole example), per language
POSITIVE: dict[str, dict[str, tuple[str, str]]] = {
    "no_error_handling": {
        "en": ("- When the export fails, the admin sees an error and can retry.\n", ""),
        "zh": ("- 导出失败时，管理员看到错误提示并可以重试。\n", ""),
    },
    "missing_acceptance_criteria": {"en": ("## Acceptance criteria", "## Notes"), "zh": ("## 验收标准", "## 备注")},
    "untestable_acceptance_criterion": {
        "en": ("then a file with 3 rows is downloaded", "it works well"),
        "zh": ("预期：下载一个包含 3 行的文件", "用户满意"),
    },
    "missing_goal": {"en": ("## Goal\n- Shop admins reconcile payments faster.\n", ""),
                     "zh": ("## 目标\n- 店铺管理员更快核对收入。\n", "")},
    "missing_users": {"en": ("", "# Export\n\n## Requirements\n- The system exports the orders of a month.\n"),
                      "zh": ("", "# 导出\n\n## 功能需求\n- 系统导出一个月的订单。\n")},
    "role_without_permissions": {"en": (": may see and export orders", ""), "zh": ("：可以查看和导出订单", "")},
    "undecided_requirement": {"en": ("of a month.", "of a month (TBD)."),
                              "zh": ("一个月的订单。", "一个月的订单（待定）。")},
    "weak_wording": {"en": ("Shop admins can export", "Shop admins should export"),
                     "zh": ("店铺管理员可以导出", "店铺管理员最好导出")},
    "ai_without_fallback": {"en": ("of a month.", "of a month; AI ranks them."),
                            "zh": ("一个月的订单。", "一个月的订单，由 AI 排序。")},
    "ai_without_data": {"en": ("of a month.", "of a month; AI ranks them."),
                        "zh": ("一个月的订单。", "一个月的订单，由 AI 排序。")},
    "payment_without_compliance": {"en": ("of a month.", "of a month and pay by credit card."),
                                   "zh": ("一个月的订单。", "一个月的订单，并用银行卡支付。")},
}  # fmt: skip


def test_every_row_has_an_example_and_a_taxonomy_category():
    assert {rule.id for rule in DOCUMENT_RULES} == set(POSITIVE)
    assert all(rule.category in CATEGORIES for rule in DOCUMENT_RULES)


@pytest.mark.parametrize("language", ["en", "zh"])
@pytest.mark.parametrize("rule", DOCUMENT_RULES, ids=lambda rule: rule.id)
def test_each_row_fires_on_its_example_and_not_on_the_clean_document(rule, language):
    base = BASE_EN if language == "en" else BASE_ZH
    old, new = POSITIVE[rule.id][language]
    assert old in base
    positive = base.replace(old, new) if old else new
    found = [f for f in document_findings(parse_document(positive), rule.perspective) if f.rule == rule.id]
    assert found, positive
    lines = positive.splitlines()
    for finding in found:
        assert finding.category == rule.category
        text = lines[finding.line - 1].strip()
        assert finding.quote in (text, text.removeprefix("- ")[:240]), (finding.line, finding.quote)
        assert finding.problem and finding.suggestion
    clean = [f for f in document_findings(parse_document(base), rule.perspective) if f.rule == rule.id]
    assert not clean, [(f.line, f.problem) for f in clean]
