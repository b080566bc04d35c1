"""What a new operator found in the review's content: who said what, who agrees from which
field, what counts as a goal, when card-payment compliance applies, no repeated lines, one
language per document, no generic word in a list of specific kinds (seed 002 §6.2-§6.7)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from teamclaw.workflows.consolidation import quality_check
from teamclaw.workflows.debate import evaluate, respond
from teamclaw.workflows.document import parse_document
from teamclaw.workflows.review_rules import review
from tests.workflows.test_bilingual_review import EXPERTS, run, text_of

SAMPLES = Path(__file__).resolve().parents[2] / "runs" / "samples"

# Personal data on one line without privacy or retention rules: two domain findings on line 5,
# each of which the development expert supplements with the same comment.
ZH_CLINIC = """# 门诊预约

## 目标
- 减少患者排队时间。

## 功能需求
- 患者注册时填写姓名和手机号。
- 患者可以在线预约医生。

## 验收标准
- 当患者提交预约时，预期：系统在 2 秒内显示预约成功。
"""

EN_CLINIC = """# Clinic booking

## Goal
- Patients wait less at the front desk.

## Requirements
- Patients register with their name and phone number.
- Patients can book a doctor online.

## Acceptance criteria
- When a patient submits a booking, then the confirmation is shown within 2 s.
"""


@pytest.mark.parametrize("text", [ZH_CLINIC, EN_CLINIC])
def test_each_position_names_the_expert_who_took_it_and_appears_once(text):
    outcome = run(text)
    supplement = re.compile(r"这需要技术设计|This needs technical design")
    # an engineering note goes to the team, once, never to the owner as a question or a candidate
    assert not [c for c in outcome["candidates"] if supplement.search(c["summary"])]
    assert not supplement.search(outcome["final"])
    notes = [n for n in outcome["report"]["engineering_notes"] if supplement.search(n["note"])]
    assert len(notes) == 1, notes  # the same comment, one point
    assert notes[0]["experts"] == ["dev"]
    for candidate in outcome["candidates"]:
        seen = [(p["expert"], p["stance"], p["comment"], p["round"]) for p in candidate["positions"]]
        assert len(seen) == len(set(seen)), candidate["positions"]
        for position in candidate["positions"]:
            if supplement.search(position["comment"]):
                assert position["expert"] == "dev"
                assert position["label"] in ("开发专家", "Development expert")
    report = outcome["report"]
    noted = [d for d in report["decisions"] if supplement.search(d["problem"])]
    assert [(d["experts"], d["decision"]) for d in noted] == [(["dev"], "noted")]


NO_AI_EN = """# Leave requests

## Goal
- Employees ask for leave without paper forms.

## Requirements
- Employees submit a leave request with a start and an end date.
- Store managers approve or reject each request.
- Employees get a push notification when a request is decided.
"""

NO_AI_ZH = """# 请假申请

## 目标
- 员工不再填写纸质请假单。

## 功能需求
- 员工提交请假申请，填写开始和结束日期。
- 店长批准或驳回每一条申请。
- 申请处理后，员工收到推送通知。
"""


@pytest.mark.parametrize("text", [NO_AI_EN, NO_AI_ZH, text_of("en_planted"), text_of("zh_planted")])
def test_the_ai_expert_agrees_from_its_field_only_on_points_about_the_ai_feature(text):
    document = parse_document(text)
    reviews = {p: {"issues": review(document, p)} for p in EXPERTS}
    answer = evaluate("ai", reviews["ai"], {o: (f"review_{o}.json", reviews[o]) for o in EXPERTS if o != "ai"})
    if not reviews["ai"]["issues"]:  # no AI feature in the document: nothing to say
        assert answer["responses"] == []
    ai_lines = {i["location"]["line"] for i in reviews["ai"]["issues"]}
    for response in answer["responses"]:
        issue = next(i for p in EXPERTS for i in reviews[p]["issues"] if i["id"] == response["target_issue"])
        about_ai = issue["location"]["line"] in ai_lines or re.search(r"\bAI\b|智能|machine learning", issue["quote"])
        assert about_ai, (response["my_comment"], issue["problem"])
    others = {
        r["target_issue"]
        for r in answer["responses"]
        for p in EXPERTS
        for i in reviews[p]["issues"]
        if i["id"] == r["target_issue"] and i["rule"] in ("no_error_handling", "notification_failure_undefined")
    }
    assert not others


ZH_DRAFT = """# 诊所预约减少爽约

