"""Token statistics (US-11): the API and the page match the sum of recorded usage."""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, datetime, timedelta

import pytest
from django.db.models import Sum
from django.test import Client

from capabilities.models import Project
from monitoring.models import ExecutionContext, Task
from runs.tasks import start_task
from tests.helpers import wait_for_task


@pytest.fixture
def two_tasks(runtime_host, staff_user) -> list[Task]:
    project = Project.objects.create(slug="shop", name="Shop")
    first = start_task(workflow="generic", task_description="Plan the checkout", user=staff_user, project=project)
    second = start_task(workflow="generic", task_description="Plan the search", user=staff_user)
    return [wait_for_task(runtime_host, first.id), wait_for_task(runtime_host, second.id)]


def expected(field: str) -> dict[str | None, dict[str, int]]:
    sums: dict[str | None, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for c in ExecutionContext.objects.all():
        key = getattr(c, field)
        for name in ("input_tokens", "output_tokens", "total_tokens", "api_calls"):
            sums[key][name] += getattr(c, name)
    return sums


@pytest.mark.parametrize(("group_by", "field"), [("role", "role"), ("task", "task_id"), ("project", "project_id")])
def test_rows_match_the_sum_of_recorded_usage(api, two_tasks, group_by, field):
    body = api.get(f"/api/v1/stats/tokens?group_by={group_by}").json()
    sums = expected(field)
    assert {r["key"] for r in body["rows"]} == set(sums)
    for row in body["rows"]:
        for name in ("input_tokens", "output_tokens", "total_tokens", "api_calls"):
            assert row[name] == sums[row["key"]][name], (row["key"], name)
        assert row["total_tokens"] == row["input_tokens"] + row["output_tokens"]
        assert row["estimated"] is True  # the offline executor estimates
    totals = ExecutionContext.objects.aggregate(t=Sum("total_tokens"), c=Sum("api_calls"))
    assert body["totals"]["total_tokens"] == totals["t"] > 0
    assert body["totals"]["api_calls"] == totals["c"] > 0
    totals_by_row = [r["total_tokens"] for r in body["rows"]]
    assert totals_by_row == sorted(totals_by_row, reverse=True)


def test_task_totals_equal_the_tokens_the_task_was_charged(api, two_tasks):
    rows = {r["key"]: r for r in api.get("/api/v1/stats/tokens?group_by=task").json()["rows"]}
    for task in two_tasks:
        assert rows[task.id]["total_tokens"] == task.tokens_used
        assert rows[task.id]["label"] == task.title
    project_rows = {r["key"]: r for r in api.get("/api/v1/stats/tokens?group_by=project").json()["rows"]}
    assert project_rows["shop"]["total_tokens"] == two_tasks[0].tokens_used
    assert project_rows[None]["label"] == "(no project)"


def test_since_counts_only_contexts_started_since(api, two_tasks):
    old = ExecutionContext.objects.filter(task=two_tasks[0])
    old.update(created_at=datetime(2020, 1, 1, tzinfo=UTC))
    recent_total = ExecutionContext.objects.filter(task=two_tasks[1]).aggregate(t=Sum("total_tokens"))["t"]
    body = api.get("/api/v1/stats/tokens?group_by=task&since=2024-06-01").json()
    assert [r["key"] for r in body["rows"]] == [two_tasks[1].id]
    assert body["totals"]["total_tokens"] == recent_total
    moment = (datetime.now(tz=UTC) - timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert api.get(f"/api/v1/stats/tokens?since={moment}").json()["totals"]["total_tokens"] == recent_total
    assert api.get("/api/v1/stats/tokens?since=2999-01-01").json()["rows"] == []


def test_bad_parameters_are_refused_naming_the_field(api, builtin):
    bad = api.get("/api/v1/stats/tokens?group_by=colour")
    assert bad.status_code == 400
    assert "group_by" in bad.json()["errors"]
    bad = api.get("/api/v1/stats/tokens?since=yesterday")
    assert bad.status_code == 400
    assert "ISO 8601" in bad.json()["errors"]["since"][0]
    bad = api.get("/api/v1/stats/tokens?since=2025-13-45")
    assert bad.status_code == 400
    assert "since" in bad.json()["errors"]


@pytest.mark.parametrize("since", ["9999-12-31T23:59:59-10:00", "0001-01-01T00:00:00+05:00"])
def test_a_since_its_offset_carries_out_of_range_is_refused_not_a_500(api, client, staff_user, builtin, since):
    bad = api.get("/api/v1/stats/tokens", {"since": since})
    assert bad.status_code == 400, bad.content
    assert "out of range" in bad.json()["errors"]["since"][0]
    client.force_login(staff_user)
    page = client.get("/stats/tokens/", {"since": since})
    assert page.status_code == 400
    assert "out of range" in page.content.decode()


def test_other_users_tasks_are_not_counted(two_tasks, viewer_user):
    from rest_framework.authtoken.models import Token
    from rest_framework.test import APIClient

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=viewer_user).key}")
    body = client.get("/api/v1/stats/tokens").json()
    assert body["rows"] == []
    assert body["totals"]["total_tokens"] == 0


