"""Leftovers a new operator found in the interview's draft (issue 27 item 6): the served people
named in the operator's own word, an option's text kept whole, and a person's own step in
English too."""

from __future__ import annotations

import re

from teamclaw.workflows import ears
from teamclaw.workflows.interview import interview_result, load_project_types, write_requirement
from tests.workflows.test_interview_clarify import CLINIC, plan_all

ZH = {
    "goal": "让居民在网上预约挂号，不用到诊所排队",
    "users": "B",  # 被服务的人（如顾客）和工作人员两类，权限不同
    "flow": "患者选择医生和时间段，提交后到诊所报到",
    "data": "A",
    "quality": "95% 的页面在 2 秒内打开",
}
EN = {
    "goal": "Residents book appointments online instead of phoning.",
    "users": "B",  # The people served (e.g. customers) and the staff, with different rights
    "flow": "The patient picks a doctor and a time, then the patient checks in at the desk",
    "data": "A",
    "quality": "Pages open within 2 seconds for 95% of requests.",
}


def _requirements(language: str, answers: dict[str, str], idea: str) -> list[str]:
    rounds, final = plan_all("new_system", language, answers)
    kind = load_project_types()["new_system"]
    draft = write_requirement(interview_result(idea, kind, language, "high", rounds, final), kind)[0]
    return re.findall(r"^- FR-\d{3}[：:] ?(.+)$", draft, re.MULTILINE)


def test_the_draft_calls_the_served_people_by_the_operators_own_word():
    zh = _requirements("zh", ZH, CLINIC)
    assert "系统应满足：居民和工作人员两类，权限不同。" in zh
    assert not [r for r in zh if "被服务的人" in r]
    en = _requirements("en", EN, "Build an online booking system for a community clinic")
    assert "The system shall satisfy: Residents and the staff, with different rights." in en
    assert not [r for r in en if "people served" in r]


def test_a_picked_options_text_is_never_cut_into_fragments_without_their_subject():
    zh = _requirements("zh", ZH, CLINIC)
    assert "系统应满足：权限不同。" not in zh
    assert "系统应满足：仅用于预约。" not in zh
    assert any(r.startswith("系统应满足：只记录姓名和手机号，仅用于预约，") for r in zh)
    en = _requirements("en", EN, "Build an online booking system for a community clinic")
    assert not [r for r in en if r.endswith("(e.g.") or r.startswith("The system shall satisfy: customers)")]


def test_a_persons_own_step_keeps_its_actor_in_english_as_in_chinese():
    grammar = ears.load_grammar()["en"]
    assert (
        ears.ears("the patient checks in at the desk", grammar)
        == "Step of the patient: the patient checks in at the desk."
    )
    assert ears.ears("Owners can book a walk", grammar) == "The system shall let owners book a walk."
    assert ears.ears("The patient is notified by SMS", grammar).startswith("The system shall satisfy:")
    en = _requirements("en", EN, "Build an online booking system for a community clinic")
    assert any(r.startswith("Step of the patient: the patient picks a doctor") for r in en)
    zh = ears.load_grammar()["zh"]
    assert ears.ears("患者到诊所报到", zh) == "患者的步骤：患者到诊所报到。"
