"""A tool confirmation's decision (``web.pages.confirmations.DecisionForm``): a decision that
is neither true nor false answers the confirmation's fragment with a 400 and the reason in
the page's language; the confirmation stays pending."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from monitoring.models import Task, ToolConfirmation
from tests.web.page_forms import LANGUAGES, field_error

pytestmark = pytest.mark.django_db

BAD_INPUTS = [
    # (case, posted)
    ("decision missing", {}),
    ("decision blank", {"approve": "  "}),
    ("decision not a yes or no", {"approve": "maybe"}),
    ("decision too long", {"approve": "true" * 100}),
]
REASONS = {"en": "say true or false", "zh": "请回答 true 或 false"}


def pending_confirmation() -> ToolConfirmation:
    Task.objects.create(id="t1", kind="task", workflow="requirement_review", title="T", status="running")
    now = timezone.now()
    return ToolConfirmation.objects.create(
        id="cf1",
        context_id="c1",
        instance_id="main-1",
        role="main",
        task_id="t1",
        tool="file_write",
        created_at=now,
        expires_at=now + timedelta(minutes=5),
    )


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize(("case", "posted"), BAD_INPUTS, ids=[r[0] for r in BAD_INPUTS])
def test_a_bad_decision_is_refused_and_nothing_is_decided(page_client, builtin, language, case, posted):
    row = pending_confirmation()
    response = page_client.post(f"/live/confirmations/{row.id}", posted, HTTP_ACCEPT_LANGUAGE=LANGUAGES[language])
    assert response.status_code == 400
    assert REASONS[language] in field_error(response, "approve")
    assert ToolConfirmation.objects.get(pk=row.id).status == "pending"


def test_a_decision_in_capitals_is_read_as_it_says(page_client, builtin):
    row = pending_confirmation()
    response = page_client.post(f"/live/confirmations/{row.id}", {"approve": " FALSE "})
    assert response.status_code == 200
    assert ToolConfirmation.objects.get(pk=row.id).status != "pending"
