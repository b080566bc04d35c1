"""What a new operator found walking the clinic idea in Chinese (issue 27 walkthrough): the
draft never splits an answer inside brackets, keeps the operator's numbered steps, puts a
rollout plan in its own section, the review flags a cut statement, the exclusive-actor check
compares the same action, and a contradiction quotes whole statements. Pure functions on the
offline interview; English alongside."""

from __future__ import annotations

import re

from teamclaw.workflows import ears
from teamclaw.workflows.clarify import entries_of, load_clarify_rules, needed_follow_ups
from teamclaw.workflows.ears_grammar import numbered_clauses
from teamclaw.workflows.interview import interview_result, interview_round, load_project_types, write_requirement
from teamclaw.workflows.quality_engine import check_text

CLINIC = "给社区诊所做一个网上预约挂号系统"
WALKED = {
    "goal": "A",
    "users": "C",
    "flow": "1. 病人在手机上选择科室、医生和时间段\n2. 系统发短信确认\n3. 病人到诊所报到",
    "data": "B",
    "quality": "系统要快，病人的信息要保密",
    "completion": "诊所护士长试用一周，没有问题就上线。",
}
WALKED_EN = {
    "goal": "A",
    "users": "C",
    "flow": "1. Patients choose a department, a doctor and a time on their phone\n2. The system must send a text"
    " message to confirm\n3. Patients check in at the clinic",
    "data": "B",
    "quality": "The booking page must be fast.",
    "completion": "Go live after a one-week pilot with the head nurse.",
}


def _walk(language: str, idea: str, texts: dict[str, str]) -> tuple[str, dict]:
    """The offline interview to its end, options picked by key ("A" where not given)."""
    kind = load_project_types()["new_system"]
    rounds: list[dict] = []
    for number in range(1, 7):
        plan = interview_round(kind, language, number, rounds)
        if not plan["questions"]:
            break
        answers = {q["id"]: texts.get(q["question_id"], "A" if len(q["options"]) > 1 else "")
                   for q in plan["questions"]}  # fmt: skip
        rounds.append({**plan, "answers": answers})
    result = interview_result(idea, kind, language, "high", rounds, plan)
    return write_requirement(result, kind)[0], result


def _requirements(document: str) -> list[str]:
    return re.findall(r"^- FR-\d{3}[：:] ?(.+)$", document, re.MULTILINE)


def _balanced(text: str) -> bool:
    return text.count("（") + text.count("(") == text.count("）") + text.count(")")


def test_an_option_is_never_split_at_a_comma_inside_its_brackets():
    document, _ = _walk("zh", CLINIC, WALKED)
    requirements = _requirements(document)
    assert all(_balanced(r) for r in requirements), requirements
    assert any("（敏感信息：需单独同意，查看的人更少）" in r for r in requirements)
    grammar = ears.load_grammar()["zh"]
    assert ears.clauses("还包括身份证号（需单独同意；查看的人更少），病历由医生填写；“是，否”两项", grammar) == [
        "还包括身份证号（需单独同意；查看的人更少）", "病历由医生填写", "“是，否”两项"]  # fmt: skip
    english, _ = _walk("en", "Build a web app for a clinic to take bookings", WALKED_EN)
    assert all(_balanced(r) for r in _requirements(english))
    assert any("(sensitive: separate consent, fewer people may see them)" in r for r in _requirements(english))


def test_the_operators_numbered_steps_keep_their_numbers_in_order():
    document, result = _walk("zh", CLINIC, WALKED)
    steps = [r for r in _requirements(document) if r.startswith("第 ")]
    assert steps == [
        "第 1 步：病人在手机上选择科室、医生和时间段。",
        "第 2 步：系统应发短信确认。",
        "第 3 步：病人到诊所报到。",
    ]
    ids = [r["id"] for r in result["requirements"] if r["source"].endswith("-flow")]
    assert ids == sorted(ids)
    english, _ = _walk("en", "Build a web app for a clinic to take bookings", WALKED_EN)
    assert [r.split(":")[0] for r in _requirements(english) if r.startswith("Step ")] == ["Step 1", "Step 2", "Step 3"]
    assert "Step 2: The system shall send a text message to confirm." in _requirements(english)
    # A figure opening a line is no step number.
    assert numbered_clauses("2 秒内打开\n1.5 秒内返回", ears.load_grammar()["zh"]) == [
        ("", "2 秒内打开"), ("", "1.5 秒内返回")]  # fmt: skip


