"""Issue 32: the logo's 🦀 and the roles' icons are local SVG pictures with alt text in the
page's language (a browser without an emoji font drew them as empty boxes); the rows of
teamclaw/emoji_icons.yaml are tested here, each from its row."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from django.conf import settings
from django.utils import translation

from teamclaw.emoji_icons import ROWS, emoji_icon

STATIC = Path(settings.BASE_DIR) / "static" / "teamclaw" / "emoji"
ROW_LIST = yaml.safe_load(ROWS.read_text("utf-8"))


@pytest.mark.parametrize("row", ROW_LIST, ids=[row["alt"] for row in ROW_LIST])
def test_each_row_names_a_shipped_svg_and_an_alt_in_both_languages(row):
    picture = STATIC / row["file"]
    assert picture.read_text("utf-8").startswith("<svg")
    with translation.override("en"):
        english = emoji_icon(row["emoji"])
    with translation.override("zh-hans"):
        chinese = emoji_icon(row["emoji"])
    assert f'src="/static/teamclaw/emoji/{row["file"]}"' in english
    assert f'alt="{row["alt"]}"' in english
    alt = re.search(r'alt="([^"]*)"', chinese).group(1)
    assert alt != row["alt"] and re.fullmatch(r"[\u4e00-\u9fff]+", alt)


def test_an_emoji_without_a_picture_stays_text_and_is_escaped():
    assert emoji_icon("🐙") == "🐙"
    assert emoji_icon("<b>") == "&lt;b&gt;"
    assert emoji_icon(None) == ""


def test_every_builtin_role_emoji_has_its_picture():
    team = yaml.safe_load((Path(settings.BASE_DIR) / "capabilities" / "builtin" / "team.yaml").read_text("utf-8"))
    listed = {row["emoji"] for row in ROW_LIST}
    emoji = {role["emoji"] for role in team["roles"]}
    assert emoji <= listed


def test_pages_show_the_logo_and_role_icons_as_pictures_in_chinese(page_client, builtin):
    for path in ("/", "/roles/", "/roles/pm/", "/prompts/"):
        html = page_client.get(path, HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
        assert '<img class="emoji-icon" src="/static/teamclaw/emoji/1f980.svg" alt="螃蟹"' in html, path
        assert 'src="/static/teamclaw/emoji/1f4cb.svg" alt="剪贴板"' in html, path  # pm's 📋
        body = re.sub(r"<(script|style|textarea|code|option)[^>]*>.*?</\1>|<[^>]+>", "", html, flags=re.S)
        assert "🦀" not in body and "📋" not in body, path
