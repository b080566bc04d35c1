"""An operator registers an MCP tool source in a real browser (Playwright + Debian Chromium):
the form's refusal names the field, the real ``mcp-server-time`` is discovered, and its new
tool, deny for every role, is allowed for one role in the tool matrix editor (issue 16)."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from capabilities.models import ToolPermission

pytestmark = pytest.mark.django_db(transaction=True)

TOOL = "mcp:time/get_current_time"


def test_register_the_time_server_then_allow_its_tool_for_the_dba(logged_in_page, live_server, builtin):
    page = logged_in_page
    page.click("nav .nav-more summary")  # the rarer pages sit under More
    page.click("nav >> text=MCP tools")
    expect(page.locator("#no-mcp-sources")).to_be_visible()
    page.fill("#id_name", "shell")
    page.select_option("#id_transport", "http")
    page.fill("#id_url", "http://169.254.169.254/latest/meta-data")
    page.click("#register-source")
    expect(page.locator("#id_url-errors")).to_be_visible()

    page.fill("#id_name", "time")
    page.select_option("#id_transport", "stdio")
    page.select_option("#id_command", "mcp-server-time")
    page.fill("#id_args", "--local-timezone\nUTC")
    page.fill("#id_url", "")
    page.click("#register-source")
    row = page.locator("#mcp-source-time")
    expect(row).to_contain_text("connected", timeout=60_000)
    expect(row).to_contain_text(TOOL)
    expect(page.locator(".messages")).to_contain_text("deny for every role")

    page.click("text=tool permission matrix")
    cell = page.locator(f'select[name="cell:dba:{TOOL}"]')
    expect(cell).to_have_value("deny")
    cell.select_option("allow")
    page.click("#save-matrix")
    expect(page.locator(".messages")).to_contain_text("Saved 1 cell change")
    assert ToolPermission.objects.get(project=None, role__role="dba", tool=TOOL).mode == "allow"
