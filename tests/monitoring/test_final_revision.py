"""An operator's answers to the open points produce a revised final document (issue 27 B; seed
002 §6.6): a new artifact version beside the untouched original, each answer in place and
marked as the operator's in the document's language, the open points' list updated, a
still-vague answer kept open by the engine; API and task page, in Chinese and English, with
the refusals (no answer yet, unknown field, a user who may not see or act on the task)."""

from __future__ import annotations

import json
from datetime import datetime

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.test import Client
from django.utils import timezone

from monitoring.models import Artifact, Task
from monitoring.outcome import outcome_panel, task_outcome
from runs.tasks import sample_requirement
from teamclaw.workflows.revision import revise
from tests.conftest import PASSWORD, token_client
from tests.helpers import wait_for_task
from tests.monitoring.test_open_points import report_points

ZH_CLEAR = "订单页面在 4G 网络下首屏加载时间的 P95 不超过 2 秒，在生产环境测量。"
ZH_VAGUE = "尽快返回结果。"


def _review(api, runtime_host, language: str) -> Task:
    """The demo requirement in ``language``, reviewed to the end by the offline team."""
    response = api.post(
        "/api/v1/tasks",
        {"workflow": "requirement_review", "input_markdown": sample_requirement(language)},
        format="json",
    )
    assert response.status_code == 201, response.content
    task = wait_for_task(runtime_host, response.json()["task_id"])
    assert task.status == "completed", task.error
    return task


@pytest.fixture
def finished_review(api, runtime_host) -> Task:
    return _review(api, runtime_host, "zh-hans")


@pytest.fixture
def finished_english_review(api, runtime_host) -> Task:
    return _review(api, runtime_host, "en")


def _final(task: Task) -> Artifact:
    return task.artifacts.get(name="requirement_final.md")


def _answer(api, task: Task, point: str, text: str) -> None:
    response = api.post(f"/api/v1/tasks/{task.id}/open_points", {"point": point, "answer": text}, format="json")
    assert response.status_code == 200, response.content


def _point(task: Task, fragment: str) -> dict:
    return next(p for p in report_points(task) if fragment in p["question"])


def test_answers_give_a_new_version_with_each_answer_in_place_and_the_original_kept(api, finished_review):
    task = finished_review
    original = _final(task)
    before = (original.content, original.created_at)
    speed = _point(task, "中的“快”对应什么可度量的指标")
    unit = _point(task, "300 是什么单位")
    _answer(api, task, speed["id"], ZH_CLEAR)
    _answer(api, task, unit["id"], ZH_VAGUE)

    created = api.post(f"/api/v1/tasks/{task.id}/revisions", {}, format="json")
    assert created.status_code == 201, created.content
    revision = created.json()
    assert revision["name"] == "requirement_final.r1.md" and revision["version"] == 1
    assert (revision["resolved"], revision["still_unclear"]) == (1, 1)
    today = timezone.now().date().isoformat()
    text = revision["content"]
    lines = text.splitlines()
    # in place, on the point's line, marked as the operator's answer in Chinese
    assert lines[speed["line"] - 1].endswith(f"{ZH_CLEAR}（运营方答复，{today}）")
    assert lines[unit["line"] - 1].endswith(
        f"{ZH_VAGUE}（运营方答复，{today}；仍不明确）"
    )  # the mark says it is unclear
    listed = text.split("## 待确认事项", 1)[1]
    assert speed["question"] not in listed  # resolved: it leaves the list
    unclear = next(line for line in listed.splitlines() if unit["question"] in line)
    assert "运营方已答复，但仍不明确" in unclear and "尽快" in unclear  # the engine keeps it open, honestly
    stored = task.artifacts.get(name="revision.r1.json")
    assert {a["id"]: a["resolved"] for a in json.loads(stored.content)["answers"]} == {
        speed["id"]: True,
        unit["id"]: False,
    }
    # the original is never overwritten
    original.refresh_from_db()
    assert (original.content, original.created_at) == before

    again = api.post(f"/api/v1/tasks/{task.id}/revisions", {}, format="json")
    assert again.status_code == 200 and again.json()["version"] == 1  # nothing new to write
    _answer(api, task, unit["id"], "搜索结果在 1 秒内返回（P95，生产环境测量）。")
    second = api.post(f"/api/v1/tasks/{task.id}/revisions", {}, format="json")
    assert second.status_code == 201 and second.json()["version"] == 2
    assert second.json()["still_unclear"] == 0
    assert task.artifacts.get(name="requirement_final.r1.md").content == text  # earlier versions kept
    listed = api.get(f"/api/v1/tasks/{task.id}/revisions").json()["revisions"]
    assert [r["name"] for r in listed] == ["requirement_final.r1.md", "requirement_final.r2.md"]
    assert listed[1]["diff_url"] == f"/tasks/{task.id}/diff/?a=requirement_final.md&b=requirement_final.r2.md"
    assert _final(task).content == before[0]


