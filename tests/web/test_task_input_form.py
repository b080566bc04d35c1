"""The task page's answer forms (``web.pages.tasks.TaskInputForm``, issue 32 item 5): an
interview answer, a chosen option or a decision the form refuses shows the task page again
with a 400, the reason next to that question in the page's language and every answer typed
kept; nothing is saved. Who may not see the task gets a 404 whatever the form holds."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from monitoring.models import Task, ToolConfirmation
from tests.web.page_forms import LANGUAGES, assert_refused

pytestmark = pytest.mark.django_db

QUESTIONS = [
    {"id": "q1", "text": "Who uses it?"},
    {"id": "q2", "text": "Which database?", "options": [{"key": "A", "text": "SQLite"}, {"key": "B", "text": "PG"}]},
]
ITEMS = [{"id": "d1", "kind": "change", "summary": "Export orders as CSV"}]

BAD_ANSWERS = [
    # (case, posted, field, reason in en, reason in zh, a typed value the page keeps)
    (
        "answer too long",
        {"answers.q1": "w" * 4001, "answers.q2": "kept answer"},
        "answers.q1",
        "at most 4000 characters",
        "不超过 4000 字符",
        "kept answer",
    ),
    (
        "option that is none of the question's",
        {"answers.q1": "shop staff", "choice.q2": "Z"},
        "choice.q2",
        "Select a valid choice",
        "选择一个有效的选项",
        "shop staff",
    ),
    (
        "answer with no words",
        {"answers.q1": "?!", "answers.q2": "kept answer"},
        "answers.q1",
        "holds no words",
        "没有任何文字",
        "kept answer",
    ),
]


def waiting_task(what: str, request: dict) -> tuple[Task, ToolConfirmation]:
    task = Task.objects.create(id="wait1", kind="task", workflow="requirement_interview", title="W", status="running")
    now = timezone.now()
    row = ToolConfirmation.objects.create(
        id=f"in-{what}",
        context_id="c",
        instance_id="i",
        role="main",
        task_id=task.id,
        tool=what,
        kind="input",
        args=request,
        created_at=now,
        expires_at=now + timedelta(minutes=10),
    )
    return task, row


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize(("case", "posted", "field", "en", "zh", "kept"), BAD_ANSWERS, ids=[r[0] for r in BAD_ANSWERS])
def test_a_bad_interview_answer_is_refused_next_to_its_question(
    page_client, builtin, language, case, posted, field, en, zh, kept
):
    task, row = waiting_task("interview", {"questions": QUESTIONS})
    response = page_client.post(
        f"/tasks/{task.id}/input/answers", {**posted, "input_id": row.id}, HTTP_ACCEPT_LANGUAGE=LANGUAGES[language]
    )
    assert_refused(response, field, en if language == "en" else zh)
    assert kept in response.content.decode()
    row.refresh_from_db()
    assert row.status == "pending" and not row.answer


@pytest.mark.parametrize("language", LANGUAGES)
def test_a_decision_outside_accept_or_reject_is_refused_next_to_its_point(page_client, builtin, language):
    task, row = waiting_task("decisions", {"items": ITEMS})
    response = page_client.post(
        f"/tasks/{task.id}/input/decisions",
        {"decision.d1": "maybe", "input_id": row.id},
        HTTP_ACCEPT_LANGUAGE=LANGUAGES[language],
    )
    assert_refused(response, "decision.d1", "Select a valid choice" if language == "en" else "选择一个有效的选项")
    row.refresh_from_db()
    assert row.status == "pending" and not row.answer


def test_an_answer_to_no_question_of_the_request_is_refused_and_nothing_is_saved(page_client, builtin):
    task, row = waiting_task("interview", {"questions": QUESTIONS})
    response = page_client.post(
        f"/tasks/{task.id}/input/answers", {"answers.q1": "staff", "answers.q9": "x", "input_id": row.id}
    )
    assert response.status_code == 400
    assert "answers.q9" in response.content.decode() and "staff" in response.content.decode()
    row.refresh_from_db()
    assert row.status == "pending" and not row.answer


def test_who_may_not_see_the_task_gets_a_404_whatever_the_form_holds(viewer_user, builtin):
    task, _row = waiting_task("interview", {"questions": QUESTIONS})
    client = Client()
    client.force_login(viewer_user)
    assert client.post(f"/tasks/{task.id}/input/answers", {"answers.q1": "w" * 4001}).status_code == 404
