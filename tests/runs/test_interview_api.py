"""Seed 002 phases 1-5 through the API: a one-line idea, the interview answered by the
operator (PRD §4.6 waiting_user), the draft, modify / review / end, and what each refuses."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest
from rest_framework.test import APIClient

from monitoring.models import Task, ToolConfirmation
from tests.helpers import wait_for_task

IDEA_EN = "Add a CSV export of the order list for shop admins"
IDEA_ZH = "给现有的订单列表页面增加导出功能，方便店铺管理员对账"


def start(api, **body) -> str:
    response = api.post("/api/v1/tasks", {"workflow": "requirement_review", **body}, format="json")
    assert response.status_code == 201, response.content
    return response.json()["task_id"]


def wait_for(api, host, task_id: str, what: str, timeout: float = 30) -> dict:
    """The task's API document once it waits for ``what`` (an operator input), else fail."""
    deadline = time.monotonic() + timeout
    body: dict = {}
    while time.monotonic() < deadline:
        host.recorder.flush()
        body = api.get(f"/api/v1/tasks/{task_id}").json()
        if what in body.get("waiting_for", []):
            return body
        assert body["status"] in ("queued", "running"), body
        time.sleep(0.05)
    raise AssertionError(f"task {task_id} never waited for {what}: {body.get('waiting_for')} {body.get('phase')}")


def answer_all(api, task_id: str, questions: list[dict], texts: dict[str, str]) -> dict:
    """Answer every question of a round: ``texts`` by question id without the round prefix
    (``goal``, ``quality-f1``); a question not named is left empty."""
    answers = {q["id"]: texts.get(q["id"].split("-", 1)[1], "") for q in questions}
    response = api.post(f"/api/v1/tasks/{task_id}/answers", {"answers": answers}, format="json")
    assert response.status_code == 200, response.content
    return response.json()


def interview_to_draft(api, host, task_id: str, texts: dict[str, str], rounds: int = 6) -> tuple[dict, list[dict]]:
    """Answer each interview round from ``texts`` until the task waits for the phase 5
    choice; returns its API document and every round's API document seen."""
    seen = []
    for _ in range(rounds):
        body = wait_for_any(api, host, task_id, ("interview", "next_action"))
        if "next_action" in body["waiting_for"]:
            return body, seen
        seen.append(body)
        answer_all(api, task_id, body["questions"], texts)
    raise AssertionError(f"task {task_id} asked more than {rounds} rounds")


def wait_for_any(api, host, task_id: str, whats: tuple[str, ...], timeout: float = 30) -> dict:
    deadline = time.monotonic() + timeout
    body: dict = {}
    while time.monotonic() < deadline:
        host.recorder.flush()
        body = api.get(f"/api/v1/tasks/{task_id}").json()
        if set(whats) & set(body.get("waiting_for", [])):
            return body
        assert body["status"] in ("queued", "running"), body
        time.sleep(0.05)
    raise AssertionError(f"task {task_id} never waited for {whats}: {body.get('waiting_for')}")


def artifact(body: dict, name: str) -> str:
    return next(a["content"] for a in body["artifacts"] if a["name"] == name)


ROUND_1 = {
    "goal": "Admins copy orders by hand into spreadsheets every week to reconcile payments.",
    "behaviour": "The admin filters the order list and clicks Export; the API returns a CSV file "
    "with one row per order, built from the orders database with a 30 s timeout.",
    "users": "Shop admins may export every order; support staff may export only their own region.",
    "failure": "If the export fails, the admin sees the reason and can retry.",
    "acceptance": "An export of 10,000 orders finishes within 30 seconds.",
}
ROUND_2 = {
    "scope": "Excel files and scheduled exports are out of scope.",
}


