"""Sources of a skill and of a project's folder (files under it only, links outside refused,
size and count limits), reStructuredText and code files, and re-indexing on demand at
another load level or after a file changed; through the services and the API."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from capabilities.models import Project, Skill
from knowledge import sources as knowledge_sources
from knowledge.chunking import chunk_document, chunk_language
from knowledge.models import KnowledgeChunk, KnowledgeSource
from knowledge.search import search
from knowledge.sources import Upload, add_source, index_project_folder, reindex_source
from teamclaw.errors import InvalidField

pytestmark = pytest.mark.django_db


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A project folder with documents, code, a hidden folder, a dependency folder, an
    unknown file type, and links inside and outside it."""
    root = tmp_path / "shop"
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "deploy.md").write_text("# Deploys\n\nDeploys happen on Tuesdays after the freeze.")
    (root / "docs" / "运维.md").write_text("# 备份\n\n数据库每晚两点备份，保留三十五天。", encoding="utf-8")
    (root / "guide.rst").write_text("Quokka guide\n============\n\nQuokkas are small marsupials.\n")
    (root / "app.py").write_text("# a comment, not a heading\ndef refund_order(order):\n    return order.total\n")
    (root / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    (root / ".git").mkdir()
    (root / ".git" / "HEAD.md").write_text("hidden")
    (root / "node_modules").mkdir()
    (root / "node_modules" / "lib.js").write_text("dependency")
    (root / "binary.txt").write_bytes(b"abc\x00def")
    outside = tmp_path / "secrets.md"
    outside.write_text("The root password is hunter2.")
    os.symlink(outside, root / "leak.md")
    os.symlink(root / "docs" / "deploy.md", root / "again.md")
    os.symlink(tmp_path, root / "up")
    return root


def test_a_project_folder_is_indexed_only_inside_it(folder: Path):
    Project.objects.create(slug="shop", name="Shop", working_directory=str(folder))
    done = index_project_folder("shop", "full")
    assert sorted(s.path for s in done.sources) == ["again.md", "app.py", "docs/deploy.md", "docs/运维.md", "guide.rst"]
    assert {s["path"]: s["reason"] for s in done.skipped} == {
        "leak.md": "a link pointing outside the project folder",
        "up": "a linked folder (not followed)",
        "binary.txt": "is a binary file (it holds NUL bytes); upload Markdown, text or HTML",
    }
    assert search("hunter2 password") == []  # nothing outside the folder was read
    kinds = {s.path: s.content_type for s in KnowledgeSource.objects.filter(project__slug="shop")}
    assert kinds["guide.rst"] == "rst" and kinds["app.py"] == "code" and kinds["docs/deploy.md"] == "md"
    assert {h.chunk.source.path for h in search("Tuesdays", projects=["shop"])} == {"docs/deploy.md", "again.md"}
    assert [h.chunk.source.path for h in search("数据库备份", projects=["shop"], k=1)] == ["docs/运维.md"]
    assert KnowledgeChunk.objects.get(source__path="guide.rst").heading == "Quokka guide"
    code = KnowledgeChunk.objects.get(source__path="app.py")
    assert code.heading == "app.py" and code.text.startswith("# a comment")
    assert all(s.byte_size > 0 and s.indexed_at is not None for s in done.sources)

    # indexing again replaces the folder's sources (no duplicates), in one transaction
    (folder / "docs" / "deploy.md").unlink()
    again = index_project_folder("shop", "basic")
    assert sorted(s.path for s in again.sources) == ["app.py", "docs/运维.md", "guide.rst"]
    assert KnowledgeSource.objects.filter(project__slug="shop").count() == 3
    assert search("Tuesdays", projects=["shop"]) == []


def test_folder_limits_are_reported_never_silent(folder: Path, monkeypatch):
    Project.objects.create(slug="shop", name="Shop", working_directory=str(folder))
    monkeypatch.setattr(knowledge_sources, "MAX_FOLDER_FILES", 2)
    done = index_project_folder("shop", "basic")
    assert len(done.sources) == 2
    # six files of known types: two indexed, four reported over the limit
    assert sum(s["reason"] == "over the limit of 2 files" for s in done.skipped) == 4


def test_a_folder_that_is_missing_or_a_project_that_is_not_is_refused(tmp_path: Path):
    Project.objects.create(slug="shop", name="Shop", working_directory=str(tmp_path / "nowhere"))
    with pytest.raises(InvalidField) as refused:
        index_project_folder("shop", None)
    assert refused.value.field == "project" and "does not exist" in refused.value.reason
    with pytest.raises(InvalidField) as unknown:
        index_project_folder("nope", None)
    assert unknown.value.errors == {"project": ["there is no project 'nope'"]}


def test_a_skill_owns_sources_and_only_one_owner_is_allowed():
    skill = Skill.objects.create(skill_id="weather", name="Weather", version="1.0.0")
    source = add_source(
        Upload("w.md", "text/markdown", b"Forecasts refresh every 15 minutes."),
        role=None,
        project=None,
        skill="weather",
        load_level="basic",
    )
    assert source.skill == skill
    assert [h.chunk.source_id for h in search("forecasts", skills=["weather"])] == [source.pk]
    assert search("forecasts", roles=["pm"], projects=[]) == []
    with pytest.raises(InvalidField) as both:
        add_source(Upload("x.md", "text/markdown", b"x y z"), role="pm", project=None, skill="weather", load_level="")
    assert both.value.errors == {"skill": ["give one of a role, a skill or a project, not role and skill"]}
    with pytest.raises(InvalidField) as unknown:
        add_source(Upload("x.md", "text/markdown", b"x y z"), role=None, project=None, skill="nope", load_level="")
    assert unknown.value.errors == {"skill": ["there is no skill 'nope'"]}


def test_reindex_an_upload_at_another_load_level_and_a_folder_file_after_it_changed(folder: Path):
    text = "\n\n".join(f"# Part {n}\n\nParagraph number {n} names token{n:03d}x." for n in range(30))
    source = add_source(Upload("big.md", "text/markdown", text.encode()), role="pm", project=None, load_level="basic")
    assert (source.chunk_count, source.total_chunks) == (20, 30)
    assert search("token029x", roles=["pm"]) == []  # beyond the first 20 chunks
    reindex_source(source, "full")
    assert (source.chunk_count, source.load_level) == (30, "full")
    assert KnowledgeChunk.objects.filter(source=source).count() == 30
    assert [h.chunk.heading for h in search("token029x", roles=["pm"])] == ["Part 29"]

    Project.objects.create(slug="shop", name="Shop", working_directory=str(folder))
    index_project_folder("shop", "basic")
    deploy = KnowledgeSource.objects.get(project__slug="shop", path="docs/deploy.md")
    (folder / "docs" / "deploy.md").write_text("# Deploys\n\nDeploys now happen on Thursdays.")
    reindex_source(deploy)
    assert [h.chunk.source.path for h in search("Thursdays", projects=["shop"])] == ["docs/deploy.md"]
    assert (
        search("Tuesdays freeze", projects=["shop"], k=5)[0].chunk.source.path == "again.md"
    )  # the link is its own copy
    (folder / "docs" / "deploy.md").unlink()
    with pytest.raises(InvalidField) as gone:
        reindex_source(deploy)
    assert gone.value.field == "path"


def test_chunk_languages_rst_and_code():
    assert chunk_language("Nightly backups of the database.") == "en"
    assert chunk_language("数据库每晚备份，保留 35 天 (PostgreSQL)。") == "zh"
    rst = chunk_document("=====\nTitle\n=====\n\nIntro.\n\nSub\n---\n\nBody.\n", "rst")
    assert [(c.heading, c.text) for c in rst] == [("Title", "Intro."), ("Sub", "Body.")]
    code = chunk_document("# not a heading\nx = 1\n\n\ny = 2\n", "code", name="a.py")
    assert [(c.heading, c.text) for c in code] == [("a.py", "# not a heading\nx = 1\n\ny = 2")]


def test_the_api_indexes_a_folder_reindexes_a_source_and_takes_a_skill(api, folder: Path):
    Project.objects.create(slug="shop", name="Shop", working_directory=str(folder))
    Skill.objects.create(skill_id="weather", name="Weather", version="1.0.0")
    indexed = api.post("/api/v1/knowledge/folders", {"project": "shop", "load_level": "full"}, format="json")
    assert indexed.status_code == 200, indexed.content
    body = indexed.json()
    assert body["count"] == 5 and body["folder"] == str(folder.resolve())
    assert {s["path"] for s in body["skipped"]} == {"leak.md", "up", "binary.txt"}
    first = body["sources"][0]
    assert first["origin"] == "folder" and first["project"] == "shop" and first["byte_size"] > 0
    assert first["indexed_at"]

    refused = api.post(f"/api/v1/knowledge/sources/{first['id']}/reindex", {"load_level": "most"}, format="json")
    assert refused.status_code == 400
    assert list(refused.json()["errors"]) == ["load_level"]
    again = api.post(f"/api/v1/knowledge/sources/{first['id']}/reindex", {"load_level": "basic"}, format="json")
    assert again.status_code == 200 and again.json()["load_level"] == "basic"
    assert api.post("/api/v1/knowledge/sources/999999/reindex", {}, format="json").status_code == 404

    upload = SimpleUploadedFile("w.md", b"Forecasts refresh every 15 minutes.", content_type="text/markdown")
    created = api.post("/api/v1/knowledge/sources", {"file": upload, "skill": "weather"}, format="multipart")
    assert created.status_code == 201 and created.json()["skill"] == "weather"
    listed = api.get("/api/v1/knowledge/sources", {"skill": "weather"}).json()
    assert [s["id"] for s in listed["sources"]] == [created.json()["id"]]
    found = api.get("/api/v1/knowledge/search", {"q": "forecasts refresh", "skill": "weather"}).json()["results"]
    assert [r["source"]["id"] for r in found] == [created.json()["id"]]
    missing = api.post("/api/v1/knowledge/folders", {}, format="json")
    assert missing.status_code == 400 and missing.json()["errors"] == {"project": ["a project is required"]}
