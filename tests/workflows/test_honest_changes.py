"""A change put to the operator in confirm mode always shows what it changes, and accepting it
writes exactly that; a section of which nothing can be derived from the text ("文档没有验收
标准" over lines the engine flags) is an open point, never a change claimed as written
(issue 27 walkthrough). Chinese and English."""

from __future__ import annotations

import pytest

from tests.workflows.test_bilingual_review import run

VAGUE = {
    "zh": ("# 预约\n\n## 用户\n- 病人\n\n## 功能需求\n- 系统要快。\n- 数据要安全。\n", "验收标准"),
    "en": ("# Booking\n\n## Users\n- Patients\n\n## Requirements\n- The system must be fast.\n- Data must be secure.\n",
           "acceptance criteria"),
}  # fmt: skip


@pytest.mark.parametrize("language", ["zh", "en"])
def test_an_acceptance_section_nothing_can_be_derived_for_is_an_open_point_not_a_change(language):
    text, about = VAGUE[language]
    candidates = run(text)["candidates"]
    assert all(c["proposal"].strip() for c in candidates if c["kind"] == "change"), candidates
    (acceptance,) = [c for c in candidates if about in c["summary"].lower()]
    assert acceptance["kind"] == "open_point" and acceptance["proposal"].strip()
    accepted = run(text, {c["id"]: "accept" for c in candidates})
    counts = accepted["report"]["counts"]
    assert counts["adopted"] == 0 and accepted["final"].count("\n## ") == text.count("\n## ") + 1  # + open points
    assert all(question in accepted["final"] for question in acceptance["proposal"].splitlines())
    (decided,) = [d for d in accepted["report"]["decisions"] if about in d["problem"].lower()]
    assert decided["decision"] == "open_point"
