"""The Tokens page's issue form (``web.pages.tokens.TokenIssueForm``): a bad input is refused
with a 400, the reason next to its field in the page's language, what was typed kept, and no
token issued."""

from __future__ import annotations

import pytest

from interop.models import RoleToken
from tests.web.page_forms import LANGUAGES, assert_refused

pytestmark = pytest.mark.django_db

BAD_INPUTS = [
    # (case, posted, field, reason in en, reason in zh)
    ("name missing", {"role": "pm", "name": "  "}, "name", "Give the token a name", "请为令牌命名"),
    ("name too long", {"role": "pm", "name": "n" * 101}, "name", "at most 100 characters", "不超过 100 字符"),
    ("role missing", {"name": "CI bot"}, "role", "Choose the role the token acts as", "请选择令牌所代表的角色"),
    ("role unknown", {"role": "nobody", "name": "CI bot"}, "role", "There is no role “nobody”", "没有角色“nobody”"),
]


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize(("case", "posted", "field", "en", "zh"), BAD_INPUTS, ids=[row[0] for row in BAD_INPUTS])
def test_a_bad_input_is_refused_next_to_its_field(page_client, builtin, language, case, posted, field, en, zh):
    response = page_client.post("/tokens/", posted, HTTP_ACCEPT_LANGUAGE=LANGUAGES[language])
    assert_refused(response, field, en if language == "en" else zh)
    assert not RoleToken.objects.exists()
    if posted.get("name", "").strip():
        assert f'value="{posted["name"]}"' in response.content.decode()  # what was typed is kept


def test_a_disabled_role_is_refused_in_both_languages(page_client, builtin):
    from capabilities.models import AgentRole

    AgentRole.objects.filter(role="pm").update(enabled=False)
    for language, reason in (("en", "is disabled"), ("zh", "已停用")):
        posted = {"role": "pm", "name": "CI bot"}
        response = page_client.post("/tokens/", posted, HTTP_ACCEPT_LANGUAGE=LANGUAGES[language])
        assert_refused(response, "role", reason)
    assert not RoleToken.objects.exists()