def test_an_idea_goes_through_the_interview_to_a_draft_the_operator_modifies_then_reviews(api, runtime_host):
    task_id = start(api, description=IDEA_EN)
    body = wait_for(api, runtime_host, task_id, "interview")
    assert body["phase"] == "interview"
    first = body["questions"]
    # At most 5 a round, ranked by impact (goal and behaviour 5, then users, failure, acceptance 4).
    assert [q["id"] for q in first] == ["r1-goal", "r1-behaviour", "r1-users", "r1-failure", "r1-acceptance"]
    assert all(q["text"] and q["input_id"] for q in first)
    assert {row["status"] for row in body["coverage"]} == {"missing"}
    assert answer_all(api, task_id, first, ROUND_1)["status"] == "answered"

    body = wait_for(api, runtime_host, task_id, "interview")
    second = body["questions"]
    assert [q["id"] for q in second] == ["r2-scope"]
    # The round 1 answers used technical terms (API, database, timeout, 30 s): round 2 is worded technically.
    assert "out of scope" in second[0]["text"] and "modules" in second[0]["text"]
    assert {row["category"]: row["status"] for row in body["coverage"]}["scope"] == "partial"
    answer_all(api, task_id, second, ROUND_2)

    body = wait_for(api, runtime_host, task_id, "next_action")
    assert body["phase"] == "draft"
    assert body["next_actions"]["actions"] == ["modify", "review", "end"]
    draft = artifact(body, "requirement.md")
    assert draft.startswith(f"# {IDEA_EN}")
    # a person's own step keeps its actor (interview_files/ears.yaml, as "患者的步骤：…" in Chinese)
    assert "- FR-001: Step of admins: admins copy orders by hand into spreadsheets every week" in draft
    # One thought each, in EARS form, the operator's words kept: never "let the admin sees".
    assert "- FR-003: The system shall let support staff export only their own region." in draft
    assert (
        "- FR-006: If the export fails, then the system shall satisfy: the admin sees the reason and can retry."
        in draft
    )
    assert "## Clarifications" in draft
    for text in (*ROUND_1.values(), *ROUND_2.values()):
        assert f"→ A: {text}" in draft  # the user's words, logged as given
    result = json.loads(artifact(body, "interview_result.json"))
    assert result["project_type"] == "feature_update"
    assert [a["answer"] for a in result["answers"]] == [*ROUND_1.values(), *ROUND_2.values()]
    assert result["unanswered"] == []
    assert {row["status"] for row in result["coverage"]} == {"clear"}
    assert IDEA_EN in result["baseline_statements"]

    edited = draft + "- Exports include the order's payment status.\n"
    response = api.post(f"/api/v1/tasks/{task_id}/next", {"action": "modify", "markdown": edited}, format="json")
    assert response.status_code == 200, response.content
    body = wait_for(api, runtime_host, task_id, "next_action")
    assert body["next_actions"]["revision"] == 2
    assert artifact(body, "requirement.v2.md") == edited
    assert artifact(body, "requirement.v1.md") == draft

    assert api.post(f"/api/v1/tasks/{task_id}/next", {"action": "review"}, format="json").status_code == 200
    task = wait_for_task(runtime_host, task_id)
    assert task.status == "completed", task.error
    body = api.get(f"/api/v1/tasks/{task_id}").json()
    assert body["phase"] == "done"
    assert artifact(body, "requirement.md") == edited
    assert body["outcome"]["phase"] == "review"
    assert body["outcome"]["verdict"] in ("clean", "findings")
    assert {"requirement_final.md", "consolidation_report.json", "quality_report.json"} <= {
        a["name"] for a in body["artifacts"]
    }


def test_a_chinese_idea_is_interviewed_and_drafted_in_chinese_and_can_end_at_the_draft(api, runtime_host):
    task_id = start(api, description=IDEA_ZH)
    body = wait_for(api, runtime_host, task_id, "interview")
    assert all("\u4e00" <= ch <= "\u9fff" for ch in body["questions"][0]["text"][:2])
    answer_all(api, task_id, body["questions"], {"goal": "管理员每周手工复制订单对账。"})
    body = wait_for(api, runtime_host, task_id, "interview")
    answer_all(api, task_id, body["questions"], {})
    body = wait_for(api, runtime_host, task_id, "next_action")
    draft = artifact(body, "requirement.md")
    assert "## 背景" in draft and "管理员每周手工复制订单对账。" in draft
    assert "## 待确认事项" in draft  # the questions left open, never invented answers
    assert "Open points" not in draft
    assert api.post(f"/api/v1/tasks/{task_id}/next", {"action": "end"}, format="json").status_code == 200
    task = wait_for_task(runtime_host, task_id)
    assert task.status == "completed"
    body = api.get(f"/api/v1/tasks/{task_id}").json()
    assert body["outcome"]["verdict"] == "draft_only"
    assert "requirement_final.md" not in {a["name"] for a in body["artifacts"]}


