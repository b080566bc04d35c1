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
    from_dev = [c for c in outcome["candidates"] if supplement.search(c["summary"])]
    assert len(from_dev) == 1, [c["summary"] for c in from_dev]  # the same comment, one point
    assert from_dev[0]["summary"].startswith(("开发专家", "Development expert")), from_dev[0]["summary"]
    assert {p["expert"] for p in from_dev[0]["positions"]} == {"dev"}
    for candidate in outcome["candidates"]:
        seen = [(p["expert"], p["stance"], p["comment"], p["round"]) for p in candidate["positions"]]
        assert len(seen) == len(set(seen)), candidate["positions"]
        for position in candidate["positions"]:
            if supplement.search(position["comment"]):
                assert position["expert"] == "dev"
                assert position["label"] in ("开发专家", "Development expert")
    report = outcome["report"]
    assert [d["experts"] for d in report["decisions"] if supplement.search(d["problem"])] == [["dev"]]

