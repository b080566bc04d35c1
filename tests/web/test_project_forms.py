"""The project forms (``web.pages.projects.ProjectForm``): creating or editing a project with
a bad input is refused with a 400, the reason next to its field in the page's language, what
was typed kept, nothing saved, and the refusal audited."""

from __future__ import annotations

import pytest

from capabilities.models import ConfigChange, Project
from tests.web.page_forms import LANGUAGES, assert_refused

pytestmark = pytest.mark.django_db

GOOD = {"slug": "shop", "name": "Shop", "description": "", "tech_stack": "", "working_directory": ""}
CREATE_BAD_INPUTS = [
    # (case, changed fields, field, reason in en, reason in zh)
    ("slug missing", {"slug": ""}, "slug", "This field is required", "该字段是必填项"),
    ("slug malformed", {"slug": "Shop!"}, "slug", "lowercase letters", "小写字母"),
    ("slug too long", {"slug": "s" * 65}, "slug", "at most 64 characters", "不超过 64 字符"),
    ("name missing", {"name": "  "}, "name", "This field is required", "该字段是必填项"),
    ("name too long", {"name": "n" * 201}, "name", "at most 200 characters", "不超过 200 字符"),
    ("working directory relative", {"working_directory": "srv/shop"}, "working_directory", "absolute path", "绝对路径"),
]
EDIT_BAD_INPUTS = [
    ("name missing", {"name": ""}, "name", "This field is required", "该字段是必填项"),
    ("tech stack too long", {"tech_stack": "t" * 501}, "tech_stack", "at most 500 characters", "不超过 500 字符"),
    ("working directory root", {"working_directory": "/"}, "working_directory", "absolute path", "绝对路径"),
    ("member unknown", {"members": "nobody"}, "members", "there is no user 'nobody'", "there is no user 'nobody'"),
]


def refusals() -> int:
    return ConfigChange.every.filter(config_type="project", outcome="refused").count()


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize(
    ("case", "changed", "field", "en", "zh"), CREATE_BAD_INPUTS, ids=[r[0] for r in CREATE_BAD_INPUTS]
)
def test_a_bad_new_project_is_refused_next_to_its_field(page_client, builtin, language, case, changed, field, en, zh):
    posted = {**GOOD, "description": "kept words", **changed}
    response = page_client.post("/projects/", posted, HTTP_ACCEPT_LANGUAGE=LANGUAGES[language])
    assert_refused(response, field, en if language == "en" else zh)
    assert 'value="kept words"' in response.content.decode()
    assert not Project.objects.exists()
    assert refusals() == 1


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize(("case", "changed", "field", "en", "zh"), EDIT_BAD_INPUTS, ids=[r[0] for r in EDIT_BAD_INPUTS])
def test_a_bad_project_edit_is_refused_next_to_its_field(page_client, builtin, language, case, changed, field, en, zh):
    assert page_client.post("/projects/", GOOD).status_code == 302
    before = Project.objects.values().get()
    posted = {**GOOD, "description": "new words", "version": "1", **changed}
    del posted["slug"]
    response = page_client.post("/projects/shop/", posted, HTTP_ACCEPT_LANGUAGE=LANGUAGES[language])
    assert_refused(response, field, en if language == "en" else zh)
    assert 'value="new words"' in response.content.decode()  # what was typed, not the saved value
    assert Project.objects.values().get() == before
    assert refusals() == 1


def test_a_taken_slug_is_refused_in_both_languages(page_client, builtin):
    assert page_client.post("/projects/", GOOD).status_code == 302
    for language, reason in (("en", "already exists"), ("zh", "已存在")):
        response = page_client.post("/projects/", GOOD, HTTP_ACCEPT_LANGUAGE=LANGUAGES[language])
        assert_refused(response, "slug", reason)
    assert Project.objects.count() == 1
