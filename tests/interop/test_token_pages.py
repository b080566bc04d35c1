"""The Tokens page (issue 16): staff only; issuing shows the secret on that answer alone."""

from __future__ import annotations

import pytest
from django.test import Client

from interop import role_tokens
from interop.models import RoleToken

pytestmark = pytest.mark.django_db


def test_only_staff_see_the_page_issue_or_revoke(viewer_user, builtin):
    client = Client()
    client.force_login(viewer_user)
    token = role_tokens.issue("pm", "kept").row
    assert client.get("/tokens/").status_code == 403
    assert client.post("/tokens/", {"role": "pm", "name": "x"}).status_code == 403
    assert client.post(f"/tokens/{token.pk}/revoke/").status_code == 403
    assert RoleToken.objects.count() == 1 and RoleToken.objects.get().revoked_at is None
    assert 'href="/tokens/"' not in client.get("/").content.decode()  # no nav link either


def test_the_secret_is_shown_on_the_answer_to_the_form_only(page_client, builtin):
    issued = page_client.post("/tokens/", {"role": "designer", "name": "CI bot"})
    assert issued.status_code == 201
    assert "no-store" in issued["Cache-Control"]  # the page shows the secret: no cache keeps it
    row = RoleToken.objects.get()
    secret = issued.context["issued"].secret
    assert secret in issued.content.decode() and role_tokens.authenticate(secret).pk == row.pk
    listed = page_client.get("/tokens/")
    assert secret not in listed.content.decode() and row.prefix in listed.content.decode()
    refused = page_client.post("/tokens/", {"role": "nobody", "name": "x"})
    assert refused.status_code == 400 and "there is no role" in refused.content.decode().lower()
    assert RoleToken.objects.count() == 1
    revoked = page_client.post(f"/tokens/{row.pk}/revoke/", follow=True)
    assert "revoked" in revoked.content.decode()
    assert role_tokens.authenticate(secret) is None
    assert page_client.post("/tokens/99999/revoke/", follow=True).status_code == 200
    assert page_client.get(f"/tokens/{row.pk}/revoke/").status_code == 405
