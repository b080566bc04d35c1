"""A new operator's clinic interview (issue 27 items 4-6): an answer that negates an earlier
one (data not collected against a name and phone number typed in; no other system against a
text-message confirmation) draws a follow-up naming both and, left open, neither is a
requirement; a follow-up that an earlier answer (a picked option) already settles is not
asked again; a recommended option never contradicts what the operator said; the quality
check's consistency fails on a contradiction the engine finds. Driven through the offline
interview as tests/workflows/test_interview_draft.py does."""

from __future__ import annotations

import re

from teamclaw.workflows.consolidation import quality_check
from teamclaw.workflows.interview import interview_result, interview_round, load_project_types, write_requirement
from tests.workflows.test_interview_clarify import CLINIC, plan_all

FLOW = "患者选择医生和时间段，填写姓名和手机号提交，收到短信确认，到诊所报到"


def _draft(texts: dict[str, str]) -> tuple[str, dict, list[dict]]:
    rounds, final = plan_all("new_system", "zh", texts)
    kind = load_project_types()["new_system"]
    result = interview_result(CLINIC, kind, "zh", "high", rounds, final)
    return write_requirement(result, kind)[0], result, [q for r in rounds for q in r["questions"]]


def _requirements(draft: str) -> list[str]:
    return re.findall(r"^- FR-\d{3}[：:] ?(.+)$", draft, re.MULTILINE)


def test_an_answer_that_negates_an_earlier_one_draws_a_follow_up_and_left_open_is_no_requirement():
    # Round 2: the privacy follow-up on the flow is answered "不收集这些信息", and "不对接其他系统".
    draft, _result, asked = _draft({"flow": FLOW, "flow-f1": "B", "integration": "A"})
    texts = [q["text"] for q in asked if q["kind"] == "follow_up"]
    assert any("填写姓名和手机号提交" in t and "不收集这些信息" in t for t in texts), texts
    assert any("收到短信确认" in t and "不对接其他系统" in t for t in texts), texts
    requirements = " ".join(_requirements(draft))
    for words in ("填写姓名和手机号", "不收集这些信息", "收到短信确认", "不对接其他系统"):
        assert words not in requirements, (words, requirements)
    points = draft.split("## 待确认事项")[1].split("## 澄清记录")[0]
    assert "填写姓名和手机号提交" in points and "不收集这些信息" in points
    assert "收到短信确认" in points and "不对接其他系统" in points
    assert "患者选择医生和时间段" in requirements  # what no answer contradicts stays


def test_a_follow_up_that_a_picked_option_settles_is_not_asked_nor_any_twice():
    # Round 1's option A on data states purpose, consent, retention and access.
    _, _, asked = _draft({"flow": FLOW, "data": "A", "integration": "B"})
    follow_ups = [q["text"] for q in asked if q["kind"] == "follow_up"]
    assert not any("同意依据" in t for t in follow_ups), follow_ups
    assert len(follow_ups) == len(set(follow_ups))


def test_a_typed_answer_that_negates_the_data_asked_is_caught_too():
    kind = load_project_types()["new_system"]
    first = interview_round(kind, "zh", 1, [])
    answers = {q["id"]: "" for q in first["questions"]}
    answers.update({"r1-flow": FLOW, "r1-data": "A"})
    rounds = [{**first, "answers": answers}]
    second = interview_round(kind, "zh", 2, rounds)
    answers = {q["id"]: "" for q in second["questions"]}
    answers["r2-edge_cases"] = "患者预约时不用填写任何个人信息"
    third = interview_round(kind, "zh", 3, [*rounds, {**second, "answers": answers}])
    texts = [q["text"] for q in third["questions"] + third["pending_follow_ups"] if q["kind"] == "follow_up"]
    assert any("只记录姓名和手机号" in t and "不用填写任何个人信息" in t for t in texts), texts


def test_the_recommended_option_never_contradicts_what_the_operator_said():
    kind = load_project_types()["new_system"]
    first = interview_round(kind, "zh", 1, [])

    def integration(flow: str) -> dict:
        answers = {q["id"]: "" for q in first["questions"]}
        answers["r1-flow"] = flow
        rounds = [{**first, "answers": answers}]
        for number in (2, 3):
            plan = interview_round(kind, "zh", number, rounds)
            found = [q for q in plan["questions"] if q["question_id"] == "integration"]
            if found:
                return found[0]
            rounds.append({**plan, "answers": {q["id"]: "" for q in plan["questions"]} | {"x": "y"}})
        raise AssertionError("integration never asked")

    needs_sms = integration(FLOW)
    assert needs_sms["recommended"] != "A", needs_sms  # "不对接其他系统" against 收到短信确认
    assert integration("患者选择医生和时间段，提交后在页面上看到预约结果")["recommended"] == "A"


def test_consistency_does_not_pass_when_the_engine_finds_a_contradiction():
    final = (
        "# 预约挂号\n\n## 功能需求\n\n- FR-001：当患者提交后，系统应发送短信确认。\n"
        "- FR-002：系统应允许患者选择医生和时间段。\n\n## 质量与约束\n\n- FR-003：系统应满足：不对接其他系统。\n\n"
        "## 验收标准\n\n- FR-004：工作人员在试运行中完整走通主要流程。\n"
    )
    report = quality_check(final, final)
    consistency = next(c for c in report["checks"] if c["name"] == "consistency")
    assert not consistency["passed"] and not report["passed"]
    assert any("不对接其他系统" in f for f in consistency["findings"]), consistency
    assert any("不对接其他系统" in u for u in report["unresolved"])


def test_a_persons_step_keeps_its_actor_and_a_budget_is_a_constraint():
    draft, _, _ = _draft({"flow": FLOW, "data": "A", "integration": "B", "constraints": "预算 10 万元"})
    requirements = _requirements(draft)
    assert "患者的步骤：患者到诊所报到。" in requirements, requirements
    assert "约束：预算 10 万元。" in requirements
    assert not any(r.startswith("系统应满足：到诊所报到") or "系统应满足：预算" in r for r in requirements)
