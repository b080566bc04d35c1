"""An operator edits a prompt with the live preview, compares two versions and rolls back
(Playwright + Debian Chromium; US-03, PRD §4.5)."""

from __future__ import annotations

from django.utils import timezone
from playwright.sync_api import expect

from capabilities.config import current_version
from monitoring.models import ExecutionContext, Task
from prompts.models import PromptVersion


def test_edit_a_prompt_compare_two_versions_and_roll_back(logged_in_page, live_server, builtin):
    page = logged_in_page
    original = PromptVersion.objects.get(template__role__role="pm", template__template_type="persona", is_active=True)

    # from the role page to the template's history
    page.goto(f"{live_server.url}/roles/pm/")
    page.click("text=manage prompts")
    page.click("#prompt-types >> text=persona")
    expect(page.locator("#shown-version-number")).to_have_text("1.0.0")

    # edit with the live preview
    page.click("#edit-prompt")
    page.fill("#id_content", "You are terse. Project: {{ project_name }}.\nAlways cite {{ source }}.")
    expect(page.locator("#preview-error")).to_contain_text("undefined variable 'source'")
    page.fill("#id_values", '{"source": "the PRD"}')
    expect(page.locator("#preview-text")).to_have_text("You are terse. Project: TeamClaw.\nAlways cite the PRD.")
    page.select_option("#id_bump", "minor")
    page.fill("#id_note", "terser persona")
    page.click("#save-button")
    # an undeclared variable would break the run: activation is refused, the form kept
    expect(page.locator("#content-error")).to_contain_text("'source' is used but not declared")
    expect(page.locator("#id_content")).to_have_value(
        "You are terse. Project: {{ project_name }}.\nAlways cite {{ source }}."
    )
    page.fill("#id_variables", '[{"name": "source", "default": "the PRD"}]')
    page.select_option("#id_bump", "minor")
    page.click("#save-button")
    expect(page.locator(".messages")).to_contain_text("persona 1.1.0 is active.")
    expect(page.locator("#shown-version-number")).to_have_text("1.1.0")
    expect(page.locator("#history tbody tr")).to_have_count(2)

    # compare the two versions side by side
    page.select_option("#compare-form #id_from", "1.0.0")
    page.select_option("#compare-form #id_to", "1.1.0")
    page.click("#compare-form button")
    expect(page.locator("table.diff ins").first).to_be_visible()
    expect(page.locator("table.diff")).to_contain_text("You are terse.")
    expect(page.locator("#diff-stats .added")).to_have_text("+2")

    # "diff with active" on the older row reads forwards in time too
    page.go_back()
    page.locator('#history tr[data-version="1.0.0"]').get_by_role("link", name="diff with active").click()
    expect(page.locator("#compare-form #id_from")).to_have_value("1.0.0")
    expect(page.locator("#compare-form #id_to")).to_have_value("1.1.0")
    expect(page.locator("#diff-stats .added")).to_have_text("+2")

    # roll back to 1.0.0 after confirming
    page.go_back()
    page.locator('#history tr[data-version="1.0.0"] .rollback-link').click()
    expect(page.locator("h1")).to_contain_text("Roll back persona to 1.0.0?")
    page.click("#confirm-button")
    expect(page.locator(".messages")).to_contain_text("Rolled back to 1.0.0: 1.1.1 is active.")
    expect(page.locator("#shown-version-number")).to_have_text("1.1.1")
    expect(page.locator("#shown-version")).to_contain_text("rollback to 1.0.0")
    expect(page.locator("#shown-content")).to_have_text(original.content)
    restored = PromptVersion.objects.get(template=original.template, is_active=True)
    assert (restored.version, restored.rollback_of, restored.content) == ("1.1.1", "1.0.0", original.content)


def test_the_impact_panel_is_visible_before_activating_a_draft(logged_in_page, live_server, builtin):
    page = logged_in_page
    pinned = current_version()
    task = Task.objects.create(id="t-impact", title="Review on the old persona", status="completed")
    Task.objects.filter(pk=task.pk).update(config_version=pinned, tokens_used=1234)
    now = timezone.now()
    ExecutionContext.objects.create(
        id="c-impact",
        task=task,
        instance_id="pm-1",
        role="pm",
        status="completed",
        total_tokens=600,
        config_version=pinned,
        created_at=now,
        updated_at=now,
    )

    page.goto(f"{live_server.url}/prompts/pm/persona/edit/")
    expect(page.locator("#impact")).to_contain_text("Review on the old persona")
    page.fill("#id_content", "A calmer persona.")
    page.click("#draft-button")
    expect(page.locator(".messages")).to_contain_text("persona 1.0.1 is saved as a draft.")

    page.locator('#history tr[data-version="1.0.1"]').get_by_role("link", name="activate…").click()
    panel = page.locator("#impact")
    expect(panel).to_be_visible()
    expect(panel.locator("#impact-replaces")).to_have_text("1.0.0")
    expect(panel.locator("#impact-tasks")).to_contain_text("Review on the old persona")
    expect(panel.locator("#impact-tasks")).to_contain_text("1234")
    expect(panel.locator("#impact-refusal")).to_have_count(0)
    assert panel.bounding_box()["y"] < page.locator("#confirm-button").bounding_box()["y"]
    page.click("#confirm-button")
    expect(page.locator(".messages")).to_contain_text("1.0.1 is active.")
