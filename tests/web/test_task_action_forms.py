"""The task page's fork and cancel forms (``web.pages.tasks.ForkForm``, ``CancelForm``): a
bad input shows the task page again with a 400, the reason next to its field in the page's
language and what was typed; no task is forked or cancelled. Who may not fork or cancel is
refused as before."""

from __future__ import annotations

import pytest
from django.test import Client

from monitoring.models import Task
from tests.web.page_forms import LANGUAGES, assert_refused

pytestmark = pytest.mark.django_db

FORK_BAD_INPUTS = [
    # (case, posted, field, reason in en, reason in zh, a typed value the page keeps)
    ("step missing", {"from_step": ""}, "from_step", "whole number from 0 to 0", "0 到 0 之间的整数", ""),
    ("step not a number", {"from_step": "two"}, "from_step", "whole number from 0 to 0", "0 到 0 之间的整数", "two"),
    (
        "step past the end",
        {"from_step": "5"},
        "from_step",
        "whole number from 0 to 0",
        "0 到 0 之间的整数",
        'value="5"',
    ),
    (
        "prompt layer too long",
        {"from_step": "0", "prompt_enhancement": "p" * 2001},
        "prompt_enhancement",
        "at most 2000 characters",
        "不超过 2000 字符",
        "p" * 2001,
    ),
]


def ended_task() -> Task:
    return Task.objects.create(
        id="ended1",
        kind="task",
        workflow="requirement_review",
        title="Ended",
        status="completed",
        run_spec={"workflow": "requirement_review"},
    )


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize(
    ("case", "posted", "field", "en", "zh", "kept"), FORK_BAD_INPUTS, ids=[r[0] for r in FORK_BAD_INPUTS]
)
def test_a_bad_fork_is_refused_next_to_its_field(page_client, builtin, language, case, posted, field, en, zh, kept):
    task = ended_task()
    response = page_client.post(f"/tasks/{task.id}/fork", posted, HTTP_ACCEPT_LANGUAGE=LANGUAGES[language])
    assert_refused(response, field, en if language == "en" else zh)
    assert kept in response.content.decode()
    assert '<details class="card fork-task" open>' in response.content.decode()
    assert Task.objects.count() == 1


def test_who_may_not_see_the_task_gets_a_404_whatever_the_form_holds(viewer_user, builtin):
    task = ended_task()
    client = Client()
    client.force_login(viewer_user)
    assert client.post(f"/tasks/{task.id}/fork", {"from_step": "two"}).status_code == 404
    assert client.post(f"/tasks/{task.id}/cancel", {"reason": "r" * 301}).status_code == 404


@pytest.mark.parametrize("language", LANGUAGES)
def test_a_cancel_reason_too_long_is_refused_and_the_task_keeps_running(page_client, builtin, language):
    task = Task.objects.create(id="running1", kind="task", workflow="requirement_review", title="R", status="running")
    reason = "r" * 301
    response = page_client.post(
        f"/tasks/{task.id}/cancel", {"reason": reason}, HTTP_ACCEPT_LANGUAGE=LANGUAGES[language]
    )
    assert_refused(response, "reason", "at most 300 characters" if language == "en" else "不超过 300 字符")
    assert f'value="{reason}"' in response.content.decode()
    task.refresh_from_db()
    assert task.status == "running"
