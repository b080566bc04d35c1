"""``requirement_review`` end to end on the ``openai`` executor: the server's runtime host,
the database, the API, and a chat-completions server on 127.0.0.1 acting as the experts'
model. The experts' judgement comes from the model; the merge rules stay the seed's."""

from __future__ import annotations

import json
import re
from types import SimpleNamespace
from typing import Any

import pytest

from monitoring.models import ExecutionContext, Task
from prompts.render import system_prompt
from team.snapshot import build_snapshot
from tests.documents import CLINIC
from tests.helpers import wait_for_task
from tests.model_server import Completion, host_on_model, usage_for

LINE = re.compile(r"^\s*(\d+) \| (.*)$", re.MULTILINE)
ISSUE = re.compile(r"^- \[([a-z_]+-\d+)\]", re.MULTILINE)
WORD = re.compile(r"[A-Za-z]{6,}")


class ReviewBrain:
    """Plays the experts' model: reads the prompt like a model would and answers JSON.

    review: one issue per perspective on the first requirement line with a long word (dev
    rewrites that word, pm adds an acceptance criterion, ai asks an open question, domain
    proposes a scope reduction); dev's first answer quotes words that are not on the line,
    so it is sent back once for repair. evaluate: agree with every issue. respond: keep all.
    """

    def __init__(self) -> None:
        self.reviews: dict[str, dict[str, Any]] = {}
        self.repairs = 0

    def __call__(self, body: dict[str, Any]) -> Completion:
        prompt = body["messages"][-1]["content"]
        if body["messages"][-1]["role"] == "user" and prompt.startswith("Your answer does not match"):
            self.repairs += 1
            content = json.dumps(self.reviews["dev"])
        elif "mode: review" in prompt:
            content = json.dumps(self._review(prompt))
        elif "mode: evaluate" in prompt:
            ids = ISSUE.findall(prompt)
            responses = [
                {"target_issue": i, "stance": "agree", "comment": f"I agree with {i}.", "reasoning": "Same evidence."}
                for i in ids
            ]
            content = json.dumps({"responses": responses})
        else:
            content = json.dumps({"withdrawn": []})
        return Completion(content, usage=usage_for(body, content))

    def _review(self, prompt: str) -> dict[str, Any]:
        me = re.search(r"perspective '(\w+)'", prompt).group(1)
        number, text, word = next(
            (int(n), t, WORD.search(t).group(0))
            for n, t in LINE.findall(prompt)
            if t.startswith("- ") and WORD.search(t)
        )
        changes = {
            "dev": {"action": "replace", "old": word, "new": f"{word} (within 30 seconds)"},
            "pm": {"action": "append_section", "section": "Acceptance criteria", "lines": [f"Verified: {text[2:]}"]},
            "ai": {"action": "open_point", "question": f"Who decides what '{word}' means?"},
            "domain": {"action": "scope_reduction", "old": word, "new": "something simpler"},
        }
        issue = {
            "category": {"dev": "vague_term", "pm": "untestable", "ai": "escape_clause", "domain": "compound"}[me],
            "severity": "major",
            "line": number,
            "problem": f"The {me} expert questions '{word}' on line {number}.",
            "suggestion": "Make it precise.",
            "change": changes[me],
        }
        answer = {"summary": f"{me}: one issue", "issues": [issue]}
        self.reviews[me] = answer
        if me == "dev" and not self.repairs:
            wrong = json.loads(json.dumps(answer))
            wrong["issues"][0]["change"]["old"] = "words that are nowhere"
            return wrong
        return answer


@pytest.fixture
def model_host(transactional_db, builtin, settings):
    with host_on_model(settings, ReviewBrain(), MODEL_STREAM=True) as model:
        yield model


def test_requirement_review_runs_end_to_end_on_the_openai_executor(api, model_host):
    response = api.post("/api/v1/tasks", {"workflow": "requirement_review", "input_markdown": CLINIC}, format="json")
    assert response.status_code == 201, response.content
    task = wait_for_task(model_host.host, response.json()["task_id"])
    body = api.get(f"/api/v1/tasks/{task.id}").json()
    assert body["status"] == "completed", body["error"]
    assert task.executor == "openai"
    artifacts = {a["name"]: a["content"] for a in body["artifacts"]}
    server, brain = model_host.server, model_host.brain

    # the experts' artifacts are the model's answers
    for perspective, answer in brain.reviews.items():
        review = json.loads(artifacts[f"review_{perspective}.json"])
        assert [i["problem"] for i in review["issues"]] == [i["problem"] for i in answer["issues"]]
        assert review["model"] == "review-model"
    assert set(brain.reviews) == {"dev", "pm", "ai", "domain"}
    assert brain.repairs == 1  # dev's answer quoted words not on its line and was repaired once
    evaluation = json.loads(artifacts["evaluate_pm.json"])
    others = sum(len(a["issues"]) for p, a in brain.reviews.items() if p != "pm")
    assert len(evaluation["responses"]) == others
    assert {r["stance"] for r in evaluation["responses"]} == {"agree"}

    # the seed's merge rules applied to the model's findings
    final = artifacts["requirement_final.md"]
    dev_change = brain.reviews["dev"]["issues"][0]["change"]
    # unanimous -> adopted, the model's figure marked as a proposal the user has not confirmed (issue point 5)
    assert f"{dev_change['old']} (proposed, to be confirmed: within 30 seconds)" in final
    assert brain.reviews["domain"]["issues"][0]["change"]["new"] not in final  # scope reduction -> never
    report = json.loads(artifacts["consolidation_report.json"])
    assert {d["rule"] for d in report["decisions"]} >= {"rule_1_optimise", "rule_3_forbidden", "owner_decision"}

    # each expert spoke with its own rendered prompt as the system message
    snapshot = build_snapshot()
    expected = system_prompt(
        snapshot, "architect", SimpleNamespace(description=task.description, prompt_enhancement="")
    )
    assert any(r["messages"][0]["content"] == expected and "mode: review" in r["messages"][1]["content"]
               for r in server.requests)  # fmt: skip

    # every token the model reported is accounted, exactly, and none is estimated
    assert Task.objects.get(pk=task.id).tokens_used == server.reported_tokens()
    reviewers = ExecutionContext.objects.filter(
        task_id=task.id, role__in=["architect", "pm", "ai_expert", "domain_expert"]
    )
    assert sum(c.total_tokens for c in reviewers) == server.reported_tokens()
    assert not any(c.tokens_estimated for c in reviewers)
    assert all(r.get("stream") for r in server.requests)
    assert all(h["authorization"] == "Bearer sk-e2e-secret-key" for h in server.headers)
    assert "sk-e2e-secret-key" not in json.dumps(body)
