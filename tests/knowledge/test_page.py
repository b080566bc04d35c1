"""The knowledge page without a browser: what it lists, a refused upload is a message (never a
500 or a half-stored source), a folder indexed from the page, writes need staff, the search
box scoped to one owner."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from capabilities.models import Project
from knowledge.models import KnowledgeSource
from knowledge.sources import Upload, add_source
from tests.web.page_forms import field_error

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff_client(client, staff_user):
    client.force_login(staff_user)
    return client


def test_the_page_lists_sources_per_owner_and_searches_one_scope(staff_client):
    add_source(
        Upload("ops.md", "text/markdown", b"# Backups\n\nKept for 35 days."),
        role="devops",
        project=None,
        load_level="full",
    )
    add_source(
        Upload("pm.md", "text/markdown", b"# Backups\n\nKept for 90 days."), role="pm", project=None, load_level="basic"
    )
    page = staff_client.get("/knowledge/").content.decode()
    assert "ops.md" in page and "pm.md" in page and "Full (every chunk)" in page
    scoped = staff_client.get("/knowledge/", {"q": "backups kept", "owner": "role:pm"}).content.decode()
    assert "Kept for 90 days." in scoped and "Kept for 35 days." not in scoped
    bad = staff_client.get("/knowledge/", {"q": "backups", "owner": "team:x"})
    assert bad.status_code == 400 and "choose a role, a skill or a project" in bad.content.decode()
    assert staff_client.get("/knowledge/", {"q": "backups", "k": "many"}).status_code == 400


def test_a_refused_upload_is_shown_next_to_its_field_and_stores_nothing(staff_client):
    binary = SimpleUploadedFile("x.md", b"a\x00b", content_type="text/markdown")
    response = staff_client.post("/knowledge/upload", {"file": binary, "owner": "role:pm"})
    assert response.status_code == 400
    assert "is a binary file" in field_error(response, "file")
    missing = staff_client.post("/knowledge/upload", {"owner": "role:pm"})
    assert missing.status_code == 400 and "Choose a file to upload" in field_error(missing, "file")
    assert KnowledgeSource.objects.count() == 0


def test_a_folder_indexed_from_the_page(staff_client, tmp_path: Path):
    (tmp_path / "README.md").write_text("# Shop\n\nThe shop sells quokka plushies.")
    Project.objects.create(slug="shop", name="Shop", working_directory=str(tmp_path))
    (tmp_path / "logo.md").write_bytes(b"\x89PNG\x00\x00")  # binary: skipped, and said so
    response = staff_client.post("/knowledge/folder", {"project": "shop", "load_level": "full"}, follow=True)
    assert "1 files indexed from" in response.content.decode()
    assert "Skipped: logo.md:" in response.content.decode()
    assert KnowledgeSource.objects.get().path == "README.md"
    (tmp_path / "more.md").write_text("# More\n\nQuokkas ship worldwide.")
    refreshed = staff_client.post("/knowledge/folder/shop/refresh", {"load_level": "full"}, follow=True)
    assert "1 new, 0 changed and 0 removed files re-indexed" in refreshed.content.decode()
    assert "Skipped: logo.md:" in refreshed.content.decode()


def test_writes_need_staff(client, viewer_user):
    client.force_login(viewer_user)
    assert client.get("/knowledge/").status_code == 200
    upload = SimpleUploadedFile("x.md", b"text", content_type="text/markdown")
    assert client.post("/knowledge/upload", {"file": upload, "owner": "role:pm"}).status_code == 403
    source = add_source(Upload("a.md", "text/markdown", b"words here"), role="pm", project=None, load_level="")
    assert client.post(f"/knowledge/{source.pk}/delete").status_code == 403
    assert client.post(f"/knowledge/{source.pk}/reindex", {"load_level": "full"}).status_code == 403
    assert KnowledgeSource.objects.filter(pk=source.pk).exists()
