"""An operator governs the team in a real browser (Playwright + Debian Chromium): toggles a
matrix cell and saves it, meets another operator's save as a stale-version conflict with the
difference shown, and creates a custom role (issue 5)."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from capabilities.models import AgentRole, ConfigChange, InvokePermission, Project, ProjectCapabilityOverride

pytestmark = pytest.mark.django_db(transaction=True)


def log_in(page, live_server, user) -> None:
    from tests.conftest import PASSWORD

    page.goto(f"{live_server.url}/login/")
    page.fill("#id_username", user.username)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"{live_server.url}/")


def allowed(caller: str, callee: str) -> bool:
    return InvokePermission.objects.get(project=None, caller__role=caller, target__role=callee).allowed


def test_toggle_a_cell_see_its_what_if_and_save_it(logged_in_page, live_server, builtin):
    page = logged_in_page
    page.goto(f"{live_server.url}/permissions/invoke/")
    cell = page.locator('td[data-cell="coderA:dba"]')
    box = cell.locator('input[name="allow"]')
    expect(box).to_be_checked()
    expect(page.locator("#no-staged")).to_be_visible()
    box.uncheck()
    expect(cell).to_have_class("cell staged")
    expect(page.locator("#staged-list")).to_contain_text("Frontend Developer → Database Administrator")
    expect(page.locator("#what-if-summary")).to_contain_text("would now be denied")
    page.fill("#id_note", "coderA asks the architect instead")
    page.click("#save-matrix")
    expect(page.locator(".messages")).to_contain_text("Saved 1 cell change")
    expect(page.locator('td[data-cell="coderA:dba"] input[name="allow"]')).not_to_be_checked()
    expect(page.locator('td[data-cell="coderA:dba"]')).not_to_have_class("cell staged")
    assert not allowed("coderA", "dba")
    change = ConfigChange.objects.order_by("-new_version").first()
    assert change.note == "coderA asks the architect instead"
    assert change.actor.username == "operator"


def test_a_second_operator_sees_the_stale_version_conflict_with_the_difference(
    browser, logged_in_page, live_server, builtin, staff_user
):
    first = logged_in_page
    other = browser.new_context()
    second = other.new_page()
    second.set_default_timeout(20_000)
    try:
        log_in(second, live_server, staff_user)
        first.goto(f"{live_server.url}/permissions/invoke/")
        second.goto(f"{live_server.url}/permissions/invoke/")

        first.locator('td[data-cell="pm:dba"] input[name="allow"]').check()
        first.fill("#id_note", "pm may check the schema")
        first.click("#save-matrix")
        expect(first.locator(".messages")).to_contain_text("Saved 1 cell change")

        second.locator('td[data-cell="designer:dba"] input[name="allow"]').check()
        second.click("#save-matrix")
        conflict = second.locator("#conflict")
        expect(conflict).to_contain_text("someone else changed this")
        expect(conflict).to_contain_text("invoke permission pm → dba")
        expect(conflict).to_contain_text("pm may check the schema")
        # the second operator's own change is still staged, over the current values
        expect(second.locator('td[data-cell="designer:dba"]')).to_have_class("cell staged")
        expect(second.locator('td[data-cell="designer:dba"] input[name="allow"]')).to_be_checked()
        expect(second.locator('td[data-cell="pm:dba"] input[name="allow"]')).to_be_checked()
        assert not allowed("designer", "dba")

        second.click("#save-matrix")
        expect(second.locator(".messages")).to_contain_text("Saved 1 cell change")
        assert allowed("designer", "dba")
        assert allowed("pm", "dba")
    finally:
        other.close()


def test_create_a_custom_role_and_find_it_in_the_matrix(logged_in_page, live_server, builtin):
    page = logged_in_page
    page.goto(f"{live_server.url}/roles/")
    page.click("#new-role")
    page.wait_for_url("**/roles/new/")
    page.wait_for_load_state()  # forms.js has bound the "start from" select's change handler
    page.select_option("#id_from", "coderB")
    page.wait_for_url("**/roles/new/?from=coderB")
    page.fill("#id_role", "codeReviewer")
    page.fill("#id_display_name", "Code Reviewer")
    page.fill("#id_emoji", "🔍")
    page.fill("#id_responsibilities", "Review pull requests\nAsk for missing tests")
    page.select_option("#id_tool_network", "confirm")
    page.select_option("#id_capabilities", ["code_review"])
    page.click("#create-role")
    page.wait_for_url("**/roles/codeReviewer/")
    expect(page.locator("h1")).to_contain_text("Code Reviewer")
    expect(page.locator(".messages")).to_contain_text("Role codeReviewer created")
    expect(page.locator("#role-governance")).to_contain_text("custom role")
    role = AgentRole.objects.get(role="codeReviewer")
    assert role.responsibilities == ["Review pull requests", "Ask for missing tests"]
    # started from coderB: the same callees, and coderB's prompts
    assert allowed("codeReviewer", "dba") == allowed("coderB", "dba")

    page.goto(f"{live_server.url}/permissions/invoke/")
    expect(page.locator('td[data-cell="codeReviewer:dba"]')).to_be_visible()
    expect(page.locator('td[data-cell="main:codeReviewer"] input[name="allow"]')).to_be_checked()

    page.goto(f"{live_server.url}/roles/new/")
    page.fill("#id_role", "codereviewer")
    page.fill("#id_display_name", "Duplicate")
    page.click("#create-role")
    expect(page.locator("#form-errors")).to_contain_text("only in case")


def test_turn_a_capability_off_and_back_for_one_project(logged_in_page, live_server, builtin):
    shop = Project.objects.create(slug="shop", name="Shop")
    page = logged_in_page
    page.goto(f"{live_server.url}/projects/shop/")
    row = page.locator("#project-capabilities tr", has_text="deployment_config")
    expect(row.get_by_role("button", name="Turn on here")).to_have_count(0)
    before = ConfigChange.objects.count()
    row.get_by_role("button", name="Turn off here").click()
    page.wait_for_url(f"{live_server.url}/projects/shop/")
    expect(page.locator(".messages")).to_contain_text("deployment_config is now disabled in project Shop")
    expect(row).to_have_class("override")
    expect(row.get_by_role("button", name="Turn on here")).to_be_visible()
    assert ProjectCapabilityOverride.objects.get(project=shop, card__capability_id="deployment_config").enabled is False
    change = ConfigChange.objects.order_by("-new_version").first()
    assert ConfigChange.objects.count() == before + 1
    assert change.project == shop

    row.get_by_role("button", name="Reset to global").click()
    expect(page.locator(".messages")).to_contain_text("deployment_config is now following the global setting")
    expect(row.get_by_role("button", name="Turn off here")).to_be_visible()
    assert not ProjectCapabilityOverride.objects.filter(project=shop).exists()


def test_role_names_in_table_headers_show_as_written(logged_in_page, live_server, builtin):
    """Row and column headings name the roles (issue 32: names, not slugs, with the slug in
    the title) as written, not as the headings' CSS text-transform would turn them."""
    page = logged_in_page
    page.goto(f"{live_server.url}/constraints/")
    table = page.locator("#constraints-table")
    # innerText applies CSS text-transform: what the operator reads
    assert "Frontend Developer" in table.locator('tbody th[title="coderA"]').inner_text()
    assert "AI Expert" in table.locator('tbody th[title="ai_expert"]').inner_text()
    assert table.locator("thead th").first.inner_text() == "ROLE"  # column headings keep their style
    page.goto(f"{live_server.url}/permissions/invoke/")
    assert "Frontend Developer" in page.locator('table.matrix thead th span[title^="coderA"]').inner_text()
    assert "Frontend Developer" in page.locator('table.matrix tbody th a[title="coderA"]').inner_text()


