"""The MCP tool sources page (issue 16): staff register a source (the real ``mcp-server-time``
over stdio), see its state and tools, refresh and remove it; refusals name the field."""

from __future__ import annotations

from django.test import Client

from interop.models import McpToolSource
from tests.helpers import database_state
from tests.web.page_forms import field_error

PAGE = "/tools/mcp/"


def test_a_refused_command_is_shown_with_its_field_and_nothing_is_saved(page_client, builtin):
    before = database_state()
    response = page_client.post(PAGE, {"name": "shell", "transport": "stdio", "command": "bash", "args": "-c\nid"})
    assert response.status_code == 400
    body = response.content.decode()
    assert 'id="form-errors"' in body
    assert "is not in TEAMCLAW_MCP_STDIO_ALLOWLIST" in field_error(response, "command")  # next to its field
    assert 'value="shell"' in body  # the form keeps what was typed
    assert database_state() == before


def test_a_url_outside_the_host_allowlist_is_refused(page_client, builtin):
    response = page_client.post(PAGE, {"name": "web", "transport": "http", "url": "http://169.254.169.254/"})
    assert response.status_code == 400
    assert field_error(response, "url")
    assert not McpToolSource.objects.exists()


def test_staff_register_see_refresh_and_remove_a_source(page_client, builtin):
    empty = page_client.get(PAGE)
    assert empty.status_code == 200 and 'id="no-mcp-sources"' in empty.content.decode()
    assert '<option value="mcp-server-time"' in empty.content.decode()
    created = page_client.post(
        PAGE, {"name": "time", "transport": "stdio", "command": "mcp-server-time", "args": "--local-timezone\nUTC"}
    )
    assert created.status_code == 302
    page = page_client.get(PAGE).content.decode()
    assert 'id="mcp-source-time"' in page
    assert "mcp:time/get_current_time" in page and "mcp:time/convert_time" in page
    assert "connected" in page and "deny for every role" in page
    source = McpToolSource.objects.get(name="time")
    assert source.args == ["--local-timezone", "UTC"]
    assert page_client.post(f"/tools/mcp/{source.pk}/refresh/").status_code == 302
    assert "Refreshed time: 2 tool(s)." in page_client.get(PAGE).content.decode()
    assert page_client.post(f"/tools/mcp/{source.pk}/remove/").status_code == 302
    assert not McpToolSource.objects.exists()


def test_viewers_see_the_page_but_cannot_change_it(viewer_user, builtin):
    client = Client()
    client.force_login(viewer_user)
    page = client.get(PAGE)
    assert page.status_code == 200 and 'id="mcp-source-form"' not in page.content.decode()
    assert client.post(PAGE, {"name": "time", "command": "mcp-server-time"}).status_code == 403
    assert not McpToolSource.objects.exists()
