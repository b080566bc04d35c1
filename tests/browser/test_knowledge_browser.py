"""An operator uploads a Chinese and an English document on the knowledge page, sees each
with its chunks and load level, and finds each with the search box (the agents' search),
then re-indexes one at another load level (Playwright + Debian Chromium; seed 003
KnowledgeContext)."""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import expect

from knowledge.models import KnowledgeSource

ENGLISH = (
    "# Backups\n\nStaging database backups are kept for 35 days, then deleted.\n\n"
    "# Access\n\nOnly the DBA rotates keys."
)
CHINESE = "# 值班制度\n\n生产环境故障由值班工程师在十五分钟内响应。\n\n# 发布\n\n每周二下午发布新版本。"


def upload(page, path: Path, owner: str, level: str) -> None:
    page.set_input_files("#id_file", str(path))
    page.select_option("#id_owner", owner)
    page.select_option("#id_load_level", level)
    page.click("#upload-button")


def test_upload_a_chinese_and_an_english_document_and_find_each(logged_in_page, live_server, builtin, tmp_path):
    page = logged_in_page
    english, chinese = tmp_path / "ops-handbook.md", tmp_path / "值班手册.md"
    english.write_text(ENGLISH, encoding="utf-8")
    chinese.write_text(CHINESE, encoding="utf-8")

    page.goto(f"{live_server.url}/")
    page.click("nav .nav-more summary")  # the rarer pages sit under More
    page.click("nav >> text=Knowledge")
    expect(page.locator("#no-sources")).to_be_visible()
    upload(page, english, "role:devops", "full")
    expect(page.locator(".messages")).to_contain_text("ops-handbook.md indexed: 2 of 2 chunks.")
    upload(page, chinese, "role:pm", "basic")
    expect(page.locator(".messages")).to_contain_text("值班手册.md indexed: 2 of 2 chunks.")
    rows = page.locator("#source-table .source-row")
    expect(rows).to_have_count(2)
    devops = page.locator(".source-row", has_text="ops-handbook.md")
    expect(devops.locator(".source-chunks")).to_contain_text("2 / 2")
    expect(devops.locator(".source-level")).to_have_text("Full (every chunk)")
    expect(devops).to_contain_text("devops")

    # the English document answers an English question, among every source
    page.fill("#id_q", "How long are staging backups kept?")
    page.click("#search-button")
    first = page.locator("#search-results .knowledge-result").first
    expect(first.locator(".result-source")).to_have_text("ops-handbook.md")
    expect(first.locator(".result-heading")).to_have_text("Backups")
    expect(first.locator(".result-text")).to_contain_text("kept for 35 days")

    # the Chinese document answers a Chinese question (no spaces between words)
    page.fill("#id_q", "生产环境故障多久响应？")
    page.click("#search-button")
    first = page.locator("#search-results .knowledge-result").first
    expect(first.locator(".result-source")).to_have_text("值班手册.md")
    expect(first.locator(".result-text")).to_contain_text("十五分钟内响应")

    # scoped to devops, the Chinese question finds nothing; the English one still does
    page.select_option("#id_scope", "role:devops")
    page.click("#search-button")
    expect(page.locator("#no-results")).to_be_visible()

    # re-index the English source at the basic level
    devops = page.locator(".source-row", has_text="ops-handbook.md")
    devops.locator("select[name=load_level]").select_option("basic")
    devops.get_by_role("button", name="Re-index").click()
    expect(page.locator(".messages")).to_contain_text("ops-handbook.md re-indexed: 2 of 2 chunks.")
    assert KnowledgeSource.objects.get(name="ops-handbook.md").load_level == "basic"


def test_remove_asks_first_and_keeps_the_source_when_dismissed(logged_in_page, live_server, builtin, tmp_path):
    page = logged_in_page
    english = tmp_path / "ops-handbook.md"
    english.write_text(ENGLISH, encoding="utf-8")
    page.goto(f"{live_server.url}/knowledge/")
    upload(page, english, "role:devops", "full")
    expect(page.locator(".messages")).to_contain_text("ops-handbook.md indexed")
    asked: list[str] = []

    def dismiss(dialog) -> None:
        asked.append(dialog.message)
        dialog.dismiss()

    page.once("dialog", dismiss)
    page.locator(".source-row", has_text="ops-handbook.md").get_by_role("button", name="Remove").click()
    expect(page.locator("#source-table .source-row")).to_have_count(1)
    assert asked and "ops-handbook.md" in asked[0] and "2 chunks" in asked[0]
    assert KnowledgeSource.objects.filter(name="ops-handbook.md").exists()

    page.once("dialog", lambda dialog: dialog.accept())
    page.locator(".source-row", has_text="ops-handbook.md").get_by_role("button", name="Remove").click()
    expect(page.locator(".messages")).to_contain_text("ops-handbook.md removed.")
    assert not KnowledgeSource.objects.filter(name="ops-handbook.md").exists()
