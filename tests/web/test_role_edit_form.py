"""The role page's edit form (``web.pages.roles.RoleEditForm``): a bad input shows the role
page again with a 400, the reason next to its field in the page's language and what was
typed; the role is not changed and the refusal is audited."""

from __future__ import annotations

import pytest

from capabilities.models import AgentRole, ConfigChange
from tests.web.page_forms import LANGUAGES, assert_refused

pytestmark = pytest.mark.django_db

BAD_INPUTS = [
    # (case, changed fields, field, reason in en, reason in zh)
    ("display name missing", {"display_name": " "}, "display_name", "This field is required", "该字段是必填项"),
    ("display name too long", {"display_name": "d" * 101}, "display_name", "at most 100 characters", "不超过 100 字符"),
    ("emoji too long", {"emoji": "🙂" * 17}, "emoji", "at most 16 characters", "不超过 16 字符"),
    (
        "chinese name too long",
        {"display_name_zh": "名" * 101},
        "display_name_zh",
        "at most 100 characters",
        "不超过 100 字符",
    ),
    (
        "too many responsibilities",
        {"responsibilities": "\n".join(f"r{i}" for i in range(21))},
        "responsibilities",
        "At most 20 responsibilities",
        "职责最多 20 条",
    ),
    (
        "a responsibility too long",
        {"responsibilities_zh": "短\n" + "长" * 201},
        "responsibilities_zh",
        "Line 2 is 201 characters",
        "第 2 行有 201 个字符",
    ),
]


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize(("case", "changed", "field", "en", "zh"), BAD_INPUTS, ids=[r[0] for r in BAD_INPUTS])
def test_a_bad_role_edit_is_refused_next_to_its_field(page_client, builtin, language, case, changed, field, en, zh):
    before = AgentRole.objects.values().get(role="pm")
    posted = {"version": "1", "display_name": "PM", "description": "typed words", "note": "n", **changed}
    response = page_client.post("/roles/pm/edit/", posted, HTTP_ACCEPT_LANGUAGE=LANGUAGES[language])
    assert_refused(response, field, en if language == "en" else zh)
    assert 'value="typed words"' in response.content.decode()  # what was typed, not the saved value
    assert AgentRole.objects.values().get(role="pm") == before
    (refused,) = ConfigChange.every.filter(outcome=ConfigChange.REFUSED)
    assert refused.config_type == "role" and field in refused.changed_fields
