"""Project folders an adversary fills (issue 15 findings): a file name that is not UTF-8, an
edit between a refresh's check and its recording, a huge folder, links and files indexing
refuses, a hard link, a path too long to keep. Each is skipped with its reason everywhere
(indexing, changes, refresh, the API, the page), never a 500, and never makes the folder
stale for ever; real folders, real SQLite."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from django.utils import translation

from capabilities.models import Project
from knowledge import folder_changes as changes_module
from knowledge import sources as sources_module
from knowledge.folder_changes import PEEK_BYTES, folder_changes, refresh_project_folder
from knowledge.models import KnowledgeSource
from knowledge.sources import PATH_LENGTH, folder_files, index_project_folder, reindex_source
from teamclaw.errors import InvalidField

pytestmark = pytest.mark.django_db

BAD_NAME = "bad\\xffname.md"
"""How the file ``b'bad\\xffname.md'`` is shown."""


@pytest.fixture(autouse=True)
def _english():
    with translation.override("en"):
        yield


def paths() -> set[str]:
    return set(KnowledgeSource.objects.filter(project__slug="shop").values_list("path", flat=True))


@pytest.fixture
def shop(tmp_path: Path) -> Path:
    root = tmp_path / "shop"
    root.mkdir()
    (root / "refunds.md").write_text("# Refunds\n\nRefunds are paid within fourteen days.")
    Project.objects.create(slug="shop", name="Shop", working_directory=str(root))
    return root


def add_bad_name(root: Path) -> None:
    """A file whose name is not valid UTF-8 (``os.walk`` gives it as surrogates)."""
    with open(os.fsencode(root) + b"/bad\xffname.md", "wb") as handle:
        handle.write(b"# Bad\n\nA name that is not UTF-8.")


def reasons(skipped: list[dict[str, str]]) -> dict[str, str]:
    return {s["path"]: s["reason"] for s in skipped}


def test_a_name_that_is_not_utf8_is_skipped_everywhere(shop: Path, api, client, staff_user):
    add_bad_name(shop)
    done = index_project_folder("shop", "full")
    assert reasons(done.skipped) == {BAD_NAME: "the file name is not valid UTF-8"}
    assert paths() == {"refunds.md"}
    changes = folder_changes(Project.objects.get(slug="shop"))
    assert not changes.stale and reasons(changes.skipped) == {BAD_NAME: "the file name is not valid UTF-8"}
    refreshed = refresh_project_folder("shop")
    assert reasons(refreshed.skipped) == {BAD_NAME: "the file name is not valid UTF-8"} and not refreshed.added

    folder = api.get("/api/v1/knowledge/folders/shop")
    assert folder.status_code == 200 and folder.json()["skipped"][0]["path"] == BAD_NAME
    assert api.get("/api/v1/knowledge/sources").status_code == 200
    refresh = api.post("/api/v1/knowledge/folders/shop/refresh", {}, format="json")
    assert refresh.status_code == 200 and refresh.json()["skipped"][0]["reason"] == "the file name is not valid UTF-8"
    indexed = api.post("/api/v1/knowledge/folders", {"project": "shop"}, format="json")
    assert indexed.status_code == 200 and indexed.json()["skipped"][0]["path"] == BAD_NAME
    client.force_login(staff_user)
    page = client.get("/knowledge/")
    assert page.status_code == 200 and BAD_NAME in page.content.decode()
    chinese = client.get("/knowledge/", HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert "文件名不是有效的 UTF-8" in chinese


def test_a_folder_whose_name_is_not_utf8_is_not_opened(shop: Path):
    bad = os.fsencode(shop) + b"/bad\xffdir"
    os.mkdir(bad)
    with open(bad + b"/inside.md", "wb") as handle:
        handle.write(b"# Inside\n\ntext")
    listing = folder_files(shop.resolve())
    assert [p.name for p in listing.files] == ["refunds.md"]
    assert reasons(listing.skipped) == {"bad\\xffdir": "the folder name is not valid UTF-8"}


def test_an_edit_between_the_check_and_the_recording_is_seen_next_time(shop: Path, monkeypatch):
    index_project_folder("shop", "full")
    file = shop / "refunds.md"
    stat = file.stat()
    os.utime(file, ns=(stat.st_atime_ns, stat.st_mtime_ns + 5_000_000_000))  # touched, same text
    level_for = changes_module._folder_level

    def edit_then_level(indexed, load_level):  # runs after the check, before the recording
        file.write_text("# Refunds\n\nRefunds are paid within NINETY days.")
        return level_for(indexed, load_level)

    monkeypatch.setattr(changes_module, "_folder_level", edit_then_level)
    first = refresh_project_folder("shop")
    assert first.updated == [] and first.unchanged == 1  # the check saw a touched file
    monkeypatch.setattr(changes_module, "_folder_level", level_for)
    assert folder_changes(Project.objects.get(slug="shop")).changed == ["refunds.md"]
    assert [s.path for s in refresh_project_folder("shop").updated] == ["refunds.md"]
    assert "NINETY" in KnowledgeSource.objects.get(path="refunds.md").document


def test_a_huge_folder_is_looked_at_only_up_to_the_bound(shop: Path, monkeypatch, client, staff_user):
    index_project_folder("shop", "full")
    for n in range(4):
        sub = shop / f"part{n}"
        sub.mkdir()
        for m in range(5):
            (sub / f"note{m}.md").write_text(f"# Note {n}.{m}\n\ntext")
    monkeypatch.setattr(sources_module, "MAX_FOLDER_ENTRIES", 8)
    changes = folder_changes(Project.objects.get(slug="shop"))
    # the top folder (5 entries) and one sub-folder (5) would pass 8: only the top is looked at
    assert changes.truncated and changes.new == [] and changes.not_looked_at == 20
    assert changes.unchanged == 1 and changes.removed == []
    body = changes.as_dict()
    assert body["truncated"] is True and body["not_looked_at"] == 20
    client.force_login(staff_user)
    page = client.get("/knowledge/").content.decode()
    assert "the look stopped there and 20 entries were not looked at" in page
    chinese = client.get("/knowledge/", HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert "查看到此为止，有 20 个条目未查看" in chinese


def test_the_changes_read_nothing_past_the_byte_budget(shop: Path, monkeypatch):
    index_project_folder("shop", "full")
    (shop / "new.md").write_text("# New\n\nA new file.")
    stat = (shop / "refunds.md").stat()
    os.utime(shop / "refunds.md", ns=(stat.st_atime_ns, stat.st_mtime_ns + 5_000_000_000))
    read: list[str] = []
    real_read = changes_module.read_folder_file

    def counting(root, path, what):
        read.append(path.name)
        return real_read(root, path, what)

    monkeypatch.setattr(changes_module, "read_folder_file", counting)
    monkeypatch.setattr(sources_module, "read_folder_file", counting)
    changes = folder_changes(Project.objects.get(slug="shop"))
    # the touched file is read and hashed; the new one only peeked at (its first PEEK_BYTES)
    assert read == ["refunds.md"] and changes.touched == ["refunds.md"] and changes.new == ["new.md"]
    read.clear()
    monkeypatch.setattr(changes_module, "MAX_FOLDER_BYTES", 0)
    changes = folder_changes(Project.objects.get(slug="shop"))
    assert read == [] and changes.changed == ["refunds.md"] and changes.new == ["new.md"]


def test_the_absolute_folder_is_shown_to_staff_only(shop: Path, api, viewer_user, client):
    index_project_folder("shop", "full")
    assert api.get("/api/v1/knowledge/folders/shop").json()["folder"] == str(shop.resolve())
    Project.objects.get(slug="shop").members.add(viewer_user)  # shop's knowledge is theirs to read
    api.force_authenticate(viewer_user)
    assert api.get("/api/v1/knowledge/folders/shop").json()["folder"] is None
    assert api.get("/api/v1/knowledge/sources").json()["folders"][0]["folder"] is None
    client.force_login(viewer_user)
    assert str(shop.resolve()) not in client.get("/knowledge/").content.decode()


def test_links_outside_are_reported_by_the_changes_and_the_refresh(shop: Path, tmp_path: Path):
    index_project_folder("shop", "full")
    (tmp_path / "secret.md").write_text("# Secret\n\nkeep out")
    (shop / "outside.md").symlink_to(tmp_path / "secret.md")
    (shop / "broken.md").symlink_to(tmp_path / "nowhere.md")
    expected = {"outside.md": "a link pointing outside the project folder", "broken.md": "a broken link"}
    changes = folder_changes(Project.objects.get(slug="shop"))
    assert reasons(changes.skipped) == expected and not changes.stale
    assert reasons(refresh_project_folder("shop").skipped) == expected


def test_files_indexing_refuses_are_skipped_not_new(shop: Path):
    index_project_folder("shop", "full")
    (shop / "binary.md").write_bytes(b"# Bin\x00ary")
    (shop / "latin1.txt").write_bytes("café".encode("latin-1"))
    (shop / "empty.md").write_text("")
    (shop / "heading.md").write_text("# \n## \n")  # headings with nothing in them
    (shop / "big-binary.txt").write_bytes(b"\x00" * (PEEK_BYTES * 3))  # seen from its first bytes
    expected = {"binary.md", "latin1.txt", "empty.md", "heading.md", "big-binary.txt"}
    for _ in range(2):  # after a refresh as before it
        changes = folder_changes(Project.objects.get(slug="shop"))
        assert changes.new == [] and not changes.stale
        assert {s["path"] for s in changes.skipped} == expected
        done = refresh_project_folder("shop")
        assert done.added == [] and {s["path"] for s in done.skipped} == expected
    assert paths() == {"refunds.md"}


def test_a_hard_linked_file_is_refused(shop: Path, tmp_path: Path):
    (tmp_path / "elsewhere.md").write_text("# Elsewhere\n\nprivate notes outside the folder")
    os.link(tmp_path / "elsewhere.md", shop / "linked.md")
    done = index_project_folder("shop", "full")
    assert reasons(done.skipped) == {"linked.md": "a hard-linked file"} and paths() == {"refunds.md"}
    assert reasons(folder_changes(Project.objects.get(slug="shop")).skipped) == {"linked.md": "a hard-linked file"}
    # a source whose file becomes a hard link is refused when cut again
    os.link(shop / "refunds.md", tmp_path / "copy.md")
    with pytest.raises(InvalidField) as refused:
        reindex_source(KnowledgeSource.objects.get(path="refunds.md"))
    assert refused.value.field == "path" and "hard-linked" in refused.value.reason


def test_a_path_too_long_to_keep_is_skipped(shop: Path):
    deep = shop
    while len(deep.relative_to(shop).as_posix()) < PATH_LENGTH - 200:
        deep = deep / ("d" * 200)
    deep.mkdir(parents=True)
    (deep / ("n" * 240 + ".md")).write_text("# Deep\n\ntext")
    done = index_project_folder("shop", "full")
    [skipped] = done.skipped
    assert len(skipped["path"]) > PATH_LENGTH
    assert skipped["reason"] == f"the path is longer than {PATH_LENGTH} characters"
    assert paths() == {"refunds.md"}