def test_a_rollout_plan_is_its_own_section_not_system_requirements():
    document, result = _walk("zh", CLINIC, WALKED)
    assert not [r for r in _requirements(document) if "试用" in r or "上线" in r]
    assert result["plan"] == ["诊所护士长试用一周。", "没有问题就上线。"]
    plan = document.split("## 实施计划")[1].split("## ")[0]
    assert "- 诊所护士长试用一周。" in plan and "- 没有问题就上线。" in plan
    english, result_en = _walk("en", "Build a web app for a clinic to take bookings", WALKED_EN)
    assert result_en["plan"] == ["Go live after a one-week pilot with the head nurse."]
    assert "## Rollout plan" in english and not [r for r in _requirements(english) if "pilot" in r]


def test_a_statement_cut_inside_a_bracket_draws_a_finding():
    text = (
        "# 预约\n\n## 功能需求\n\n- FR-003：系统应满足：还包括身份证号或健康信息（敏感信息：需单独同意。\n"
        "- FR-004：系统应满足：查看的人更少）。\n- FR-005：手机浏览器（iOS 15 及以上）和电脑浏览器。\n"
    )
    assert {f.line for f in check_text(text) if f.rule == "unbalanced-bracket"} == {5, 6}
    english = (
        "# Booking\n\n## Requirements\n\n- FR-003: Also ID numbers (sensitive: separate consent.\n"
        "- FR-004: b) Nurses confirm.\n"
    )
    assert {f.line for f in check_text(english) if f.rule == "unbalanced-bracket"} == {5}


def test_who_uses_the_system_does_not_contradict_who_may_see_personal_data():
    for heading, users, only in (
        ("需求", "被服务的人、工作人员，以及管理工作人员账号的管理员", "只有本人和为其服务的工作人员可以查看"),
        ("Requirements", "The people served, the staff and an administrator who manages the staff's accounts",
         "Only the person it is about and the staff serving them may see it"),
    ):  # fmt: skip
        found = check_text(f"# Interview\n\n## {heading}\n\n- {users}\n- {only}\n")
        assert not [f for f in found if f.category == "contradiction"], heading
    document, _ = _walk("zh", CLINIC, WALKED)
    assert not [line for line in document.splitlines() if "两者不能同时成立" in line and "被服务的人" in line]
    # The same action on the same object by another actor still contradicts.
    same = check_text("# 排班\n\n## 需求\n\n- 只有管理员可以修改排班。\n- 医生可以修改排班。\n")
    assert {f.line for f in same if f.rule == "exclusive-actor-versus-other-actor"} == {5, 6}


def test_a_contradiction_quotes_each_statement_whole():
    def question(qid: str) -> dict:
        return {"id": f"r1-{qid}", "question_id": qid, "kind": "question", "text": qid, "section": "users",
                "category": "users", "options": []}  # fmt: skip

    answers = {"r1-a": "只有管理员可以修改排班", "r1-b": "医生可以修改排班，以及查看病人名单"}
    rounds = [{"round": 1, "style": "business", "questions": [question("a"), question("b")], "answers": answers}]
    (follow_up,) = needed_follow_ups(entries_of(rounds), "zh", load_clarify_rules())
    assert "“医生可以修改排班，以及查看病人名单”" in follow_up["text"]
    assert [o["withdraws"] for o in follow_up["options"]] == [
        "医生可以修改排班，以及查看病人名单",
        "只有管理员可以修改排班",
    ]