def test_revert_a_matrix_change_from_the_audit_trail(logged_in_page, live_server, builtin):
    """Issue 30: the operator saves a cell, then reverts that change from the audit trail,
    sees the preview, confirms, and finds the old cell back and a new audit entry."""
    page = logged_in_page
    page.goto(f"{live_server.url}/permissions/invoke/")
    page.locator('td[data-cell="coderA:dba"] input[name="allow"]').uncheck()
    page.fill("#id_note", "coderA asks the architect instead")
    page.click("#save-matrix")
    expect(page.locator(".messages")).to_contain_text("Saved 1 cell change")
    assert not allowed("coderA", "dba")
    saved = ConfigChange.objects.order_by("-new_version").first()

    page.goto(f"{live_server.url}/config/changes/")
    row = page.locator("#audit-table tbody tr", has_text="coderA asks the architect instead")
    row.locator("a.revert-link").click()
    preview = page.locator("#revert-preview")
    expect(preview).to_contain_text("coderA")
    expect(preview).to_contain_text("dba")
    page.fill('#revert-form input[name="note"]', "the architect is away")
    page.click("#revert-apply")
    expect(page.locator(".messages")).to_contain_text(f"Reverted change #{saved.pk}")
    assert allowed("coderA", "dba")
    reverted = ConfigChange.objects.order_by("-new_version").first()
    assert reverted.new_version == saved.new_version + 1
    assert reverted.note == f"Revert of change #{saved.pk} (version {saved.new_version}): the architect is away"
    assert reverted.changes == {"invoke_matrix.coderA.dba": {"old": False, "new": True}}
    expect(page.locator("#audit-table tbody tr").first).to_contain_text("the architect is away")
    page.goto(f"{live_server.url}/permissions/invoke/")
    expect(page.locator('td[data-cell="coderA:dba"] input[name="allow"]')).to_be_checked()
