"""Whole numbers read from text (``teamclaw.whole_numbers``): ``"²".isdigit()`` is True while
``int("²")`` raises, and 5,000 digits are past Python's int-conversion limit. Every entry point
that reads a number from a query, a form or a header refuses such text with a 400 naming the
field (or its page's refusal), never a 500."""

from __future__ import annotations

import re

import pytest

from capabilities.config import current_version
from capabilities.models import ConfigChange

SUPERSCRIPT = "²"
HUGE = "9" * 5000


@pytest.mark.parametrize("raw", [SUPERSCRIPT, HUGE])
def test_the_days_of_a_what_if_are_a_whole_number(api, page_client, builtin, raw):
    response = api.post(f"/api/v1/permissions/tool-matrix/what-if?days={raw}", {"matrix": {}}, format="json")
    assert response.status_code == 400, response.content
    assert "days" in response.json()["errors"]
    page = page_client.get("/permissions/tools/", {"days": raw})
    assert page.status_code == 200  # the page's select falls back to its default window


@pytest.mark.parametrize("raw", [SUPERSCRIPT, HUGE])
def test_since_version_of_the_audit_trail_is_a_whole_number(api, builtin, raw):
    response = api.get("/api/v1/config/changes", {"since_version": raw})
    assert response.status_code == 400, response.content
    assert response.json()["errors"]["since_version"] == ["must be a whole number >= 0"]


@pytest.mark.parametrize("raw", [SUPERSCRIPT, HUGE])
def test_page_and_page_size_are_whole_numbers(api, builtin, raw):
    for name in ("page", "page_size"):
        response = api.get("/api/v1/config/changes", {name: raw})
        assert response.status_code == 400, response.content
        assert name in response.json()["errors"]


@pytest.mark.parametrize("raw", [SUPERSCRIPT, HUGE])
def test_deleting_a_role_at_a_version_that_is_no_whole_number_is_a_400(api, builtin, raw):
    response = api.delete(f"/api/v1/roles/pm?version={raw}")
    assert response.status_code == 400, response.content
    assert response.json()["errors"]["version"] == ["must be a whole number from 0 to 999999999999999999"]


@pytest.mark.parametrize("raw", [SUPERSCRIPT, HUGE])
def test_forking_from_a_step_that_is_no_whole_number_is_refused(page_client, builtin, raw):
    response = page_client.post("/tasks/no-such-task/fork", {"from_step": raw})
    assert response.status_code == 404  # the unknown task is named, not a 500


@pytest.mark.parametrize("raw", [SUPERSCRIPT, HUGE])
def test_reverting_at_a_version_that_is_no_whole_number_is_refused(api, page_client, builtin, raw):
    doc = api.get("/api/v1/permissions/tool-matrix").json()
    body = {"version": doc["version"], "matrix": {"main": {"file_write": "deny"}}}
    assert api.put("/api/v1/permissions/tool-matrix", body, format="json").status_code == 200
    change = ConfigChange.objects.order_by("-new_version").first()
    before = current_version()
    response = page_client.post(f"/config/changes/{change.pk}/revert/", {"version": raw}, follow=True)
    assert response.status_code == 200
    assert "version: must be a whole number from 0 to" in response.content.decode()
    assert current_version() == before


@pytest.mark.parametrize("raw", [SUPERSCRIPT, HUGE])
def test_importing_at_an_expected_version_that_is_no_whole_number_is_a_400(api, page_client, builtin, raw):
    text = api.get("/api/v1/config/export").content.decode()
    preview = page_client.post("/config/transfer/", {"text": text, "action": "preview"})
    assert preview.status_code == 200
    digest = re.search(r'name="digest" value="([0-9a-f]{64})"', preview.content.decode()).group(1)
    before = current_version()
    applied = page_client.post(
        "/config/transfer/", {"text": text, "action": "apply", "expected_version": raw, "digest": digest}
    )
    assert applied.status_code == 400
    assert "must be a whole number from 0 to" in applied.content.decode()
    assert current_version() == before
