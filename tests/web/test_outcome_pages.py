"""What came of a requirement_review, as the lists and the task page show it (seed 002
outcome): a run with findings never looks like a clean pass; a task waiting for its operator
says so; diffs of drafts, and a diff too large to compute, are refused in time."""

from __future__ import annotations

import json
from datetime import timedelta

from django.utils import timezone

from monitoring.models import Artifact, Task, ToolConfirmation
from runs.compare import MAX_DIFF_INPUT_LINES, text_diff


def add_artifact(**fields) -> Artifact:
    return Artifact.objects.create(created_at=timezone.now(), **fields)


def review_task(task_id: str, outcome: dict | None, status: str = "completed") -> Task:
    task = Task.objects.create(
        id=task_id, kind="task", workflow="requirement_review", title=f"Task {task_id}", status=status
    )
    if outcome is not None:
        add_artifact(task=task, name="outcome.json", content=json.dumps(outcome), role="main")
    return task


def test_the_task_list_tells_findings_from_a_clean_pass_and_shows_who_waits(page_client, builtin):
    review_task("t-clean", {"phase": "review", "clean": True})
    review_task("t-findings", {"phase": "review", "clean": False})
    review_task("t-draft", {"phase": "draft", "clean": False})
    waiting = review_task("t-waiting", None, status="running")
    now = timezone.now()
    ToolConfirmation.objects.create(
        id="in-1",
        context_id="c",
        instance_id="main-1",
        role="main",
        task_id=waiting.id,
        kind="input",
        tool="interview",
        args={"questions": []},
        created_at=now,
        expires_at=now + timedelta(hours=24),
    )
    for url in ("/tasks/", "/"):
        html = page_client.get(url).content.decode()
        row = {t: html.split(f"/tasks/{t}/", 1)[1].split("</tr>", 1)[0] for t in ("t-clean", "t-findings", "t-draft")}
        assert "completed with findings" in row["t-findings"] and "clean pass" not in row["t-findings"]
        assert "clean pass" in row["t-clean"] and "findings" not in row["t-clean"]
        assert "draft only" in row["t-draft"]
        assert "waiting for you" in html.split("/tasks/t-waiting/", 1)[1].split("</tr>", 1)[0]


def test_a_diff_too_large_to_compute_is_refused_not_computed(page_client, builtin):
    big = "\n".join(f"- line {n}" for n in range(MAX_DIFF_INPUT_LINES + 5))
    assert text_diff(big, big[::-1], "a", "b") == ([], True)
    lines, truncated = text_diff("# A\n- one\n", "# A\n- one\n- two\n", "a", "b")
    assert "+- two" in lines and not truncated
    task = review_task("t-big", None)
    add_artifact(task=task, name="requirement.md", content=big, role="pm")
    add_artifact(task=task, name="requirement_final.md", content=big + "\n- more", role="consolidator")
    html = page_client.get("/tasks/t-big/diff/?a=requirement.md&b=requirement_final.md").content.decode()
    assert "Too large to compare here" in html and "The two are the same" not in html
    missing = page_client.get("/tasks/t-big/diff/?a=requirement.md&b=nope.md")
    assert missing.status_code == 404


def test_a_markdown_artifact_is_rendered_sanitised_and_downloads_with_its_type(page_client, builtin):
    task = review_task("t-md", None)
    add_artifact(
        task=task,
        name="requirement_final.md",
        content="# 标题\n\n- 必须 <script>alert(1)</script>\n\n[x](javascript:alert(1))",
        content_type="text/markdown",
        role="consolidator",
    )
    html = page_client.get("/tasks/t-md/").content.decode()
    assert "<h1>标题</h1>" in html
    assert "<script>alert(1)</script>" not in html and 'href="javascript' not in html
    response = page_client.get("/tasks/t-md/artifacts/requirement_final.md?download=1")
    assert response["Content-Type"] == "text/markdown; charset=utf-8"
    assert response["Content-Disposition"].startswith("attachment;")
    assert "必须" in response.content.decode()


def test_the_diff_heading_names_the_documents_in_words(page_client, builtin):
    """ "修订后的最终文档，第 1 版", not the file names, heads the diff in Chinese; the file names
    stay below in small print."""
    task = review_task("t-names", None)
    add_artifact(task=task, name="requirement_final.md", content="# A\n- one\n", role="consolidator")
    add_artifact(task=task, name="requirement_final.r1.md", content="# A\n- one\n- two\n", role="operator")
    url = "/tasks/t-names/diff/?a=requirement_final.md&b=requirement_final.r1.md"
    page_client.cookies["django_language"] = "zh-hans"
    heading = page_client.get(url).content.decode().split("<h1>", 1)[1].split("</h1>", 1)[0]
    assert heading == "最终文档 → 修订后的最终文档，第 1 版"
    page_client.cookies["django_language"] = "en"
    html = page_client.get(url).content.decode()
    assert "<h1>Final document → Revised final document, version 1</h1>" in html
    assert "<code>requirement_final.r1.md</code>" in html