def test_stats_page_draws_charts_without_scripts_and_escapes_titles(runtime_host, staff_user):
    task = start_task(
        workflow="generic",
        task_description="<script>alert(1)</script> plan",
        title="<script>x</script>",
        user=staff_user,
    )
    wait_for_task(runtime_host, task.id)
    client = Client()
    client.force_login(staff_user)
    html = client.get("/stats/tokens/?group_by=task").content.decode()
    assert html.count('class="chart-image" src="data:image/svg+xml') == 2
    assert "<style" not in html.split("<body", 1)[1], "inline style would be blocked by the CSP"
    assert "<script>x</script>" not in html
    assert "&lt;script&gt;x&lt;/script&gt;" in html
    assert "kozea.github.io" not in html
    assert "<script>alert" not in html
    total = ExecutionContext.objects.aggregate(t=Sum("total_tokens"))["t"]
    assert f'id="total-tokens">{total:,}<' in html
    assert "estimated" in html
    bad = client.get("/stats/tokens/?group_by=colour&since=never")
    assert bad.status_code == 400
    assert "group_by" in bad.content.decode()
    assert "since" in bad.content.decode()


def test_stats_page_empty_state(builtin, page_client):
    html = page_client.get("/stats/tokens/").content.decode()
    assert "No token usage recorded" in html


def test_an_estimate_counts_the_documents_a_call_reads_and_writes(runtime_host, staff_user, page_client):
    """Issue 17: the consolidator was credited 51 estimated tokens for reading about 30 KB of
    reviews and writing a 14 KB document; the offline estimate counted only its params and result."""
    from monitoring.models import Artifact
    from runs.tasks import sample_requirement

    task = start_task(workflow="requirement_review", input_markdown=sample_requirement(), user=staff_user)
    task = wait_for_task(runtime_host, task.id)
    runtime_host.recorder.flush()
    assert task.status == "completed", task.error
    consolidator = ExecutionContext.objects.get(task=task, role="consolidator")
    sizes = {a.name: len(a.content) for a in Artifact.objects.filter(task=task)}
    read = [n for n in sizes if n.startswith("response_")] + ["interview_result.json"]
    written = sizes["requirement_final.md"] + sizes["consolidation_report.json"]
    assert consolidator.tokens_estimated
    assert consolidator.input_tokens >= sum(sizes[n] for n in read if n in sizes) // 4 > 500
    assert consolidator.output_tokens >= written // 4 > 500
    assert task.tokens_used > task.token_budget  # estimates are recorded, never enforced: nothing was spent
    html = page_client.get(f"/tasks/{task.id}/").content.decode()
    card = html.split(f'id="ctx-{consolidator.id}"')[1][:3000]
    assert f"{consolidator.total_tokens:,} tokens" in card and "(est.)" in card
    chip = html.split('data-field="task-tokens"')[1].split("</span>")[0]
    # an estimate reads as one, not as a budget overrun (issue 32): no "used / budget"
    assert f"≈ {task.tokens_used:,} tokens" in chip and "(est.)" in chip and f"/ {task.token_budget:,}" not in chip
