"""Issue 32 "the web layer the Django way": the knowledge page's folder form and the
re-index forms are Django forms (``web.pages.knowledge.FolderForm``, ``LoadLevelForm``): a
refused choice is a 400 with the reason next to its field, what was chosen kept, in the
page's language; nothing is indexed."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from capabilities.models import Project
from knowledge.models import KnowledgeSource
from knowledge.sources import Upload, add_source
from tests.web.page_forms import field_error

pytestmark = pytest.mark.django_db


def test_an_unknown_project_is_refused_next_to_its_field_and_the_level_kept(page_client, tmp_path: Path):
    Project.objects.create(slug="shop", name="Shop", working_directory=str(tmp_path))
    response = page_client.post("/knowledge/folder", {"project": "nope", "load_level": "full"})
    assert response.status_code == 400
    assert "Choose one of the projects listed" in field_error(response, "project")
    html = response.content.decode()
    level = re.search(r'<select id="id_folder_level".*?</select>', html, re.S).group(0)
    assert '<option value="full" selected>' in level
    assert KnowledgeSource.objects.count() == 0


def test_a_missing_folder_is_refused_next_to_the_project_in_chinese(page_client, tmp_path: Path):
    Project.objects.create(slug="shop", name="网店", working_directory=str(tmp_path / "gone"))
    response = page_client.post(
        "/knowledge/folder", {"project": "shop", "load_level": "advanced"}, HTTP_ACCEPT_LANGUAGE="zh-hans"
    )
    assert response.status_code == 400
    reason = field_error(response, "project")
    assert "gone" in reason and re.search(r"[\u4e00-\u9fff]", reason)
    assert '<option value="shop" selected>' in response.content.decode()


def test_a_reindex_at_an_unknown_level_is_refused_and_changes_nothing(page_client):
    source = add_source(
        Upload("ops.md", "text/markdown", b"# Backups\n\nKept."), role="devops", project=None, load_level="basic"
    )
    response = page_client.post(f"/knowledge/{source.pk}/reindex", {"load_level": "huge"}, follow=True)
    assert "Choose one of the load levels" in response.content.decode()
    source.refresh_from_db()
    assert source.load_level == "basic"
