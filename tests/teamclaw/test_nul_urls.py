"""A URL holding a NUL character (%00) is refused with 400 before any view looks it up
(``teamclaw.middleware.nul_free_urls_middleware``): PostgreSQL text cannot hold NUL, so the
lookup would fail with a 500 there (found on PostgreSQL by the adversarial pass)."""

from __future__ import annotations

import pytest

from teamclaw.middleware import NUL_DETAIL


@pytest.mark.parametrize(
    "url",
    [
        "/api/v1/health/%00",
        "/api/v1/capabilities/requirement_interview/health?project=%00",
        "/api/v1/tasks?status=run%00ning",
        "/api/v1/capabilities?%00=1",
    ],
)
def test_the_api_refuses_a_nul_in_the_url_in_its_error_shape(api, url):
    response = api.get(url)
    assert response.status_code == 400
    assert response.json() == {"detail": NUL_DETAIL, "errors": {"url": ["may not contain %00"]}}


def test_a_page_refuses_it_in_the_operators_language(client, staff_user):
    client.force_login(staff_user)
    response = client.get("/skills/%00/")
    assert response.status_code == 400
    assert "NUL" in response.content.decode()
    chinese = client.get("/skills/x/?q=%00", HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert "地址中不能包含 NUL 字符" in chinese


def test_an_ordinary_url_is_untouched(api):
    assert api.get("/api/v1/health/no_such_capability").status_code == 404