def test_a_vague_idea_lets_the_operator_pick_the_project_type(api, runtime_host):
    task_id = start(api, description="Something for our team")
    body = wait_for(api, runtime_host, task_id, "project_type")
    (question,) = body["questions"]
    assert question["id"] == "project_type"
    assert {c["value"] for c in question["choices"]} == {
        "agent_dev",
        "feature_update",
        "new_system",
        "testing",
        "unknown",
    }
    refused = api.post(f"/api/v1/tasks/{task_id}/answers", {"answers": {"project_type": "rocket"}}, format="json")
    assert refused.status_code == 400
    assert "answers.project_type" in refused.json()["errors"]
    ok = api.post(f"/api/v1/tasks/{task_id}/answers", {"answers": {"project_type": "testing"}}, format="json")
    assert ok.status_code == 200, ok.content
    body = wait_for(api, runtime_host, task_id, "interview")
    assert body["questions"][0]["id"] == "r1-goal"
    assert "quality" in body["questions"][0]["text"]  # the testing type's questions
    api.post(f"/api/v1/tasks/{task_id}/cancel", {}, format="json")


def test_answers_that_cannot_be_taken_are_refused_with_the_field_and_change_nothing(api, runtime_host, viewer_user):
    task_id = start(api, description=IDEA_EN)
    body = wait_for(api, runtime_host, task_id, "interview")
    url = f"/api/v1/tasks/{task_id}"
    cases = [
        ("answers", {"answers": {"r9-nope": "x"}}, 400, "answers.r9-nope"),
        ("answers", {"answers": {"r1-goal": 5}}, 400, "answers.r1-goal"),
        ("answers", {"answers": {"r1-goal": "x" * 4001}}, 400, "answers.r1-goal"),
        ("answers", {"answers": ["r1-goal"]}, 400, "answers"),
        ("answers", {"answers": {}, "extra": 1}, 400, "extra"),
        ("decisions", {"decisions": {"x": "accept"}}, 409, None),
        ("next", {"action": "review"}, 409, None),
    ]
    for section, payload, status, field in cases:
        response = api.post(f"{url}/{section}", payload, format="json")
        assert response.status_code == status, (payload, response.content)
        if field:
            assert field in response.json()["errors"], response.json()
    row = ToolConfirmation.objects.get(task_id=task_id, kind="input", status="pending")
    assert row.answer is None  # nothing half-applied
    # Part of the answers is kept and waited on; the rest completes it.
    part = api.post(f"{url}/answers", {"answers": {"r1-goal": "Save time."}}, format="json").json()
    assert part["status"] == "pending" and part["missing"] == [
        "r1-behaviour",
        "r1-users",
        "r1-failure",
        "r1-acceptance",
    ]
    # Someone who may not act on the task's agents.
    other = APIClient()
    other.force_authenticate(viewer_user)
    assert other.post(f"{url}/answers", {"answers": {"r1-users": "x"}}, format="json").status_code in (403, 404)
    rest = {"r1-users": "Admins.", "r1-behaviour": "They click Export.", "r1-failure": "", "r1-acceptance": ""}
    assert api.post(f"{url}/answers", {"answers": rest}, format="json").json()["status"] == "answered"
    # Round 1 is answered: it waits for nothing (409) or already for round 2, which has no r1-goal (400).
    again = api.post(f"{url}/answers", {"answers": {"r1-goal": "again"}}, format="json")
    assert again.status_code in (400, 409), again.content
    assert ToolConfirmation.objects.get(pk=row.pk).answer["answers"]["r1-goal"] == "Save time."
    body = wait_for(api, runtime_host, task_id, "interview")
    assert body["questions"][0]["id"] == "r2-scope"
    answer_all(api, task_id, body["questions"], {})
    wait_for(api, runtime_host, task_id, "next_action")
    missing_markdown = api.post(f"{url}/next", {"action": "modify"}, format="json")
    assert missing_markdown.status_code == 400
    blank = api.post(f"{url}/next", {"action": "modify", "markdown": "   "}, format="json")
    assert blank.status_code == 400 and "markdown" in blank.json()["errors"]
    assert api.post(f"{url}/next", {"action": "later"}, format="json").status_code == 400
    assert api.post(f"{url}/cancel", {}, format="json").status_code == 200
    task = wait_for_task(runtime_host, task_id)
    assert task.status == "terminated"
    assert api.post(f"{url}/next", {"action": "end"}, format="json").status_code == 409


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"description": ""}, "description"),
        ({"description": "x", "input_markdown": "# Doc\n- must work"}, "description"),
        ({"input_markdown": "# Doc\n- must work", "start_at": "interview"}, "start_at"),
        ({"description": "x", "decision_mode": "sometimes"}, "decision_mode"),
        ({"description": "x", "project_type": "rocket"}, "project_type"),
        ({"description": "x", "start_at": "later"}, "start_at"),
        ({"description": "x", "start_at": "draft"}, "input_markdown"),
        ({"description": "x", "title": "t" * 301}, "title"),
        ({"description": "idea\u202eexe.txt"}, "description"),
        ({"description": "idea\x1b[31m"}, "description"),
        ({"input_markdown": "# Doc\n- must work", "title": "T\x07"}, "title"),
    ],
)
def test_starting_an_interview_refuses_what_does_not_fit(api, body, field):
    before = Task.objects.count()
    response = api.post("/api/v1/tasks", {"workflow": "requirement_review", **body}, format="json")
    assert response.status_code == 400, response.content
    assert field in response.json()["errors"]
    assert Task.objects.count() == before


