"""The context inspector's instruction and snapshot forms (``web.pages.contexts``): an empty
or too long input answers the result fragment with a 400 and the reason in the page's
language; nothing is recorded. A context the user may not see is a 404 whatever the form holds."""

from __future__ import annotations

import pytest
from django.test import Client
from django.utils import timezone

from monitoring.models import ExecutionContext, Snapshot, Task
from tests.web.page_forms import LANGUAGES, field_error

pytestmark = pytest.mark.django_db

BAD_INPUTS = [
    # (case, action, posted, field, reason in en, reason in zh)
    ("instruction missing", "instructions", {"text": "  "}, "text", "Write the instruction first", "请先写下指令"),
    (
        "instruction too long",
        "instructions",
        {"text": "i" * 2001},
        "text",
        "at most 2000 characters",
        "不超过 2000 字符",
    ),
    ("label too long", "snapshots", {"label": "l" * 301}, "label", "at most 300 characters", "不超过 300 字符"),
]


def running_context(user) -> ExecutionContext:
    task = Task.objects.create(id="t1", kind="task", workflow="generic", title="T", status="running", created_by=user)
    return ExecutionContext.objects.create(
        id="c1",
        task=task,
        instance_id="main-1",
        role="main",
        status="executing",
        created_at=timezone.now(),
        updated_at=timezone.now(),
    )


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize(("case", "action", "posted", "field", "en", "zh"), BAD_INPUTS, ids=[r[0] for r in BAD_INPUTS])
def test_a_bad_input_is_refused_and_nothing_recorded(
    page_client, staff_user, language, case, action, posted, field, en, zh
):
    context = running_context(staff_user)
    response = page_client.post(
        f"/live/contexts/{context.id}/{action}", posted, HTTP_ACCEPT_LANGUAGE=LANGUAGES[language]
    )
    assert response.status_code == 400
    assert (en if language == "en" else zh) in field_error(response, field)
    assert not Snapshot.objects.exists()


def test_who_may_not_see_the_context_gets_a_404_whatever_the_form_holds(staff_user, viewer_user):
    context = running_context(staff_user)
    client = Client()
    client.force_login(viewer_user)
    assert client.post(f"/live/contexts/{context.id}/snapshots", {"label": "l" * 301}).status_code == 404
    assert client.post(f"/live/contexts/{context.id}/instructions", {"text": ""}).status_code == 404
