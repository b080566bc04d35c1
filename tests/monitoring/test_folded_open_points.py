"""The outcome panel and the API list an interview question and a review point that ask the
same thing once (issue 27: "出问题时用户应该看到什么？" beside the missing_error_handling
rule's "操作失败时用户看到什么？…"), in Chinese and in English, with both origins; other
categories stay apart; an answer to the folded point counts for it."""

from __future__ import annotations

import json

import pytest
from django.utils import timezone

from monitoring.models import Artifact, OpenPointAnswer, Task
from monitoring.outcome import open_points

pytestmark = pytest.mark.django_db

QUESTIONS = {
    "zh": ("操作失败时用户看到什么？哪些操作会重试？记录哪些信息？", "出问题时用户应该看到什么？", "系统要多快？"),
    "en": ("When an operation fails, what does the user see?",
           "What happens when something is full, cancelled, late or fails?", "How fast must it be?"),
}  # fmt: skip


def _task(language: str) -> Task:
    review, interview, quality = QUESTIONS[language]
    task = Task.objects.create(id=f"t-fold-{language}", kind="task", title="Review", status="completed")
    report = {"language": language, "open_points": [
        {"id": "c-0000000001", "issue_ids": ["i1"], "question": review, "line": None,
         "source": "review", "category": "missing_error_handling"}]}  # fmt: skip
    result = {"language": language, "unanswered": [interview, quality], "answers": [
        {"question": interview, "category": "edge_cases"}, {"question": quality, "category": "quality"}]}  # fmt: skip
    for name, content in (("consolidation_report.json", report), ("interview_result.json", result)):
        Artifact.objects.create(task=task, name=name, content=json.dumps(content, ensure_ascii=False),
                                created_at=timezone.now())  # fmt: skip
    return task


@pytest.mark.parametrize("language", ["zh", "en"])
def test_an_interview_question_and_a_review_point_of_one_category_are_listed_once(language):
    points = open_points(_task(language))
    assert [p["ids"] for p in points] == [["c-0000000001", "q-1"], ["q-2"]]
    folded = points[0]
    assert folded["sources"] == ["review", "interview"] and folded["question"] == QUESTIONS[language][0]
    assert folded["questions"] == list(QUESTIONS[language][:2])


def test_an_answer_given_to_the_folded_point_answers_it():
    task = _task("zh")
    OpenPointAnswer.objects.create(task=task, point_id="c-0000000001", question="q", answer="提示失败原因，重试 3 次。",
                                   answered_at=timezone.now())  # fmt: skip
    folded, other = open_points(task)
    assert folded["answer"] == "提示失败原因，重试 3 次。" and other["answer"] is None


@pytest.mark.parametrize(("language", "origins", "also"), [
    ("zh-hans", "访谈与评审都提出了此问题", "同一问题的其他问法："),
    ("en", "asked by the interview and by the review", "Also asked as:"),
])  # fmt: skip
def test_the_panel_shows_a_folded_point_once_with_both_origins_and_its_other_question(language, origins, also):
    from django.template.loader import render_to_string
    from django.utils import translation

    task = _task("zh")
    folded = open_points(task)[0]
    with translation.override(language):
        html = render_to_string(
            "monitoring/_open_point.html", {"point": folded, "task": task, "outcome_language": "zh"}
        )
    assert origins in html and also in html and QUESTIONS["zh"][1] in html
    assert html.count("open-point card") == 1