def test_confirm_mode_puts_each_point_to_the_operator_and_the_report_says_who_decided(api, runtime_host):
    document = (Path(__file__).parent.parent / "data" / "requirements" / "en_planted.md").read_text(encoding="utf-8")
    task_id = start(api, input_markdown=document, decision_mode="confirm")
    body = wait_for(api, runtime_host, task_id, "decisions", timeout=60)
    assert body["phase"] == "decisions"
    items = body["decisions"]
    assert len(items) >= 5
    assert all(item["summary"] and item["positions"] and item["decision"] is None for item in items)
    assert {p["round"] for item in items for p in item["positions"]} >= {"review"}
    url = f"/api/v1/tasks/{task_id}/decisions"
    bad = api.post(url, {"decisions": {items[0]["id"]: "maybe"}}, format="json")
    assert bad.status_code == 400 and f"decisions.{items[0]['id']}" in bad.json()["errors"]
    first, *rest = items
    part = api.post(url, {"decisions": {first["id"]: "reject"}}, format="json").json()
    assert part["status"] == "pending" and len(part["missing"]) == len(rest)
    body = api.get(f"/api/v1/tasks/{task_id}").json()
    assert next(i for i in body["decisions"] if i["id"] == first["id"])["decision"] == "reject"
    done = api.post(url, {"decisions": {item["id"]: "accept" for item in rest}}, format="json").json()
    assert done["status"] == "answered"
    task = wait_for_task(runtime_host, task_id)
    assert task.status == "completed", task.error
    body = api.get(f"/api/v1/tasks/{task_id}").json()
    report = json.loads(artifact(body, "consolidation_report.json"))
    assert report["decision_mode"] == "confirm"
    by_id = {d["id"]: d for d in report["decisions"]}
    assert by_id[first["id"]]["decided_by"] == "operator:operator"
    assert by_id[first["id"]]["decision"] != "adopted"
    assert all(by_id[item["id"]]["decided_by"] == "operator:operator" for item in rest)
    assert body["outcome"]["decision_mode"] == "confirm"
    # The planted document has problems the operator did not resolve by accepting proposals: honest verdict.
    assert body["outcome"]["verdict"] == "findings"
    assert body["outcome"]["quality"]["passed"] is False


def test_tasks_waiting_for_their_operators_do_not_stall_the_others(api, runtime_host):
    """Each waiting interview holds a main instance; a role's limit is 4 (PRD §4.7), but an
    instance held by an operator does not count, so a fifth interview and a plain task run."""
    waiting = [start(api, description=f"{IDEA_EN} ({n})") for n in range(5)]
    for task_id in waiting:
        wait_for(api, runtime_host, task_id, "interview")
    response = api.post("/api/v1/tasks", {"workflow": "generic", "task_description": "Plan it"}, format="json")
    task = wait_for_task(runtime_host, response.json()["task_id"])
    assert task.status == "completed", task.error
    for task_id in waiting:
        assert api.post(f"/api/v1/tasks/{task_id}/cancel", {}, format="json").status_code == 200