def test_refusals_write_no_revision(api, finished_review, viewer_user):
    task = finished_review
    url = f"/api/v1/tasks/{task.id}/revisions"
    point = report_points(task)[0]["id"]
    # bad answers are refused naming the field, and leave nothing to revise
    for body, field in (({"point": point, "answer": "  "}, "answer"), ({"point": "c-nope", "answer": "x"}, "point")):
        refused = api.post(f"/api/v1/tasks/{task.id}/open_points", body, format="json")
        assert refused.status_code == 400 and field in refused.json()["errors"]
    nothing = api.post(url, {}, format="json")
    assert nothing.status_code == 409 and "no open point has an answer" in nothing.json()["detail"]
    _answer(api, task, point, "以订单表为准。")
    unknown = api.post(url, {"version": 3}, format="json")
    assert unknown.status_code == 400 and "version" in unknown.json()["errors"]
    # a user who may not see the task: 404; one who sees it but may not act on it: 403
    assert token_client(viewer_user).post(url, {}, format="json").status_code == 404
    assert token_client(viewer_user).get(url).status_code == 404
    watcher = get_user_model().objects.create_user("watcher", password=PASSWORD)
    watcher.user_permissions.add(Permission.objects.get(codename="view_task"))
    forbidden = token_client(watcher).post(url, {}, format="json")
    assert forbidden.status_code == 403, forbidden.content
    page = Client()
    page.force_login(watcher)
    assert page.post(f"/tasks/{task.id}/revisions").status_code == 403
    assert not task.artifacts.filter(name__startswith="requirement_final.r").exists()
    assert not task.artifacts.filter(name__startswith="revision.r").exists()


def test_the_task_page_in_chinese_revises_and_links_the_side_by_side_diff(api, finished_review, staff_user):
    task = finished_review
    page = Client(HTTP_ACCEPT_LANGUAGE="zh-hans")
    page.force_login(staff_user)
    # before any answer the page says exactly why nothing was written
    refused = page.post(f"/tasks/{task.id}/revisions", follow=True).content.decode()
    assert "文档未修订：请先回答至少一条待确认事项。" in refused
    html = page.get(f"/tasks/{task.id}/").content.decode()
    assert "您的回答已记录，但尚未写入最终文档。" in html
    assert "把我的回答写入修订后的最终文档</button>" in html and "disabled" in html.split('class="revise"', 1)[1][:400]
    _answer(api, task, _point(task, "中的“快”对应什么可度量的指标")["id"], ZH_CLEAR)
    response = page.post(f"/tasks/{task.id}/revisions")
    assert response.status_code == 302 and response["Location"].endswith("#revisions")
    html = page.get(f"/tasks/{task.id}/").content.decode()
    assert "已用您的回答写出最终文档的第 1 版修订，原文档保留不变。" in html
    assert "修订后的最终文档，第 1 版" in html and "已答复并解决 1 个，仍不明确 0 个" in html
    diff_url = f"/tasks/{task.id}/diff/?a=requirement_final.md&amp;b=requirement_final.r1.md"
    assert diff_url in html and "与原文档并排对比" in html
    diff = page.get(diff_url.replace("&amp;", "&")).content.decode()
    assert '<table class="diff"' in diff and "（运营方答复，" in diff
    artifact = page.get(f"/tasks/{task.id}/artifacts/requirement_final.r1.md").content.decode()
    assert ZH_CLEAR in artifact
    # the revision's link opens it as a page: its title in words, rendered, a way back
    assert f'href="/tasks/{task.id}/documents/requirement_final.r1.md"' in html
    document = page.get(f"/tasks/{task.id}/documents/requirement_final.r1.md").content.decode()
    assert "<h1>修订后的最终文档，第 1 版</h1>" in document and 'id="back-to-task"' in document
    assert ZH_CLEAR in document and "与原文档并排对比" in document
    assert page.get(f"/tasks/{task.id}/documents/review_dev.json").status_code == 404
    assert page.get(f"/tasks/{task.id}/documents/nope.md").status_code == 404


