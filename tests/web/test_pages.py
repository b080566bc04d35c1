"""The dashboard, the run-demo button and the review form (server-rendered pages)."""

from __future__ import annotations

from django.core.files.uploadedfile import SimpleUploadedFile

from monitoring.models import Task
from tests.helpers import wait_for_task


def test_dashboard_shows_the_team_with_emoji_names_and_capabilities(page_client, builtin):
    html = page_client.get("/").content.decode()
    # the roles' emoji are shipped pictures (🏗️, 🗄️: teamclaw/emoji_icons.yaml), with alt text
    for text in ('1f3d7.svg" alt="building under construction"', "Architect", "architecture_design"):
        assert text in html
    for text in ('1f5c4.svg" alt="file cabinet"', "schema_query", "AI Expert", "Run demo"):
        assert text in html
    assert "No tasks yet" in html


def test_the_dashboard_lists_only_instances_that_still_report(page_client, builtin):
    """An instance whose worker died is never recorded terminated: past the heartbeat timeout
    without a beat it is counted, not listed as active (found with kill -9 of a worker)."""
    from datetime import timedelta

    from django.utils import timezone

    from monitoring.models import AgentInstance

    now = timezone.now()
    for name, beat in (
        ("pm-live", now),
        ("pm-dead1", now - timedelta(minutes=5)),
        ("pm-dead2", now - timedelta(hours=1)),
    ):
        AgentInstance.objects.create(instance_id=name, role="pm", status="idle", created_at=beat, last_heartbeat=beat)
    AgentInstance.objects.create(
        instance_id="pm-gone", role="pm", status="terminated", created_at=now, last_heartbeat=now
    )
    # Flagged unhealthy by its live runtime (the same 90 s without a beat): listed, unavailable.
    late = now - timedelta(seconds=95)
    AgentInstance.objects.create(
        instance_id="pm-flagged", role="pm", status="busy", healthy=False, created_at=late, last_heartbeat=late
    )
    html = page_client.get("/").content.decode()
    assert "pm-live" in html and "pm-flagged" in html and "unavailable" in html
    assert "pm-dead1" not in html and "pm-dead2" not in html and "pm-gone" not in html
    assert "2 instances are not listed" in html
    chinese = page_client.get("/", HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert "有 2 个实例未列出" in chinese


def test_run_demo_starts_a_review_and_the_task_page_shows_its_artifacts(page_client, runtime_host):
    response = page_client.post("/tasks/demo/")
    assert response.status_code == 302
    task = Task.objects.get()
    assert response["Location"] == f"/tasks/{task.id}/"
    wait_for_task(runtime_host, task.id)
    html = page_client.get(response["Location"]).content.decode()
    assert "completed" in html
    assert "requirement_final.md" in html
    assert "review_dev.json" in html
    assert "offline executor" in html


def test_review_form_refuses_bad_uploads_with_the_reason(page_client, builtin):
    binary = SimpleUploadedFile("x.md", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    response = page_client.post("/tasks/new/", {"document": binary})
    assert response.status_code == 400
    assert "binary" in response.content.decode()
    response = page_client.post("/tasks/new/", {"input_markdown": "  "})
    assert response.status_code == 400
    assert "empty" in response.content.decode()
    latin1 = SimpleUploadedFile("x.md", "# Café crème".encode("latin-1"))
    response = page_client.post("/tasks/new/", {"document": latin1})
    assert "not UTF-8" in response.content.decode()
    assert not Task.objects.exists()


def test_review_form_keeps_what_was_typed_when_it_refuses(page_client, builtin):
    response = page_client.post("/tasks/new/", {"title": "Mine", "input_markdown": "x", "project": "ghost"})
    html = response.content.decode()
    assert response.status_code == 400
    assert "ghost" in html
    assert 'value="Mine"' in html


def test_task_page_escapes_document_content(page_client, runtime_host):
    response = page_client.post("/tasks/new/", {"input_markdown": "# <script>alert(1)</script>\n- must work"})
    task = Task.objects.get()
    wait_for_task(runtime_host, task.id)
    html = page_client.get(response["Location"]).content.decode()
    assert "<script>alert(1)</script>" not in html
    assert "&lt;script&gt;" in html


def test_role_and_capability_pages(page_client, builtin):
    html = page_client.get("/roles/dba/").content.decode()
    assert "schema_query" in html
    assert "database" in html
    assert "50000 tokens" in html
    assert page_client.get("/roles/ghost/").status_code == 404
    html = page_client.get("/capabilities/?q=schema").content.decode()
    assert "schema_query" in html
    assert "schema_design" in html
    assert "ui_design" not in html
    assert page_client.get("/capabilities/nope/").status_code == 404


def test_demo_runs_are_numbered_apart_in_the_operators_language(page_client, runtime_host):
    page_client.post("/tasks/demo/", HTTP_ACCEPT_LANGUAGE="en")
    page_client.post("/tasks/demo/", HTTP_ACCEPT_LANGUAGE="zh-hans")
    tasks = list(Task.objects.order_by("created_at"))
    for task in tasks:
        wait_for_task(runtime_host, task.id)
    titles = [task.title for task in tasks]
    assert titles[0] == "Demo 1: online bookstore order tracking"
    assert titles[1].startswith("演示 2")
    # each reviews the sample in the page's language, so a Chinese operator reads a Chinese outcome
    assert tasks[0].input_markdown.startswith("# Online bookstore")
    assert tasks[1].input_markdown.startswith("# 网上书店")