## 需求概述

减少爽约

## 项目概述

- 患者在线预约门诊
"""

EN_DRAFT = """# Fewer missed appointments

## Idea

Fewer missed appointments at the clinic

## What it is

- Patients book their appointments online
"""


@pytest.mark.parametrize("text", [ZH_DRAFT, EN_DRAFT])
def test_the_idea_or_overview_of_a_draft_is_its_goal(text):
    rules = {i["rule"] for i in review(parse_document(text), "pm")}
    assert "missing_goal" not in rules


@pytest.mark.parametrize(
    "heading", ["Idea", "需求概述", "项目概述", "Overview", "What it is", "Background", "目标", "Goal"]
)
def test_a_goal_heading_counts_only_when_it_holds_a_statement(heading):
    requirements = "## Requirements\n- Customers see their orders.\n"
    empty = f"# Orders\n\n## {heading}\n\n{requirements}"
    held = f"# Orders\n\n## {heading}\n\n- Customers stop calling support.\n\n{requirements}"
    assert "missing_goal" in {i["rule"] for i in review(parse_document(empty), "pm")}
    assert "missing_goal" not in {i["rule"] for i in review(parse_document(held), "pm")}


@pytest.mark.parametrize(
    "line",
    [
        "- Admins reconcile payments by hand every week.",
        "- Exports include the order's payment status.",
        "- 管理员每周手工核对支付记录。",
        "- 财务人员每月对账。",
    ],
)
def test_a_payment_mentioned_in_passing_is_not_a_card_payment(line):
    text = f"# Orders\n\n## Goal\n- Support gets fewer calls.\n\n## Requirements\n{line}\n"
    rules = {i["rule"] for i in review(parse_document(text), "domain")}
    assert "payment_without_compliance" not in rules


@pytest.mark.parametrize(
    "line",
    [
        "- Customers pay for the order by credit card.",
        "- The shop accepts card payments at checkout.",
        "- 挂号费通过微信支付在线支付。",
        "- 用户使用银行卡付款。",
    ],
)
def test_a_product_that_takes_card_payments_gets_the_compliance_finding(line):
    text = f"# Orders\n\n## Goal\n- Support gets fewer calls.\n\n## Requirements\n{line}\n"
    rules = {i["rule"] for i in review(parse_document(text), "domain")}
    assert "payment_without_compliance" in rules


def test_each_unresolved_item_appears_once():
    sample = (SAMPLES / "online_bookstore.md").read_text(encoding="utf-8")
    for text in (sample, text_of("zh_planted"), text_of("en_planted")):
        unresolved = run(text)["quality"]["unresolved"]
        assert unresolved
        assert len(unresolved) == len(set(unresolved)), unresolved
        bodies = [re.sub(r"^(?:lines? [\d, ]+|第 [\d、 ]+ 行)[:：]\s*", "", u) for u in unresolved]
        assert len(bodies) == len(set(bodies)), unresolved
    final = (
        "# Search\n\n## Requirements\n"
        "- Search returns results (proposed, to be confirmed: within 300 ms) and pages (proposed, to be confirmed: "
        "within 300 ms).\n"
        "- Export finishes (proposed, to be confirmed: within 300 ms).\n\n"
        "## Open points\n- Which data is kept?\n- Which data is kept?\n"
    )
    quality = quality_check(final, "# Search\n\n## Requirements\n- Search returns results.\n")
    assert quality["unresolved"] == [
        "lines 4, 5: proposed, not confirmed: (proposed, to be confirmed: within 300 ms)",
        "open point: Which data is kept?",
    ]
    zh = quality_check(
        "# 搜索\n\n## 功能需求\n- 搜索返回结果（建议值，待确认：不超过 300 毫秒）。\n"
        "- 导出完成（建议值，待确认：不超过 300 毫秒）。\n",
        "# 搜索\n\n## 功能需求\n- 搜索返回结果。\n",
    )
    assert zh["unresolved"] == ["第 4、5 行：建议值未确认：（建议值，待确认：不超过 300 毫秒）"]


ENGLISH_WORD = re.compile(r"[A-Za-z]{3,}")
ALLOWED = {"HIS", "API", "PIPL", "GDPR", "HIPAA", "PCI", "DSS", "UTC"}


def _english(text: str) -> list[str]:
    return [w for w in ENGLISH_WORD.findall(text) if w not in ALLOWED]


def test_the_debate_comments_of_a_chinese_document_are_chinese():
    outcome = run(text_of("zh_planted"))
    for candidate in outcome["candidates"]:
        for position in candidate["positions"]:
            assert not _english(position["comment"]), position
    assert any("坚持该意见（多数）" == p["comment"] for c in outcome["candidates"] for p in c["positions"])
    document = parse_document(text_of("zh_planted"))
    reviews = {p: {"issues": review(document, p)} for p in EXPERTS}
    evaluations = [
        evaluate(p, reviews[p], {o: (f"review_{o}.json", reviews[o]) for o in EXPERTS if o != p}) for p in EXPERTS
    ]
    for evaluation in evaluations:
        for response in evaluation["responses"]:
            assert not _english(response["my_comment"] + response["reasoning"]), response
    # a withdrawn issue gives its reason in the document's language
    mine = {"issues": [i for i in reviews["dev"]["issues"]][:1]}
    target = mine["issues"][0]["id"]
    objections = [
        {
            "expert": "Product manager" if p == "pm" else "Domain expert",
            "perspective": p,
            "responses": [
                {
                    "target_perspective": "dev",
                    "target_issue": target,
                    "stance": "challenge",
                    "my_comment": "不同意。",
                    "reasoning": "理由。",
                }
            ],
        }
        for p in ("pm", "domain")
    ]
    answer = respond("dev", mine, objections)
    assert answer["withdrawn_issues"]
    reason = answer["withdrawn_issues"][0]["reason"]
    assert not _english(reason), reason
    assert "产品经理" in reason and "领域专家" in reason


def test_the_consensus_words_of_an_english_document_stay_english():
    outcome = run(text_of("en_planted"))
    comments = {p["comment"] for c in outcome["candidates"] for p in c["positions"] if p["round"] == "respond"}
    assert "keeps it (majority)" in comments
    for candidate in outcome["candidates"]:
        for position in candidate["positions"]:
            assert not re.search(r"[\u4e00-\u9fff]", position["comment"]), position


@pytest.mark.parametrize(
    ("text", "expected", "generic"),
    [
        ("# 注册\n\n## 功能需求\n- 用户注册时填写个人信息和手机号。\n", "个人信息（手机号；", "个人信息、"),
        (
            "# Sign-up\n\n## Requirements\n- Users register with their personal data and email.\n",
            "(email;",
            "personal data,",
        ),
        ("# 注册\n\n## 功能需求\n- 系统保存用户的个人信息。\n", "个人信息（个人信息；", None),
        ("# Sign-up\n\n## Requirements\n- The system keeps the users' personal data.\n", "(personal data;", None),
    ],
)
def test_the_kinds_of_personal_data_list_only_the_specific_ones(text, expected, generic):
    issues = review(parse_document(text), "domain")
    privacy = next(i for i in issues if i["category"] == "personal_data")
    assert expected in privacy["problem"], privacy["problem"]
    if generic:
        assert generic not in privacy["problem"] + privacy["change"]["question"]
