"""The prompt editor's fields (``web.pages.prompts.PromptEditForm``, issue 32 item 5): a field
the form refuses (too long, not a version bump) shows the editor again with a 400, the reason
under that field in the page's language and everything typed kept; no version is saved."""

from __future__ import annotations

import pytest

from prompts.models import PromptVersion
from tests.web.page_forms import LANGUAGES

pytestmark = pytest.mark.django_db

BAD_EDITS = [
    # (case, posted, reason in en, reason in zh)
    ("note too long", {"note": "n" * 501}, "at most 500 characters", "不超过 500 字符"),
    ("language too long", {"language": "l" * 17}, "at most 16 characters", "不超过 16 字符"),
    ("bump of no kind", {"bump": "huge"}, "Select a valid choice", "选择一个有效的选项"),
]


def versions() -> int:
    return PromptVersion.objects.filter(template__role__role="pm", template__template_type="persona").count()


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize(("case", "posted", "en", "zh"), BAD_EDITS, ids=[r[0] for r in BAD_EDITS])
def test_a_bad_field_is_refused_under_it_and_the_edit_is_kept(page_client, builtin, language, case, posted, en, zh):
    before = versions()
    base = PromptVersion.objects.get(
        template__role__role="pm", template__template_type="persona", template__project=None, is_active=True
    ).version
    data = {"content": "Kept <edit> text", "variables": "[]", "bump": "patch", "base_version": base, **posted}
    response = page_client.post("/prompts/pm/persona/edit/", data, HTTP_ACCEPT_LANGUAGE=LANGUAGES[language])
    html = response.content.decode()
    assert response.status_code == 400
    assert (en if language == "en" else zh) in html
    assert "Kept &lt;edit&gt; text" in html
    assert versions() == before


@pytest.mark.parametrize("language", LANGUAGES)
def test_a_rollback_with_a_note_too_long_is_refused_and_the_note_kept(page_client, builtin, language):
    first = PromptVersion.objects.get(
        template__role__role="pm", template__template_type="persona", template__project=None, is_active=True
    ).version
    page_client.post(
        "/prompts/pm/persona/edit/",
        {"content": "Second.", "variables": "[]", "bump": "patch", "base_version": first, "action": "activate"},
    )
    before = versions()
    note = "n" * 501
    response = page_client.post(
        f"/prompts/pm/persona/rollback/{first}/",
        {"bump": "patch", "note": note, "base_version": "1.0.1"},
        HTTP_ACCEPT_LANGUAGE=LANGUAGES[language],
    )
    html = response.content.decode()
    assert response.status_code == 400
    assert ("at most 500 characters" if language == "en" else "不超过 500 字符") in html
    assert f'value="{note}"' in html
    assert versions() == before
