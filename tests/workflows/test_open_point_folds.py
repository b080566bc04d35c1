"""Open points that ask the same thing are folded into one (issue 27): an interview question
and a review point of the same category (interview_files/open_point_folds.yaml, tested row by
row), a whole-document acceptance question with the per-line "…如何验收" points, never two
categories; the folded point lists once in the final document and an answer to it is written
into every line it came from."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from teamclaw.workflows.consolidation import consolidate
from teamclaw.workflows.open_point_folds import FOLDS_FILE, FoldFileError, fold, load_folds
from teamclaw.workflows.revision import revise

ROWS = yaml.safe_load(FOLDS_FILE.read_text(encoding="utf-8"))["folds"]


def _review(ident: str, category: str, question: str, line: int | None = None) -> dict:
    return {"id": ident, "question": question, "line": line, "source": "review", "category": category}


def _interview(ident: str, coverage: str, question: str) -> dict:
    return {"id": ident, "question": question, "line": None, "source": "interview", "category": coverage}


@pytest.mark.parametrize("row", ROWS, ids=[r["coverage"] for r in ROWS])
def test_each_row_folds_its_interview_question_with_its_review_point(row):
    review = {**_review("c-1", row["category"], "review?"), "topic": row.get("topic", "")}
    points = [review, _interview("q-1", row["coverage"], "interview?")]
    [folded] = fold(points)
    assert folded["ids"] == ["c-1", "q-1"] and folded["sources"] == ["review", "interview"]
    assert folded["questions"] == ["review?", "interview?"] and folded["question"] == "review?"


def test_the_issue_27_questions_fold_in_chinese_and_in_english():
    zh = [
        _review("c-1", "missing_error_handling", "操作失败时用户看到什么？哪些操作会重试？记录哪些信息？"),
        _interview("q-1", "edge_cases", "出问题时用户应该看到什么？"),
    ]
    en = [
        _review("c-1", "missing_error_handling", "When an operation fails, what does the user see?"),
        _interview("q-2", "edge_cases", "What happens when something is full, cancelled, late or fails?"),
    ]
    assert [p["ids"] for p in fold(zh)] == [["c-1", "q-1"]]
    assert [p["ids"] for p in fold(en)] == [["c-1", "q-2"]]


def test_different_categories_and_different_lines_are_not_folded():
    points = [
        _review("c-1", "missing_error_handling", "失败时怎么办？"),
        _review("c-2", "personal_data", "手机号保存多久？"),
        _interview("q-1", "quality", "系统要多快？"),  # no row: never folds
        _review("c-3", "vague_term", "“快”是多快？", line=4),
        _review("c-4", "vague_term", "“好看”指什么？", line=5),
        _review("c-5", "untestable", "第 4 行如何验收？", line=4),
    ]
    assert [p["ids"] for p in fold(points)] == [["c-1"], ["c-2"], ["q-1"], ["c-3"], ["c-4"], ["c-5"]]


def test_the_same_category_on_the_same_line_folds_and_folding_twice_changes_nothing():
    points = [_review("c-1", "vague_term", "“快”是多快？", 4), _review("c-2", "vague_term", "多快算快？", 4)]
    once = fold(points)
    assert [p["ids"] for p in once] == [["c-1", "c-2"]] and once[0]["line"] == 4
    assert [p["ids"] for p in fold(once)] == [["c-1", "c-2"]]


def test_a_folds_file_with_an_unknown_category_is_refused_naming_file_and_row(tmp_path: Path):
    (tmp_path / "coverage.yaml").write_text(Path(FOLDS_FILE.with_name("coverage.yaml")).read_text(encoding="utf-8"))
    bad = tmp_path / "open_point_folds.yaml"
    bad.write_text("folds:\n  - {coverage: edge_cases, category: missing_error_handling}\n"
                   "  - {coverage: edge_cases, category: speed}\n")  # fmt: skip
    with pytest.raises(FoldFileError, match=r"open_point_folds.yaml row 2"):
        load_folds(bad)


ZH = "# 预约\n\n## 功能需求\n\n- 系统要快。\n- 页面要好看。\n- 居民可以在线预约。\n"


def _issue(ident: str, category: str, change: dict, line: int = 1) -> dict:
    return {"id": ident, "category": category, "severity": "major", "location": {"line": line},
            "problem": f"问题 {ident}", "quote": "", "consensus_level": "single", "change": change}  # fmt: skip


ACCEPTANCE = "怎样确认这次改动是有效的？"


def _acceptance_review() -> tuple[str, dict]:
    issues = [
        _issue("i1", "untestable", {"action": "open_point", "scope": "document", "question": ACCEPTANCE}),
        _issue("i2", "untestable", {"action": "append_section", "section": "Acceptance criteria",
                                    "from_lines": [5, 6], "criteria": True}, line=5),
        _issue("i3", "personal_data", {"action": "open_point", "scope": "document", "question": "保存哪些个人信息？"}),
    ]  # fmt: skip
    return consolidate(ZH, {"development": {"final_issues": issues}}, [])


def test_several_acceptance_points_fold_into_one_listed_once_with_all_their_lines():
    final, report = _acceptance_review()
    points = report["open_points"]
    acceptance = [p for p in points if p.get("topic") == "acceptance"]
    assert len(acceptance) == 1, [p["question"] for p in points]
    assert acceptance[0]["lines"] == [5, 6] and acceptance[0]["ids"] == ["criterion-5", "criterion-6"]
    # a whole-document question of the same category about another subject stays apart
    assert [p["question"] for p in points if p["category"] == "untestable"].count(ACCEPTANCE) == 1
    assert [p["category"] for p in points].count("personal_data") == 1
    listed = final.split("## 待确认事项", 1)[1]
    ask = "如何验收：在什么条件下，应观察到什么结果？"
    entry = f"“系统要快”{ask} “页面要好看”{ask}（第 5、6 行）"
    assert listed.count(entry) == 1 and listed.count("如何验收") == 2


def test_the_interview_acceptance_question_folds_with_the_per_line_acceptance_points():
    _, report = _acceptance_review()
    criteria = [p for p in report["open_points"] if p.get("topic") == "acceptance"]
    points = [*criteria, _interview("q-1", "completion", "怎样确认这次改动是有效的？")]
    [folded] = fold(points)
    assert folded["ids"] == ["criterion-5", "criterion-6", "q-1"] and folded["lines"] == [5, 6]
    assert folded["sources"] == ["review", "interview"]


def test_an_answer_to_a_folded_point_is_written_into_every_line_it_came_from():
    final, report = _acceptance_review()
    [point] = [p for p in report["open_points"] if p.get("topic") == "acceptance"]
    answered = {**point, "answer": "首屏加载时间的 P95 不超过 2 秒。", "answered_at": "2026-12-06"}
    revised, revision = revise(final, [answered], "zh")
    lines = revised.splitlines()
    assert lines[4].endswith("首屏加载时间的 P95 不超过 2 秒。（运营方答复，2026-12-06）")
    assert lines[5].endswith("首屏加载时间的 P95 不超过 2 秒。（运营方答复，2026-12-06）")
    assert revision["answers"][0]["placed"] == "line" and revision["resolved"] == 1
    listed = revised.split("## 待确认事项", 1)[1]
    assert "如何验收" not in listed and ACCEPTANCE in listed  # answered: its entry leaves; the other stays
