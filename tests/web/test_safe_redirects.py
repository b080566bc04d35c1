"""A form's ``next`` is followed only to a page of this site (web.forms.safe_next), on every
page that honours one; an external or scheme-relative ``next`` goes to the page's fallback."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.urls import reverse
from django.utils import timezone

from monitoring.models import Alert

EXTERNAL = [
    "https://evil.example/",
    "//evil.example/x",
    "http:\\\\evil.example",
    "javascript:alert(1)",
    "\\\\evil.example",
]


def open_alert() -> Alert:
    return Alert.objects.create(kind="test", severity="warning", message="m", created_at=timezone.now())


@pytest.mark.parametrize("target", EXTERNAL)
def test_resolving_an_alert_never_redirects_off_site(page_client, target):
    alert = open_alert()
    response = page_client.post(reverse("alert-resolve", args=[alert.pk]), {"next": target})
    assert response.status_code == 302
    assert response["Location"] == reverse("alerts")
    alert.refresh_from_db()
    assert alert.resolved_at is not None


def test_resolving_an_alert_goes_back_to_a_page_of_this_site(page_client):
    alert = open_alert()
    target = reverse("alerts") + "?severity=warning"
    response = page_client.post(reverse("alert-resolve", args=[alert.pk]), {"next": target})
    assert response["Location"] == target


def test_every_next_the_pages_read_goes_through_safe_next():
    """No page reads ``next`` itself: web.forms.safe_next is the one place that does."""
    web = Path(__file__).resolve().parent.parent.parent / "web"
    readers = [
        str(path.relative_to(web))
        for path in web.rglob("*.py")
        if re.search(r"""(GET|POST|data|query_params)(\.get\(|\[)\s*["']next["']""", path.read_text())
    ]
    assert readers == ["forms.py"]
