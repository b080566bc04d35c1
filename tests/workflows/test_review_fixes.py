"""Fixes an operator asked for after a Chinese demo review and a clinic review (issue 27):
an out-of-scope section is exempt from every rule, a whole-document point is not shown as a
question on the title line, and a line that says there is no external system draws no
integration finding (the ``negation`` row key, as for personal data)."""

from __future__ import annotations

from pathlib import Path

import pytest

from teamclaw.workflows.consolidation import anchored_line
from teamclaw.workflows.document import out_of_scope, parse_document, reviewable
from teamclaw.workflows.quality_engine import check_text
from teamclaw.workflows.review_rules import review

DEMO = Path(__file__).resolve().parents[2] / "runs" / "samples" / "online_bookstore.zh-hans.md"
PERSPECTIVES = ("pm", "dev", "domain", "ai")


def _all_findings(text: str) -> list:
    document = reviewable(parse_document(text))
    return [f for p in PERSPECTIVES for f in review(document, p)]


@pytest.mark.parametrize("title", ["不在范围内", "非目标", "Out of scope", "Non-goals", "本期不包括"])
def test_an_out_of_scope_heading_is_read_from_the_data_file(title):
    assert out_of_scope(title)


def test_the_demo_sample_draws_no_finding_on_its_out_of_scope_line():
    text = DEMO.read_text(encoding="utf-8")
    line = next(n for n, t in enumerate(text.splitlines(), start=1) if "退货和退款" in t)
    found = _all_findings(text)
    assert found  # the demo still has findings above its out-of-scope section
    assert [f for f in found if f["location"]["line"] == line] == []


@pytest.mark.parametrize(
    "text",
    [
        "# 报名\n\n## 需求\n- 家长可以为孩子报名课程。\n\n## 本期不做\n"
        "- 课程退费和退款。\n- 系统调用教务系统接口同步报名。\n",
        "# Sign-up\n\n## Requirements\n- Parents can sign their child up for a course.\n\n## Out of scope\n"
        "- Refunds of course fees.\n- Sign-ups are synced with the school's ERP system quickly.\n",
    ],
)
def test_no_rule_fires_under_a_non_goals_heading(text):
    heading = next(n for n, t in enumerate(text.splitlines(), start=1) if "scope" in t or "不做" in t)
    assert [f["location"]["line"] for f in _all_findings(text) if f["location"]["line"] > heading] == []


def test_a_whole_document_point_is_not_placed_on_the_title_line():
    text = DEMO.read_text(encoding="utf-8")
    whole = [f for f in _all_findings(text) if f["rule"] == "no_error_handling"]
    assert whole and all(f["change"].get("scope") == "document" for f in whole)
    assert anchored_line(whole[0]) is None


@pytest.mark.parametrize(
    "text",
    [
        "# 工具\n\n## 需求\n- FR-016：系统应满足：不对接其他系统\n",
        "# 工具\n\n## 需求\n- 本期不接入任何第三方平台。\n",
        "# Tool\n\n## Requirements\n- The tool does not connect to any external system.\n",
    ],
)
def test_a_line_saying_there_is_no_external_system_draws_no_integration_failure(text):
    assert [f for f in check_text(text) if f.category == "integration_failure"] == []


def test_an_affirmed_integration_beside_a_negated_one_still_draws_integration_failure():
    text = "# 工具\n\n## 需求\n- 系统不对接财务系统，但调用公安接口核验身份。\n"
    assert [f.category for f in check_text(text) if f.category == "integration_failure"] == ["integration_failure"]
