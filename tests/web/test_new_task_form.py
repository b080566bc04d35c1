"""The new-requirement page's forms (``web.pages.tasks.NewTaskForm``): a bad input is refused
with a 400, the reason next to its field in the page's language, what was typed kept in the
form that was sent, and no task started."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from monitoring.models import Task
from tests.web.page_forms import LANGUAGES, assert_refused

pytestmark = pytest.mark.django_db

DOCUMENT = "# Shop\n\n## Requirements\n\n- Export orders.\n"
BAD_INPUTS = [
    # (case, posted, field, reason in en, reason in zh, a typed value the page keeps)
    ("idea missing", {"mode": "idea", "description": " "}, "description", "Write your idea", "一两行写下您的想法", ""),
    (
        "idea too long",
        {"mode": "idea", "description": "i" * 2001},
        "description",
        "at most 2000 characters",
        "不超过 2000 字符",
        "i" * 2001,
    ),
    (
        "project type unknown",
        {"mode": "idea", "description": "CSV export", "project_type": "spaceship"},
        "project_type",
        "Choose one of the listed project types",
        "请从列出的项目类型中选择一个",
        "CSV export",
    ),
    (
        "title too long",
        {"mode": "document", "title": "t" * 301, "input_markdown": DOCUMENT},
        "title",
        "at most 300 characters",
        "不超过 300 字符",
        "t" * 301,
    ),
    ("document empty", {"mode": "document", "input_markdown": "  "}, "input_markdown", "is empty", "文档为空", ""),
    (
        "decision mode wrong",
        {"mode": "document", "input_markdown": DOCUMENT, "decision_mode": "coinflip"},
        "decision_mode",
        "coinflip is not one of the available choices",
        "coinflip 不在可用的选项中",
        "Export orders.",
    ),
    (
        "project unknown",
        {"mode": "document", "input_markdown": DOCUMENT, "project": "ghost"},
        "project",
        "There is no project “ghost”",
        "没有项目“ghost”",
        "Export orders.",
    ),
]


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize(("case", "posted", "field", "en", "zh", "kept"), BAD_INPUTS, ids=[r[0] for r in BAD_INPUTS])
def test_a_bad_input_is_refused_next_to_its_field(page_client, builtin, language, case, posted, field, en, zh, kept):
    response = page_client.post("/tasks/new/", posted, HTTP_ACCEPT_LANGUAGE=LANGUAGES[language])
    assert_refused(response, field, en if language == "en" else zh)
    assert kept in response.content.decode()
    assert not Task.objects.exists()


def test_an_upload_over_the_limit_is_refused_next_to_the_file_field(page_client, builtin, settings):
    settings.TEAMCLAW = {**settings.TEAMCLAW, "MAX_DOCUMENT_BYTES": 10}
    for language, reason in (("en", "the limit is 10 bytes"), ("zh", "上限为 10 字节")):
        upload = SimpleUploadedFile("big.md", b"# " + b"x" * 40)
        posted = {"mode": "document", "document": upload, "title": "Mine"}
        response = page_client.post("/tasks/new/", posted, HTTP_ACCEPT_LANGUAGE=LANGUAGES[language])
        assert_refused(response, "document", reason)
        assert 'value="Mine"' in response.content.decode()
    assert not Task.objects.exists()


def test_a_document_the_review_refuses_is_shown_next_to_the_field_it_came_from(page_client, builtin):
    binary = SimpleUploadedFile("x.md", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    assert_refused(page_client.post("/tasks/new/", {"document": binary}), "document", "binary")
    pasted = page_client.post("/tasks/new/", {"input_markdown": DOCUMENT, "title": "Mine\u202e"})
    assert_refused(pasted, "title", "U+202E")
    assert not Task.objects.exists()