def test_an_english_review_is_revised_in_english_on_the_api_and_the_page(api, finished_english_review, staff_user):
    task = finished_english_review
    point = next(p for p in report_points(task) if p.get("line"))
    _answer(api, task, point["id"], "Within 2 seconds at the 95th percentile, measured in production.")
    revision = api.post(f"/api/v1/tasks/{task.id}/revisions", {}, format="json").json()
    line = revision["content"].splitlines()[point["line"] - 1]
    assert "Within 2 seconds at the 95th percentile, measured in production. (operator's answer, " in line
    assert "（运营方答复" not in revision["content"]
    page = Client(HTTP_ACCEPT_LANGUAGE="en")
    page.force_login(staff_user)
    html = page.get(f"/tasks/{task.id}/").content.decode()
    assert "Revised final document, version 1" in html and "Side by side with the original" in html


def test_an_answer_without_a_line_goes_to_the_answers_section_and_the_input_is_never_changed():
    final = (
        "# Shop\n\n## Requirements\n- Orders load fast.\n\n"
        "## Open points\n\n- Which payment provider? (added by review)\n"
    )
    points = [
        {"id": "q-1", "question": "Which payment provider?", "line": None, "answer": "Stripe, in test mode first."}
        | {"answered_at": datetime(2026, 12, 5, 9), "answered_by": "operator"},
    ]
    text, report = revise(final, points, "en")
    answer = "- Which payment provider? — Stripe, in test mode first. (operator's answer, 2026-12-05)"
    assert f"## Operator's answers\n\n{answer}" in text
    assert "- Every open point is answered." in text
    assert report["answers"][0]["placed"] == "section" and report["resolved"] == 1
    assert final.endswith("(added by review)\n") and "Stripe" not in final


def test_the_outcome_shows_what_the_quality_check_still_wants_in_the_newest_revision(api, finished_review, staff_user):
    """An answer that defines ERP removes "缩写“ERP”在文中没有定义" from the outcome's list: the
    quality check is re-run on the revised version, and the page says which version it refers to."""
    task = finished_review
    erp = _point(task, "ERP")
    panel_before = outcome_panel(task_outcome(task), task, can_operate=True)
    undefined = "缩写“ERP”在文中没有定义"
    assert any(undefined in f for f in panel_before["quality_wants"]) and panel_before["quality_version"] == 0
    _answer(api, task, erp["id"], "ERP 指本店使用的企业资源计划系统，负责库存和发票。")
    created = api.post(f"/api/v1/tasks/{task.id}/revisions", {}, format="json")
    assert created.status_code == 201, created.content
    assert "findings" in json.loads(task.artifacts.get(name="revision.r1.json").content)["quality"]
    panel = outcome_panel(task_outcome(task), task, can_operate=True)
    assert panel["quality_version"] == 1
    assert not any(undefined in f for f in panel["quality_wants"]), panel["quality_wants"]
    assert panel["quality_wants"]  # what still stands in version 1 (the open list of line 20) is still shown
    client = Client(HTTP_ACCEPT_LANGUAGE="zh-hans")
    client.force_login(staff_user)
    page = client.get(f"/tasks/{task.id}/").content.decode()
    assert "质量检查已在最终文档的修订版 1 上重新运行" in page
    wants = page.split('class="small quality-wants"', 1)[1].split("</ul>", 1)[0]
    assert "与 ERP 的集成包括库存、发票等" in wants and undefined not in wants


def test_the_side_by_side_of_a_revision_counts_changed_lines_and_resolved_points(api, finished_review, staff_user):
    """Two answers written into their lines read "2 行已修改" and "2 条待确认事项已解决", not as
    lines deleted and added, in Chinese and in English."""
    task = finished_review
    _answer(api, task, _point(task, "中的“快”对应什么可度量的指标")["id"], ZH_CLEAR)
    _answer(api, task, _point(task, "ERP")["id"], "ERP 指本店使用的企业资源计划系统，负责库存和发票。")
    assert api.post(f"/api/v1/tasks/{task.id}/revisions", {}, format="json").status_code == 201
    url = f"/tasks/{task.id}/diff/?a=requirement_final.md&b=requirement_final.r1.md"
    pages = {}
    for language in ("zh-hans", "en"):
        client = Client(HTTP_ACCEPT_LANGUAGE=language)
        client.force_login(staff_user)
        html = client.get(url).content.decode()
        pages[language] = html.split('id="diff-stats"', 1)[1].split("</p>", 1)[0]
    zh, en = pages["zh-hans"], pages["en"]
    assert zh.startswith(">2 行已修改") and "2 条回答写入了对应的需求行" in zh and "2 条待确认事项已解决" in zh
    assert "2 line(s) changed" in en and "2 answer(s) written into their requirement line" in en
    assert "2 open point(s) resolved" in en
