"""Project folders that stay indexed (issue 15): after indexing, a file changed, one added,
one deleted and one only touched in a real folder are counted as such (service, API, page,
both languages), and "Re-index changed files" indexes exactly those in one transaction:
search then finds the new text and no longer finds the removed or replaced text."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from django.utils import translation

from capabilities.models import Project
from knowledge import folder_changes as changes_module
from knowledge.folder_changes import folder_changes, refresh_project_folder
from knowledge.models import KnowledgeChunk, KnowledgeSource
from knowledge.search import search
from knowledge.sources import index_project_folder
from teamclaw.errors import InvalidField

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _english():
    """Refusals are read in English (a request in Chinese earlier in the thread leaves its language)."""
    with translation.override("en"):
        yield


def sources() -> dict[str, KnowledgeSource]:
    return {s.path: s for s in KnowledgeSource.objects.filter(project__slug="shop")}


def found(text: str) -> set[str]:
    return {hit.chunk.source.path for hit in search(text, projects=["shop"])}


@pytest.fixture
def shop(tmp_path: Path) -> Path:
    """A project folder indexed once: four documents, then edited, extended, pruned, touched."""
    root = tmp_path / "shop"
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "deploy.md").write_text("# Deploys\n\nDeploys happen on Tuesdays after the freeze.")
    (root / "refunds.md").write_text("# Refunds\n\nRefunds are paid within fourteen days.")
    (root / "legacy.txt").write_text("The wombat exporter writes nightly spreadsheets.")
    (root / "touched.md").write_text("# Support\n\nSupport answers within one business day.")
    Project.objects.create(slug="shop", name="Shop", working_directory=str(root))
    assert len(index_project_folder("shop", "full").sources) == 4
    return root


def edit_the_folder(root: Path) -> None:
    """Change one file, add one, delete one, and only touch one (new time, same text)."""
    (root / "refunds.md").write_text("# Refunds\n\nRefunds are paid within thirty days by bank transfer.")
    (root / "docs" / "onboarding.md").write_text("# Onboarding\n\nNew staff pair with a quokka mentor.")
    (root / "legacy.txt").unlink()
    stat = (root / "touched.md").stat()
    os.utime(root / "touched.md", ns=(stat.st_atime_ns, stat.st_mtime_ns + 5_000_000_000))


def test_an_indexed_folder_records_each_file(shop: Path):
    recorded = sources()["refunds.md"]
    stat = (shop / "refunds.md").stat()
    assert (recorded.byte_size, recorded.file_mtime_ns) == (stat.st_size, stat.st_mtime_ns)
    assert len(recorded.content_sha256) == 64
    untouched = folder_changes(Project.objects.get(slug="shop"))
    assert untouched.counts() == {"new": 0, "changed": 0, "removed": 0, "unchanged": 4}
    assert not untouched.stale


def test_changes_are_counted_and_the_refresh_indexes_exactly_those(shop: Path):
    before = sources()
    kept_chunks = {
        p: list(KnowledgeChunk.objects.filter(source=s).values_list("pk", flat=True)) for p, s in before.items()
    }
    assert found("bank transfer") == set() and found("wombat exporter") == {"legacy.txt"}
    edit_the_folder(shop)

    changes = folder_changes(Project.objects.get(slug="shop"))
    assert (changes.new, changes.changed, changes.removed) == (["docs/onboarding.md"], ["refunds.md"], ["legacy.txt"])
    assert changes.counts() == {"new": 1, "changed": 1, "removed": 1, "unchanged": 2}
    assert changes.touched == ["touched.md"]  # its time moved, its text did not: not "changed"

    done = refresh_project_folder("shop")
    assert [s.path for s in done.added] == ["docs/onboarding.md"]
    assert [s.path for s in done.updated] == ["refunds.md"]
    assert done.removed == ["legacy.txt"] and done.skipped == [] and done.unchanged == 2

    after = sources()
    assert sorted(after) == ["docs/deploy.md", "docs/onboarding.md", "refunds.md", "touched.md"]
    for path in ("docs/deploy.md", "touched.md"):  # untouched by the refresh: same rows, same chunks
        assert after[path].pk == before[path].pk and after[path].indexed_at == before[path].indexed_at
        assert list(KnowledgeChunk.objects.filter(source=after[path]).values_list("pk", flat=True)) == kept_chunks[path]
    assert after["refunds.md"].pk == before["refunds.md"].pk  # the same source, cut again
    assert after["refunds.md"].indexed_at > before["refunds.md"].indexed_at
    assert after["docs/onboarding.md"].load_level == "full"  # the folder's level
    assert after["touched.md"].file_mtime_ns == (shop / "touched.md").stat().st_mtime_ns

    assert found("bank transfer") == {"refunds.md"}
    assert found("quokka mentor") == {"docs/onboarding.md"}
    assert found("wombat exporter") == set()
    assert found("fourteen") == set()  # the replaced text is gone from the index
    assert not folder_changes(Project.objects.get(slug="shop")).stale


def test_a_changed_file_that_cannot_be_indexed_any_more_loses_its_source(shop: Path):
    (shop / "refunds.md").write_bytes(b"now \x00 binary")
    assert folder_changes(Project.objects.get(slug="shop")).changed == ["refunds.md"]
    done = refresh_project_folder("shop")
    assert done.removed == ["refunds.md"]
    assert done.skipped == [
        {"path": "refunds.md", "reason": "is a binary file (it holds NUL bytes); upload Markdown, text or HTML"}
    ]
    assert "refunds.md" not in sources() and found("fourteen") == set()


def test_a_refresh_that_fails_midway_changes_nothing(shop: Path, monkeypatch):
    edit_the_folder(shop)
    before = {p: (s.pk, s.content_sha256) for p, s in sources().items()}
    real_store = changes_module.store_chunks
    calls = []

    def store_then_fail(source, chunks, vectors=None):
        calls.append(source.path)
        if len(calls) == 2:
            raise RuntimeError("disk full")
        real_store(source, chunks, vectors)

    monkeypatch.setattr(changes_module, "store_chunks", store_then_fail)
    with pytest.raises(RuntimeError):
        refresh_project_folder("shop")
    assert len(calls) == 2  # the first file was stored, then the second failed
    assert {p: (s.pk, s.content_sha256) for p, s in sources().items()} == before
    assert found("wombat exporter") == {"legacy.txt"} and found("bank transfer") == set()
    assert found("quokka mentor") == set()


def test_bad_refreshes_are_refused_naming_the_field(shop: Path, tmp_path: Path):
    with pytest.raises(InvalidField) as unknown:
        refresh_project_folder("nowhere")
    assert unknown.value.errors == {"project": ["there is no project 'nowhere'"]}
    with pytest.raises(InvalidField) as level:
        refresh_project_folder("shop", "huge")
    assert "load_level" in level.value.errors
    Project.objects.filter(slug="shop").update(working_directory=str(tmp_path / "gone"))
    gone = folder_changes(Project.objects.get(slug="shop"))
    assert not gone.folder_exists and gone.counts()["removed"] == 4
    with pytest.raises(InvalidField) as missing:
        refresh_project_folder("shop")
    assert "does not exist" in missing.value.errors["project"][0]
    assert len(sources()) == 4


def test_the_api_shows_the_changes_and_refreshes(api, shop: Path, viewer_user):
    edit_the_folder(shop)
    listed = api.get("/api/v1/knowledge/sources", {"project": "shop"}).json()
    [folder] = listed["folders"]
    assert folder["counts"] == {"new": 1, "changed": 1, "removed": 1, "unchanged": 2}
    assert folder["new"] == ["docs/onboarding.md"] and folder["stale"] is True
    states = {s["path"]: s["file_state"] for s in listed["sources"]}
    assert states == {
        "docs/deploy.md": "unchanged",
        "refunds.md": "changed",
        "legacy.txt": "removed",
        "touched.md": "unchanged",
    }
    assert api.get("/api/v1/knowledge/folders/shop").json()["counts"] == folder["counts"]
    assert api.get("/api/v1/knowledge/folders/nowhere").status_code == 404

    bad = api.post("/api/v1/knowledge/folders/shop/refresh", {"load_level": "huge"}, format="json")
    assert bad.status_code == 400 and "load_level" in bad.json()["errors"]
    unknown_key = api.post("/api/v1/knowledge/folders/shop/refresh", {"level": "full"}, format="json")
    assert unknown_key.status_code == 400 and "level" in unknown_key.json()["errors"]
    assert len(sources()) == 4  # nothing was applied by the refused requests

    done = api.post("/api/v1/knowledge/folders/shop/refresh", {}, format="json")
    assert done.status_code == 200, done.json()
    body = done.json()
    assert body["counts"] == {"added": 1, "updated": 1, "removed": 1, "skipped": 0, "unchanged": 2}
    assert [s["path"] for s in body["added"]] == ["docs/onboarding.md"] and body["removed"] == ["legacy.txt"]
    assert api.get("/api/v1/knowledge/folders/shop").json()["stale"] is False
    hits = api.get("/api/v1/knowledge/search", {"q": "quokka mentor", "project": "shop"}).json()["results"]
    assert [h["source"]["path"] for h in hits] == ["docs/onboarding.md"]

    api.force_authenticate(viewer_user)
    assert api.post("/api/v1/knowledge/folders/shop/refresh", {}, format="json").status_code == 403


def test_the_page_shows_the_changes_and_refreshes(client, staff_user, shop: Path):
    client.force_login(staff_user)
    edit_the_folder(shop)
    page = client.get("/knowledge/").content.decode()
    assert 'id="folder-changes"' in page and "Re-index changed files" in page
    assert '<td class="folder-new" title="docs/onboarding.md">1</td>' in page
    assert '<td class="folder-changed" title="refunds.md">1</td>' in page
    assert '<td class="folder-removed" title="legacy.txt">1</td>' in page
    assert "changed since indexed" in page and "file removed" in page
    chinese = client.get("/knowledge/", HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert "重新索引已变更的文件" in chinese and "项目文件夹" in chinese

    response = client.post("/knowledge/folder/shop/refresh", follow=True)
    text = response.content.decode()
    assert "1 new, 1 changed and 1 removed files re-indexed" in text
    assert "up to date" in text and "Re-index changed files" not in text
    assert found("quokka mentor") == {"docs/onboarding.md"} and found("wombat exporter") == set()
