"""The knowledge page's upload form (``web.pages.knowledge.KnowledgeUploadForm``): a bad
input shows the page again with a 400, the reason next to its field in the page's language
and what was typed; nothing is stored."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from knowledge.models import KnowledgeSource
from tests.web.page_forms import LANGUAGES, assert_refused

pytestmark = pytest.mark.django_db


def text_file() -> SimpleUploadedFile:
    return SimpleUploadedFile("notes.md", b"# Backups\n\nKept for 35 days.", content_type="text/markdown")


BAD_INPUTS = [
    # (case, posted without the file, with a file, field, reason in en, reason in zh)
    (
        "file missing",
        {"owner": "role:pm", "name": "kept"},
        False,
        "file",
        "Choose a file to upload",
        "请选择要上传的文件",
    ),
    (
        "owner missing",
        {"name": "kept"},
        True,
        "owner",
        "Choose a role, a skill or a project",
        "请选择一个角色、技能或项目",
    ),
    ("owner unknown", {"owner": "team:x", "name": "kept"}, True, "owner", "Choose a role, a skill", "请选择一个角色"),
    ("load level unknown", {"owner": "role:pm", "load_level": "all", "name": "kept"}, True, "load_level", "all", "all"),
    (
        "name too long",
        {"owner": "role:pm", "name": "n" * 201},
        True,
        "name",
        "at most 200 characters",
        "不超过 200 字符",
    ),
]


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize(
    ("case", "posted", "with_file", "field", "en", "zh"), BAD_INPUTS, ids=[r[0] for r in BAD_INPUTS]
)
def test_a_bad_upload_is_refused_next_to_its_field(
    page_client, builtin, language, case, posted, with_file, field, en, zh
):
    data = {**posted, **({"file": text_file()} if with_file else {})}
    response = page_client.post("/knowledge/upload", data, HTTP_ACCEPT_LANGUAGE=LANGUAGES[language])
    assert_refused(response, field, en if language == "en" else zh)
    assert f'value="{posted["name"]}"' in response.content.decode()
    assert not KnowledgeSource.objects.exists()


def test_a_binary_file_is_refused_next_to_the_file_field(page_client, builtin):
    binary = SimpleUploadedFile("x.md", b"a\x00b", content_type="text/markdown")
    response = page_client.post("/knowledge/upload", {"file": binary, "owner": "role:pm", "name": "kept"})
    assert_refused(response, "file", "binary")
    assert 'value="kept"' in response.content.decode()
    assert not KnowledgeSource.objects.exists()
