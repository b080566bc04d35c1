"""False alarms on clean lines (issue 27): precise lines that a naive checker flags draw no finding."""

from __future__ import annotations

from pathlib import Path

from teamclaw.workflows.quality_engine import check_text
from teamclaw.workflows.quality_eval import evaluate, read_corpus

TRAPS = Path(__file__).parents[1] / "data" / "review_clean_traps"
HELDOUT2 = Path(__file__).parents[1] / "data" / "review_heldout2"


def test_the_tricky_clean_documents_draw_no_finding_on_any_clean_line():
    documents = read_corpus(TRAPS)
    assert {d.name for d in documents} == {"library-card-zh", "shuttle-booking-en"}
    score = evaluate(documents)
    assert score.clean_lines >= 40
    assert score.alarms == []


def test_a_parent_viewing_their_own_childs_records_does_not_contradict_teachers_only_viewing_photos():
    text = (HELDOUT2 / "kindergarten-pickup-zh.md").read_text(encoding="utf-8")
    lines = {f.line for f in check_text(text) if f.rule == "exclusive-actor-versus-other-actor"}
    assert not lines & {30, 41}
    same_object = "## 规则\n- 只有本班老师和园长能查看接送人照片。\n- 家长可以查看接送人照片。\n"
    assert {f.line for f in check_text(same_object) if f.rule == "exclusive-actor-versus-other-actor"} == {2, 3}


CORPUS = Path(__file__).parents[1] / "data" / "review_corpus"
HELDOUT = Path(__file__).parents[1] / "data" / "review_heldout"


def _findings(folder: Path, name: str) -> list:
    return check_text((folder / f"{name}.md").read_text(encoding="utf-8"))


def test_a_line_introducing_a_role_draws_no_finding_but_an_only_rule_written_into_it_still_does():
    # "财务：审核退费并执行打款" and "Customer: a person with a repeat prescription on file" say who someone is
    assert not [f for f in _findings(CORPUS, "kids-coding-course-zh") if f.line in (7, 8, 9)]
    assert not [f for f in _findings(CORPUS, "prescription-refill-en") if f.line in (7, 8, 9)]
    # "买家、卖家：……小程序仅限本校师生使用" reserves the app for one group: still compared
    contradictions = [f for f in _findings(HELDOUT, "secondhand-market-zh") if f.category == "contradiction"]
    assert 7 in {f.line for f in contradictions}


def test_a_line_of_bold_text_alone_is_a_heading_and_draws_no_finding():
    lines = {f.line for f in _findings(HELDOUT2, "kindergarten-pickup-zh")}
    assert not lines & {10, 16, 22, 29}  # **US-2 临时委托接送** ...


def test_a_glossary_line_is_a_definition_and_draws_no_finding():
    text = (
        "# 会员\n\n## 1. 术语\n- VIP 会员：近 12 个月消费满 5000 元的会员。\n"
        "- 爽约：预约后未在就诊时间前 15 分钟内签到。\n\n"
        "## 2. 需求\n- VIP 会员每月可领取 1 张 20 元优惠券。\n"
    )
    assert not [f for f in check_text(text) if f.line in (4, 5, 8)]
