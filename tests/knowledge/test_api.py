"""The knowledge API: upload (multipart), list, delete and search; every bad input is a 400
naming its field in the project's error shape; writes need staff."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from capabilities.models import Project
from knowledge.models import KnowledgeChunk, KnowledgeSource
from knowledge.sources import MAX_SOURCE_BYTES
from tests.knowledge.helpers import DATA, librarian

URL = "/api/v1/knowledge/sources"


def md(
    name: str = "notes.md", content: bytes = b"# Backups\n\nStaging backups are kept for 35 days."
) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, content, content_type="text/markdown")


@pytest.fixture
def role(db):
    return librarian()


def test_upload_list_search_delete(api, role):
    Project.objects.create(slug="kb", name="KB")
    html = SimpleUploadedFile("security.html", (DATA / "security.html").read_bytes(), content_type="text/html")
    created = api.post(URL, {"file": html, "role": "librarian", "load_level": "full"}, format="multipart")
    assert created.status_code == 201, created.json()
    body = created.json()
    assert body["name"] == "security.html" and body["role"] == "librarian" and body["project"] is None
    assert body["content_type"] == "html" and body["load_level"] == "full" and body["uploaded_by"] == "operator"
    assert body["chunk_count"] == KnowledgeChunk.objects.filter(source_id=body["id"]).count() > 0
    other = api.post(URL, {"file": md(), "project": "kb"}, format="multipart").json()
    assert other["load_level"] == "basic" and other["project"] == "kb"

    assert api.get(URL).json()["count"] == 2
    assert [s["id"] for s in api.get(URL, {"role": "librarian"}).json()["sources"]] == [body["id"]]
    assert [s["id"] for s in api.get(URL, {"project": "kb"}).json()["sources"]] == [other["id"]]

    found = api.get("/api/v1/knowledge/search", {"q": "critical vulnerability patched", "role": "librarian", "k": 2})
    assert found.status_code == 200
    results = found.json()["results"]
    assert 1 <= len(results) <= 2
    assert results[0]["source"] == {"id": body["id"], "name": "security.html", "path": ""}
    assert "72 hours" in results[0]["chunk"]["text"] and results[0]["score"] > 0
    assert "alert(" not in " ".join(r["chunk"]["text"] for r in results)
    zh = api.get("/api/v1/knowledge/search", {"q": "备份"}).json()["results"]
    assert zh == []
    assert (
        api.get("/api/v1/knowledge/search", {"q": "staging backups", "project": "kb"}).json()["results"][0]["source"][
            "name"
        ]
        == "notes.md"
    )

    assert api.delete(f"{URL}/{body['id']}").status_code == 204
    assert api.delete(f"{URL}/{body['id']}").status_code == 404
    assert not KnowledgeChunk.objects.filter(source_id=body["id"]).exists()


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"role": "librarian"}, "file"),
        ({"file": "not a file", "role": "librarian"}, "file"),
        ({"file": md(), "role": "librarian", "project": "kb"}, "project"),
        ({"file": md()}, "role"),
        ({"file": md(), "role": "nobody"}, "role"),
        ({"file": md(), "project": "nowhere"}, "project"),
        ({"file": md(), "role": "librarian", "load_level": "huge"}, "load_level"),
        ({"file": md("a.bin", b"\x89PNG\r\n\x1a\n\x00\x00"), "role": "librarian"}, "file"),
        ({"file": md("a.md", b"\x00binary"), "role": "librarian"}, "file"),
        ({"file": md("a.md", "caf\u00e9".encode("latin-1")), "role": "librarian"}, "file"),
        ({"file": md("a.md", b"x" * (MAX_SOURCE_BYTES + 1)), "role": "librarian"}, "file"),
        ({"file": md("a.md", b"   \n\n  "), "role": "librarian"}, "file"),
        ({"file": md(), "role": "librarian", "colour": "red"}, "colour"),
    ],
)
def test_bad_uploads_are_400_naming_the_field(api, role, data, field):
    Project.objects.create(slug="kb", name="KB")
    response = api.post(URL, data, format="multipart")
    assert response.status_code == 400, response.json()
    body = response.json()
    assert set(body) >= {"detail", "errors"} and field in body["errors"], body
    assert not KnowledgeSource.objects.exists()


def test_bad_searches_are_400(api, role):
    assert "q" in api.get("/api/v1/knowledge/search").json()["errors"]
    assert "k" in api.get("/api/v1/knowledge/search", {"q": "x", "k": "0"}).json()["errors"]
    assert "k" in api.get("/api/v1/knowledge/search", {"q": "x", "k": "many"}).json()["errors"]


def test_writes_need_staff_and_reads_a_login(viewer_user, role):
    client = APIClient()
    assert client.get(URL).status_code in (401, 403)
    client.force_authenticate(viewer_user)
    assert client.get(URL).status_code == 200
    assert client.get("/api/v1/knowledge/search", {"q": "backups"}).status_code == 200
    assert client.post(URL, {"file": md(), "role": "librarian"}, format="multipart").status_code == 403
    assert not KnowledgeSource.objects.exists()
