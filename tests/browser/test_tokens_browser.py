"""A staff operator issues a role token on the Tokens page, sees its secret once, and revokes it
after confirming, in a real browser (Playwright + Debian Chromium; issue 16)."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from interop import role_tokens
from interop.models import RoleToken

pytestmark = pytest.mark.django_db(transaction=True)


def test_issue_a_token_see_the_secret_once_and_revoke_it(logged_in_page, live_server, builtin):
    page = logged_in_page
    problems: list[str] = []  # CSP refusals and script errors (the copy button is forms.js)
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda error: problems.append(str(error)))
    page.click("nav .nav-more summary")  # the rarer pages sit under More
    page.click('nav a[href="/tokens/"]')
    expect(page.locator("h1")).to_have_text("Role tokens")
    expect(page.locator("#no-tokens")).to_be_visible()
    page.select_option("#id_role", "pm")
    page.fill("#id_name", "Claude Desktop on Ana's laptop")
    page.click("#issue-token")

    expect(page.locator("#issued-token")).to_contain_text("shown only this once")
    secret = page.locator("#token-secret").input_value()
    assert secret.startswith("tcr_")
    row = RoleToken.objects.get()
    assert (row.name, row.role.role, row.created_by.username) == ("Claude Desktop on Ana's laptop", "pm", "operator")
    assert role_tokens.authenticate(secret).pk == row.pk
    listed = page.locator(f"#token-{row.pk}")
    expect(listed).to_contain_text("pm")
    expect(listed).to_contain_text(row.prefix)
    expect(listed).not_to_contain_text(secret)
    page.click("#copy-token")
    expect(page.locator("#copy-token")).to_have_text("Copied")

    page.goto(f"{live_server.url}/tokens/")  # the secret is never shown again
    expect(page.locator("#issued-token")).to_have_count(0)
    assert secret not in page.content()
    expect(page.locator(f"#token-{row.pk}")).to_contain_text("2")  # last used: a date now

    page.once("dialog", lambda dialog: dialog.dismiss())
    page.click(f"#revoke-{row.pk}")
    row.refresh_from_db()
    assert row.revoked_at is None  # dismissing the confirmation changes nothing

    page.once("dialog", lambda dialog: dialog.accept())
    page.click(f"#revoke-{row.pk}")
    expect(page.locator(".messages")).to_contain_text("revoked")
    expect(page.locator(f"#revoke-{row.pk}")).to_have_count(0)
    row.refresh_from_db()
    assert row.revoked_at is not None
    assert role_tokens.authenticate(secret) is None
    assert problems == [], problems


def test_the_form_names_what_is_wrong_and_issues_nothing(logged_in_page, live_server, builtin):
    page = logged_in_page
    page.goto(f"{live_server.url}/tokens/")
    page.select_option("#id_role", "pm")
    page.fill("#id_name", "   ")
    page.click("#issue-token")
    expect(page.locator("#form-errors")).to_contain_text("name")
    expect(page.locator("#issued-token")).to_have_count(0)
    assert RoleToken.objects.count() == 0
