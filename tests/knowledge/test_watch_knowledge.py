"""``manage.py watch_knowledge`` as a real process on this test's database (issue 15): it
catches up on what changed before it started, then re-indexes a project folder's files as
they are added, edited and deleted, and stops cleanly on SIGTERM."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from capabilities.models import Project
from knowledge.models import KnowledgeSource
from knowledge.search import search
from knowledge.sources import index_project_folder
from tests.processes import manage, process_env, wait_until


def found(text: str) -> set[str]:
    return {hit.chunk.source.path for hit in search(text, projects=["shop"])}


def test_the_watcher_keeps_a_folder_indexed(transactional_db, tmp_path: Path):
    root = tmp_path / "shop"
    root.mkdir()
    (root / "refunds.md").write_text("# Refunds\n\nRefunds are paid within fourteen days.")
    (root / "legacy.txt").write_text("The wombat exporter writes nightly spreadsheets.")
    Project.objects.create(slug="shop", name="Shop", working_directory=str(root))
    index_project_folder("shop", "full")
    (root / "early.md").write_text("# Early\n\nWritten before the watcher started: a platypus note.")

    watcher = manage("watch_knowledge", "--debounce-ms", "100", env=process_env(), log=tmp_path / "watch.log")
    try:
        wait_until(lambda: "Watching shop" in watcher.output(), 60, lambda: f"the watcher\n{watcher.output()}")
        assert "shop: 1 new, 0 changed, 0 removed, 2 unchanged" in watcher.output()  # the catch-up
        assert found("platypus") == {"early.md"}

        (root / "refunds.md").write_text("# Refunds\n\nRefunds are paid within thirty days by bank transfer.")
        (root / "docs").mkdir()
        (root / "docs" / "onboarding.md").write_text("# Onboarding\n\nNew staff pair with a quokka mentor.")
        (root / "legacy.txt").unlink()
        wait_until(
            lambda: found("quokka mentor") == {"docs/onboarding.md"} and found("wombat") == set(),
            60,
            lambda: f"the watcher to re-index\n{watcher.output()}",
        )
        wait_until(lambda: found("bank transfer") == {"refunds.md"}, 60, lambda: watcher.output())
        assert found("fourteen") == set()
        assert sorted(KnowledgeSource.objects.values_list("path", flat=True)) == [
            "docs/onboarding.md",
            "early.md",
            "refunds.md",
        ]
    finally:
        watcher.stop()
    assert watcher.process.returncode == 0, watcher.output()
    assert "Stopped watching." in watcher.output()


def test_the_watcher_refuses_what_it_cannot_watch(db, tmp_path: Path):
    with pytest.raises(CommandError, match="no project has folder sources yet"):
        call_command("watch_knowledge")
    with pytest.raises(CommandError, match="unknown project"):
        call_command("watch_knowledge", "--project", "nowhere")
    Project.objects.create(slug="shop", name="Shop", working_directory=str(tmp_path / "missing"))
    with pytest.raises(CommandError, match="does not exist"):
        call_command("watch_knowledge", "--project", "shop")
    with pytest.raises(CommandError, match="--debounce-ms"):
        call_command("watch_knowledge", "--debounce-ms", "5")


def test_a_file_name_that_is_not_utf8_is_skipped_and_watching_goes_on(transactional_db, tmp_path: Path):
    root = tmp_path / "shop"
    root.mkdir()
    (root / "refunds.md").write_text("# Refunds\n\nRefunds are paid within fourteen days.")
    Project.objects.create(slug="shop", name="Shop", working_directory=str(root))
    index_project_folder("shop", "full")
    with open(os.fsencode(root) + b"/bad\xffname.md", "wb") as handle:  # before it starts, as found later
        handle.write(b"# Bad\n\nA name that is not UTF-8.")

    watcher = manage("watch_knowledge", "--debounce-ms", "100", env=process_env(), log=tmp_path / "watch.log")
    try:
        wait_until(lambda: "Watching shop" in watcher.output(), 60, lambda: f"the watcher\n{watcher.output()}")
        assert "skipped bad\\xffname.md: the file name is not valid UTF-8" in watcher.output()
        (root / "later.md").write_text("# Later\n\nA numbat note written while watching.")
        wait_until(lambda: found("numbat") == {"later.md"}, 60, lambda: f"the watcher to go on\n{watcher.output()}")
    finally:
        watcher.stop()
    assert watcher.process.returncode == 0, watcher.output()
