"""Seed 002 point 7 on the ``openai`` executor: an expert's answer with one invalid item keeps
its valid items (the dropped one is a recorded warning), and an expert whose model answers
garbage every time leaves the review going with the others, with a visible warning. A real
chat-completions server on 127.0.0.1 plays the model; the runtime, database and API are real."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from monitoring.models import Alert, ExecutionContext
from teamclaw.runtime.executors.model import salvage
from teamclaw.runtime.schemas import compile_schema
from teamclaw.workflows.model_review import REVIEW_SCHEMA
from tests.documents import CLINIC
from tests.helpers import wait_for_task
from tests.model_server import Completion, host_on_model, usage_for

LINE = re.compile(r"^\s*(\d+) \| (.*)$", re.MULTILINE)
ISSUE = re.compile(r"^- \[([a-z_]+-\d+)\]", re.MULTILINE)
WORD = re.compile(r"[A-Za-z]{6,}")


def _issue(category: str, line: int, problem: str, change: dict[str, Any]) -> dict[str, Any]:
    return {
        "category": category,
        "severity": "major",
        "line": line,
        "problem": problem,
        "suggestion": "Make it precise.",
        "change": change,
    }


class ExpertsBrain:
    """The experts' model. ``flawed``: that perspective's review holds two valid issues and one
    with a category that does not exist, and its evaluation one stance on an issue that does
    not exist, both repeated on the repair request. ``garbage``: that perspective answers prose,
    never JSON. Everyone else: one valid issue, agrees with every issue, withdraws nothing."""

    def __init__(self, flawed: str = "", garbage: str = "") -> None:
        self.flawed, self.garbage = flawed, garbage
        self.asked: dict[str, int] = {}
        self.languages: list[str] = []

    def __call__(self, body: dict[str, Any]) -> Completion:
        prompt = body["messages"][1]["content"]  # the task; a repair request comes after it
        me = re.search(r"perspective '(\w+)'", prompt).group(1)
        self.asked[me] = self.asked.get(me, 0) + 1
        if "language of the document" in prompt:
            self.languages.append(re.search(r"in (\w+), the language of the document", prompt).group(1))
        if me == self.garbage:
            content = "I think the requirement is mostly fine, really."
        elif "mode: review" in prompt:
            content = json.dumps(self._review(me, prompt))
        elif "mode: evaluate" in prompt:
            responses = [
                {"target_issue": i, "stance": "agree", "comment": f"I agree with {i}.", "reasoning": "Same evidence."}
                for i in ISSUE.findall(prompt)
            ]
            if me == self.flawed:
                responses.insert(
                    0, {"target_issue": "nobody-9", "stance": "challenge", "comment": "No.", "reasoning": "None."}
                )
            content = json.dumps({"responses": responses})
        else:
            content = json.dumps({"withdrawn": []})
        return Completion(content, usage=usage_for(body, content))

    def _review(self, me: str, prompt: str) -> dict[str, Any]:
        number, text, word = next(
            (int(n), t, WORD.search(t).group(0))
            for n, t in LINE.findall(prompt)
            if t.startswith("- ") and WORD.search(t)
        )
        issues = [
            _issue("escape_clause", number, f"{me}: '{word}' is vague.", {"action": "open_point", "question": "?"})
        ]
        if me == self.flawed:
            added = {"action": "append_section", "section": "Acceptance criteria", "lines": [f"Verified: {text[2:]}"]}
            issues = [
                _issue(
                    "vague_term", number, f"{me}: no limit for '{word}'.", {"action": "open_point", "question": "?"}
                ),
                _issue("speed", number, f"{me}: not a category.", {"action": "open_point", "question": "Hm?"}),
                _issue("untestable", None, f"{me}: no acceptance criteria.", added),
            ]
        return {"summary": f"{me}: {len(issues)} issue(s)", "issues": issues}


def _start(api) -> str:
    body = {"workflow": "requirement_review", "input_markdown": CLINIC}
    response = api.post("/api/v1/tasks", body, format="json")
    assert response.status_code == 201, response.content
    return response.json()["task_id"]


def _artifacts(api, task_id: str) -> dict[str, str]:
    body = api.get(f"/api/v1/tasks/{task_id}").json()
    assert body["status"] == "completed", body["error"]
    return {a["name"]: a["content"] for a in body["artifacts"]}


def _errors(task_id: str, role: str) -> list[dict[str, Any]]:
    return [e for c in ExecutionContext.objects.filter(task_id=task_id, role=role) for e in c.output_state["errors"]]


def test_an_invalid_item_is_dropped_with_a_warning_and_the_valid_ones_are_kept(
    api, transactional_db, builtin, settings
):
    with host_on_model(settings, ExpertsBrain(flawed="dev")) as model:
        response = api.post(
            "/api/v1/tasks", {"workflow": "requirement_review", "input_markdown": CLINIC}, format="json"
        )
        task = wait_for_task(model.host, response.json()["task_id"])
        artifacts = _artifacts(api, task.id)
    assert task.status == "completed", task.error

    review = json.loads(artifacts["review_dev.json"])
    assert [i["category"] for i in review["issues"]] == ["vague_term", "untestable"]
    assert [i["id"] for i in review["issues"]] == ["dev-1", "dev-2"]
    (warning,) = review["warnings"]
    assert "/issues/1/category" in warning and "review (dev)" in warning
    evaluation = json.loads(artifacts["evaluate_dev.json"])
    assert "nobody-9" not in {r["target_issue"] for r in evaluation["responses"]}
    assert len(evaluation["responses"]) == 3  # one issue from each of the three others
    (warning,) = evaluation["warnings"]
    assert "/responses/0/target_issue" in warning
    assert json.loads(artifacts["review_pm.json"])["warnings"] == []

    # the inspector shows them: the architect's contexts carry the repair notes and the drops
    errors = _errors(task.id, "architect")
    drops = [e for e in errors if e["details"].get("reason") == "item_dropped"]
    assert [d["details"]["pointer"] for d in drops] == ["/issues/1", "/responses/0"]
    assert all(d["details"]["recovered"] for d in drops)
    assert len([e for e in errors if e["details"].get("reason") == "answer_repair"]) == 2
    # all four experts stayed in; the answer was asked once and sent back once per mode
    outcome = json.loads(artifacts["outcome.json"])
    assert outcome["reviewers"] == ["architect", "pm", "ai_expert", "domain_expert"]
    assert model.brain.asked["dev"] == 2 + 2 + 1
    assert set(model.brain.languages) == {"English"}
    # every expert's request asked for its answer's schema through response_format (issue 15)
    formats = [r.get("response_format") or {} for r in model.server.requests]
    assert {f.get("type") for f in formats} == {"json_schema"}
    reviews = [
        f for r, f in zip(model.server.requests, formats, strict=True) if "mode: review" in r["messages"][1]["content"]
    ]
    assert reviews and all(f["json_schema"]["schema"] == json.loads(json.dumps(REVIEW_SCHEMA)) for f in reviews)


def test_an_expert_whose_model_always_fails_leaves_the_review_going_with_the_others(
    api, transactional_db, builtin, settings
):
    with host_on_model(settings, ExpertsBrain(garbage="ai")) as model:
        response = api.post(
            "/api/v1/tasks", {"workflow": "requirement_review", "input_markdown": CLINIC}, format="json"
        )
        task = wait_for_task(model.host, response.json()["task_id"])
        artifacts = _artifacts(api, task.id)
    assert task.status == "completed", task.error
    assert model.brain.asked["ai"] == 2  # asked, sent back once, then left out of the later rounds

    outcome = json.loads(artifacts["outcome.json"])
    assert outcome["reviewers"] == ["architect", "pm", "domain_expert"]
    (warning,) = outcome["warnings"]
    assert warning.startswith("ai_expert failed in the review round (output_invalid")
    assert outcome["clean"] is False
    assert "review_ai.json" not in artifacts
    assert {"review_dev.json", "review_pm.json", "review_domain.json", "requirement_final.md"} <= set(artifacts)
    alert = Alert.objects.get(kind="expert_failed")
    assert alert.severity == "warning" and "ai_expert" in alert.message
    (error,) = [e for e in _errors(task.id, "main") if e.get("role") == "ai_expert"]
    assert error["code"] == "output_invalid" and error["warning"] == warning


SCHEMA = compile_schema(REVIEW_SCHEMA)
VALID = _issue("escape_clause", None, "Vague.", {"action": "open_point", "question": "Which?"})


@pytest.mark.parametrize(
    ("answer", "kept"),
    [
        ({"summary": "", "issues": [VALID, {**VALID, "severity": "huge"}, VALID]}, 2),
        ({"summary": "", "issues": [{**VALID, "severity": "huge"}]}, None),  # nothing valid left
        ({"summary": 5, "issues": [VALID, {**VALID, "severity": "huge"}]}, None),  # outside the items
        ({"issues": [VALID]}, None),  # not the schema's shape
        ("not json", None),
    ],
)
def test_salvage_keeps_valid_items_only_when_every_error_is_inside_an_item(answer, kept):
    content = answer if isinstance(answer, str) else json.dumps(answer)
    saved = salvage(content, SCHEMA, None, "issues")
    if kept is None:
        assert saved is None
    else:
        data, dropped = saved
        assert len(data["issues"]) == kept
        assert [d.pointer for d in dropped] == ["/issues/1"]
        assert dropped[0].errors[0]["pointer"] == "/issues/1/severity"