def test_a_stale_page_or_a_wrong_edit_is_refused_and_the_draft_stays(api, runtime_host, monkeypatch):
    monkeypatch.setattr("teamclaw.workflows.drafting.MAX_REVISIONS", 2)
    task_id = start(
        api, input_markdown="# Shop\n\n## Requirements\n\n- Customers can export orders.\n", start_at="draft"
    )
    body = wait_for(api, runtime_host, task_id, "next_action")
    first = body["next_actions"]["input_id"]
    url = f"/api/v1/tasks/{task_id}/next"
    cases = [
        ({"action": "end", "markdown": "# Shop\n- x"}, 400, "markdown"),
        ({"action": "modify", "markdown": "#"}, 400, "markdown"),
        ({"action": "modify", "markdown": "# Shop\n\n## Requirements\n"}, 400, "markdown"),
        ({"action": "modify", "markdown": "# Shop\n" + "\x1b[2J\x07" * 300 + "\n- must work\n"}, 400, "markdown"),
        ({"action": "modify", "markdown": " \n "}, 400, "markdown"),
        # An id that names no request of this task at all is a wrong field, not a stale page.
        ({"action": "modify", "input_id": "not-this-one", "markdown": "# Shop\n- x"}, 400, "input_id"),
        # modify without the draft names the missing field itself.
        ({"action": "modify"}, 400, "markdown"),
    ]
    for payload, status, field in cases:
        response = api.post(url, payload, format="json")
        assert response.status_code == status, (payload, response.content)
        if field:
            assert field in response.json()["errors"], response.json()
    blank = api.post(url, {"action": "modify", "markdown": " \n "}, format="json").json()
    assert blank["errors"]["markdown"] == ["may not be blank"]
    edited = "# Shop\n\n## Requirements\n\n- Customers can export orders as CSV.\n"
    ok = api.post(url, {"action": "modify", "markdown": edited, "input_id": first}, format="json")
    assert ok.status_code == 200, ok.content
    body = wait_for(api, runtime_host, task_id, "next_action")
    assert body["next_actions"]["revision"] == 2
    assert body["next_actions"]["actions"] == ["review", "end"]  # MAX_REVISIONS reached
    # A tab still showing revision 1 cannot send it anywhere.
    stale = api.post(url, {"action": "review", "input_id": first}, format="json")
    assert stale.status_code == 409 and "out of date" in stale.json()["detail"]
    late = api.post(url, {"action": "modify", "markdown": edited + "- more\n"}, format="json")
    assert late.status_code == 400 and "action" in late.json()["errors"]
    assert api.post(url, {"action": "end"}, format="json").status_code == 200
    task = wait_for_task(runtime_host, task_id)
    assert task.status == "completed"
    body = api.get(f"/api/v1/tasks/{task_id}").json()
    assert artifact(body, "requirement.md") == edited
    assert {a["name"] for a in body["artifacts"]} >= {"requirement.v1.md", "requirement.v2.md"}


def test_questions_left_open_are_never_reviewed_as_the_users_requirements(api, runtime_host):
    """An unanswered question stays a question: no expert rewrites it ("should" -> "must"),
    and no acceptance criterion is made from it."""
    task_id = start(api, description=IDEA_EN)
    for _ in (1, 2):
        body = wait_for(api, runtime_host, task_id, "interview")
        answer_all(api, task_id, body["questions"], {"goal": "Admins copy orders by hand every week."})
    body = wait_for(api, runtime_host, task_id, "next_action")
    asked = [q for q in json.loads(artifact(body, "interview_result.json"))["unanswered"]]
    assert "What should the user see when something goes wrong?" in asked
    api.post(f"/api/v1/tasks/{task_id}/next", {"action": "review"}, format="json")
    assert wait_for_task(runtime_host, task_id).status == "completed"
    body = api.get(f"/api/v1/tasks/{task_id}").json()
    final = artifact(body, "requirement_final.md")
    logged = [line for line in final.splitlines() if line.startswith("- Q: ")]
    for question in asked:
        assert question in final  # still an open question in the document
        # ...logged in the Clarifications as not answered, and nowhere else (no criterion made of it).
        assert f"- Q: {question} → A: (not answered: an open point)" in logged, question
        assert final.count(question.rstrip("?")) == 2, question
    for name in ("review_dev.json", "review_pm.json", "review_ai.json", "review_domain.json"):
        quotes = [issue["quote"] for issue in json.loads(artifact(body, name))["issues"]]
        assert not set(quotes) & set(asked), name
    # each question left empty is one of the outcome's open points, listed for the operator to
    # answer: on its own, or folded with a review point that asks the same thing (its sources
    # then name both, its questions keep each wording)
    listed = api.get(f"/api/v1/tasks/{task_id}/open_points").json()["open_points"]
    from_interview = [
        question
        for p in listed
        if "interview" in p.get("sources", [p["source"]])
        for question in p.get("questions", [p["question"]])
    ]
    assert asked and all(question in from_interview for question in asked)
    assert body["outcome"]["open_points"] == len(listed) >= len(asked)


