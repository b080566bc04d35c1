"""The MCP tool source registration form (``web.pages.mcp_sources.McpSourceForm``): a bad
input is refused with a 400, the reason next to its field in the page's language, what was
typed kept (never the bearer token), and nothing registered."""

from __future__ import annotations

import pytest

from interop.models import McpToolSource
from tests.web.page_forms import LANGUAGES, assert_refused

pytestmark = pytest.mark.django_db

PAGE = "/tools/mcp/"
BAD_INPUTS = [
    # (case, posted, field, reason in en, reason in zh)
    (
        "name missing",
        {"transport": "stdio", "command": "mcp-server-time"},
        "name",
        "This field is required",
        "该字段是必填项",
    ),
    ("name malformed", {"name": "Time!", "command": "mcp-server-time"}, "name", "lower-case letters", "小写字母"),
    (
        "name too long",
        {"name": "t" * 41, "command": "mcp-server-time"},
        "name",
        "at most 40 characters",
        "不超过 40 字符",
    ),
    ("transport unknown", {"name": "time", "transport": "pigeon"}, "transport", "pigeon", "pigeon"),
    (
        "command missing",
        {"name": "time", "transport": "stdio"},
        "command",
        "Choose the command",
        "请选择启动服务器的命令",
    ),
    (
        "url missing",
        {"name": "web", "transport": "http", "bearer_token": "s3cret"},
        "url",
        "Give the server's URL",
        "请填写服务器的 URL",
    ),
    (
        "url too long",
        {"name": "web", "transport": "http", "url": "https://x/" + "u" * 2000},
        "url",
        "at most 2000 characters",
        "不超过 2000 字符",
    ),
]


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize(("case", "posted", "field", "en", "zh"), BAD_INPUTS, ids=[r[0] for r in BAD_INPUTS])
def test_a_bad_source_is_refused_next_to_its_field(page_client, builtin, language, case, posted, field, en, zh):
    response = page_client.post(PAGE, posted, HTTP_ACCEPT_LANGUAGE=LANGUAGES[language])
    assert_refused(response, field, en if language == "en" else zh)
    body = response.content.decode()
    if posted.get("name") and field != "name":
        assert f'value="{posted["name"]}"' in body  # what was typed is kept
    assert "s3cret" not in body  # the bearer token is never echoed
    assert not McpToolSource.objects.exists()