def test_a_chinese_document_is_reviewed_in_chinese_end_to_end(api, runtime_host):
    """Every line the review adds to a Chinese document is Chinese (seed 002: a document is
    answered in its language), through the whole workflow, not only the rules."""
    document = "# 订单导出\n\n## 需求\n\n- 管理员可以导出订单。\n- 用AI推荐商品。\n- 页面要快速加载。\n"
    task = wait_for_task(runtime_host, start(api, input_markdown=document))
    assert task.status == "completed", task.error
    body = api.get(f"/api/v1/tasks/{task.id}").json()
    final = artifact(body, "requirement_final.md")
    added = [line for line in final.splitlines() if line.strip() and line not in document.splitlines()]
    assert added
    for line in added:
        assert re.search(r"[\u4e00-\u9fff]", line), line
    for name in ("review_dev.json", "review_ai.json"):
        for issue in json.loads(artifact(body, name))["issues"]:
            assert re.search(r"[\u4e00-\u9fff]", issue["problem"]), issue["problem"]


def test_a_refused_edit_on_the_page_is_kept_for_the_operator(page_client, runtime_host):
    response = page_client.post(
        "/tasks/new/",
        {"mode": "document", "input_markdown": "# Shop\n\n## Requirements\n\n- Export orders.\n", "stop_at_draft": "1"},
    )
    task_id = response["Location"].rstrip("/").split("/")[-1]
    row = None
    for _ in range(200):
        runtime_host.recorder.flush()
        row = ToolConfirmation.objects.filter(task_id=task_id, tool="next_action", status="pending").first()
        if row:
            break
        time.sleep(0.05)
    assert row is not None
    edit = "# Shop\n\n## A long edit that lost its requirement lines\n\n## Another heading\n"
    refused = page_client.post(
        f"/tasks/{task_id}/input/next", {"action": "modify", "markdown": edit, "input_id": row.id}, follow=True
    )
    html = refused.content.decode()
    assert "Your edit was not saved" in html, html[html.find("messages") : html.find("messages") + 600]
    assert "A long edit that lost its requirement lines" in html  # kept, readonly, to copy from
    assert ToolConfirmation.objects.get(pk=row.pk).status == "pending"
    again = page_client.get(f"/tasks/{task_id}/").content.decode()
    assert "Your edit was not saved" not in again  # shown once
    page_client.post(f"/api/v1/tasks/{task_id}/cancel", {})


def test_a_task_waiting_for_its_operator_shows_the_tokens_it_spent_so_far(api, runtime_host, page_client):
    """TaskProgress: a running task's count reaches the record (and the task page) while it
    runs, at most a second late, instead of 0 until it ends (walkthrough: the header read
    0 / 50,000 through the whole interview while the agents' cards counted thousands)."""
    from django.db.models import Sum

    from monitoring.models import ExecutionContext

    task_id = start(api, description=IDEA_EN)
    wait_for(api, runtime_host, task_id, "interview")
    deadline = time.monotonic() + 10
    while True:
        runtime_host.recorder.flush()
        task = Task.objects.get(pk=task_id)
        spent = ExecutionContext.objects.filter(task_id=task_id).aggregate(
            total=Sum("input_tokens") + Sum("output_tokens")
        )["total"]
        if (task.tokens_used and task.tokens_used == spent) or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert task.status == "running"
    assert task.tokens_used > 0 and task.tokens_used == spent, (task.tokens_used, spent)
    page = page_client.get(f"/tasks/{task_id}/").content.decode()
    assert f"≈ {task.tokens_used:,} tokens" in page  # offline: an estimate, shown as one
    assert api.get(f"/api/v1/tasks/{task_id}").json()["tokens_used"] == task.tokens_used
    # The phase badge alone, as the page reads it again when what the task waits for changes.
    badge = page_client.get(f"/tasks/{task_id}/?part=phase", HTTP_HX_REQUEST="true").content.decode()
    assert 'data-phase="interview"' in badge and "<html" not in badge
