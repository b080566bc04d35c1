"""Seed 002 phases 2-5 on the ``openai`` executor: the model matches the project type and words
the interview's questions; an answer still invalid after the repair falls back to the offline
brain with a recorded warning; the whole idea -> interview -> draft -> review flow through the
API. A real chat-completions server on 127.0.0.1 plays the model; runtime, database and API
are real."""

from __future__ import annotations

import json
import re
from typing import Any

from monitoring.models import ExecutionContext
from teamclaw.workflows.interview import interview_round, load_project_types
from tests.executors.test_expert_answers_on_a_model import ExpertsBrain
from tests.helpers import wait_for_task
from tests.model_server import Completion, host_on_model, usage_for
from tests.runs.test_interview_api import IDEA_EN, IDEA_ZH, ROUND_1, ROUND_2, answer_all, artifact, start, wait_for

QUESTION = re.compile(r"^- (r\d-[a-z_]+) \(section", re.MULTILINE)
ROUND = re.compile(r"phase 3: round (\d)")


class DraftingBrain:
    """The product manager's model. ``project_type``: the type it names (the same again when
    sent back); ``drop``: a question id it leaves out of every wording. Questions are reworded
    as ``Model asks (<id>): ...`` (``模型提问（<id>）`` for a Chinese idea), round 2 in technical
    style. Experts' prompts go to an ``ExpertsBrain``."""

    def __init__(self, project_type: str = "testing", drop: str = "") -> None:
        self.project_type, self.drop = project_type, drop
        self.experts = ExpertsBrain()
        self.asked: dict[str, int] = {}
        self.prompts: list[str] = []

    def __call__(self, body: dict[str, Any]) -> Completion:
        prompt = body["messages"][1]["content"]
        if "mode: " in prompt:
            return self.experts(body)
        self.prompts.append(prompt)
        if "phase 2: project type matching" in prompt:
            self.asked["type"] = self.asked.get("type", 0) + 1
            answer: dict[str, Any] = {
                "project_type": self.project_type,
                "confidence": "high",
                "matched_keywords": ["export"] if "export" in prompt else [],
                "reason": "The idea asks for a check of quality.",
            }
        else:
            self.asked["interview"] = self.asked.get("interview", 0) + 1
            chinese = "in Chinese" in prompt
            round_number = int(ROUND.search(prompt).group(1))
            questions = [
                {
                    "id": qid,
                    "text": f"模型提问（{qid}）：请说明。" if chinese else f"Model asks ({qid}): please explain.",
                }
                for qid in QUESTION.findall(prompt)
                if qid != self.drop
            ]
            answer = {"style": "technical" if round_number == 2 else "business", "questions": questions}
        content = json.dumps(answer, ensure_ascii=False)
        return Completion(content, usage=usage_for(body, content))


def _pm_errors(task_id: str) -> list[dict[str, Any]]:
    contexts = ExecutionContext.objects.filter(task_id=task_id, role="pm")
    return [e for c in contexts for e in c.output_state.get("errors", [])]


def test_the_model_picks_the_type_and_words_the_questions_keeping_their_ids(api, transactional_db, builtin, settings):
    with host_on_model(settings, DraftingBrain(project_type="testing")) as model:
        task_id = start(api, description=IDEA_EN)
        body = wait_for(api, model.host, task_id, "interview")
        matched = json.loads(artifact(body, "project_type.json"))
        expected = interview_round(load_project_types()["testing"], "en", 1, [])
        api.post(f"/api/v1/tasks/{task_id}/cancel", {}, format="json")
        wait_for_task(model.host, task_id)
    # the offline keyword matcher would say feature_update: the model's choice is the one used
    assert matched["project_type"] == "testing" and matched["matched_by"] == "model"
    assert matched["confidence"] == "high" and matched["matched_keywords"] == ["export"]
    assert {c["type"] for c in matched["candidates"]} == {
        "agent_dev",
        "feature_update",
        "new_system",
        "testing",
        "unknown",
    }
    assert matched["warnings"] == []
    questions = body["questions"]
    assert (
        [q["id"] for q in questions]
        == [q["id"] for q in expected["questions"]]
        == ["r1-goal", "r1-target", "r1-method", "r1-acceptance", "r1-failure"]
    )
    assert [q["section"] for q in questions] == [q["section"] for q in expected["questions"]]
    assert [q["text"] for q in questions] == [f"Model asks ({q['id']}): please explain." for q in questions]
    # the prompt offered every known type and the type's own wording to start from
    type_prompt, interview_prompt = model.brain.prompts
    assert all(f"- {t}:" in type_prompt for t in load_project_types())
    assert (
        expected["questions"][0]["text"] in interview_prompt and "Write every question in English" in interview_prompt
    )
    assert not [e for e in _pm_errors(task_id) if e["details"].get("reason") == "offline_fallback"]


def test_a_type_that_does_not_exist_is_sent_back_once_then_the_offline_matcher_decides(
    api, transactional_db, builtin, settings
):
    with host_on_model(settings, DraftingBrain(project_type="rocket_science")) as model:
        task_id = start(api, description=IDEA_EN)
        body = wait_for(api, model.host, task_id, "interview")
        api.post(f"/api/v1/tasks/{task_id}/cancel", {}, format="json")
        wait_for_task(model.host, task_id)
    assert model.brain.asked["type"] == 2
    matched = json.loads(artifact(body, "project_type.json"))
    assert matched["project_type"] == "feature_update" and matched["matched_by"] == "offline"
    (warning,) = matched["warnings"]
    assert "project type matching" in warning and "offline" in warning
    errors = _pm_errors(task_id)
    (fallback,) = [e for e in errors if e["details"].get("reason") == "offline_fallback"]
    assert fallback["message"] == warning and fallback["code"] == "output_invalid"
    assert any("/project_type" == e["pointer"] for e in fallback["details"]["errors"])
    assert [q["id"] for q in body["questions"]] == [  # feature_update's, ranked by impact
        "r1-goal", "r1-behaviour", "r1-users", "r1-failure", "r1-acceptance",
    ]  # fmt: skip


def test_a_wording_that_drops_a_question_falls_back_to_the_offline_wording(api, transactional_db, builtin, settings):
    with host_on_model(settings, DraftingBrain(project_type="feature_update", drop="r1-users")) as model:
        task_id = start(api, description=IDEA_EN)
        body = wait_for(api, model.host, task_id, "interview")
        api.post(f"/api/v1/tasks/{task_id}/cancel", {}, format="json")
        wait_for_task(model.host, task_id)
    assert model.brain.asked["interview"] == 2
    expected = interview_round(load_project_types()["feature_update"], "en", 1, [])
    assert [(q["id"], q["text"]) for q in body["questions"]] == [(q["id"], q["text"]) for q in expected["questions"]]
    (fallback,) = [e for e in _pm_errors(task_id) if e["details"].get("reason") == "offline_fallback"]
    assert "interview wording" in fallback["message"]


def test_a_chinese_idea_is_worded_in_chinese_by_the_model(api, transactional_db, builtin, settings):
    with host_on_model(settings, DraftingBrain(project_type="feature_update")) as model:
        task_id = start(api, description=IDEA_ZH)
        body = wait_for(api, model.host, task_id, "interview")
        api.post(f"/api/v1/tasks/{task_id}/cancel", {}, format="json")
        wait_for_task(model.host, task_id)
    assert "Write every question in Chinese" in model.brain.prompts[-1]
    assert body["questions"][0]["text"] == "模型提问（r1-goal）：请说明。"


def test_the_whole_flow_from_an_idea_to_the_review_runs_on_the_model(api, transactional_db, builtin, settings):
    with host_on_model(settings, DraftingBrain(project_type="feature_update")) as model:
        task_id = start(api, description=IDEA_EN)
        body = wait_for(api, model.host, task_id, "interview")
        assert body["questions"][0]["text"] == "Model asks (r1-goal): please explain."
        answer_all(api, task_id, body["questions"], ROUND_1)
        body = wait_for(api, model.host, task_id, "interview")
        assert [q["id"] for q in body["questions"]] == ["r2-scope"]
        answer_all(api, task_id, body["questions"], ROUND_2)
        body = wait_for(api, model.host, task_id, "next_action")
        draft = artifact(body, "requirement.md")
        assert api.post(f"/api/v1/tasks/{task_id}/next", {"action": "review"}, format="json").status_code == 200
        task = wait_for_task(model.host, task_id)
        assert task.status == "completed", task.error
        body = api.get(f"/api/v1/tasks/{task_id}").json()
    assert task.executor == "openai"
    for text in (*ROUND_1.values(), *ROUND_2.values()):
        assert f"→ A: {text}" in draft  # the writer stays deterministic: the user's own words
    assert "- FR-003: The system shall let support staff export only their own region." in draft
    result = json.loads(artifact(body, "interview_result.json"))
    assert result["project_type"] == "feature_update"
    assert result["answers"][0]["question"] == "Model asks (r1-goal): please explain."
    assert [a["style"] for a in result["answers"]] == ["business"] * 5 + ["technical"]
    assert model.brain.asked == {"type": 1, "interview": 2}
    outcome = body["outcome"]
    assert outcome["phase"] == "review" and outcome["reviewers"] == ["architect", "pm", "ai_expert", "domain_expert"]
    assert {"review_dev.json", "requirement_final.md", "quality_report.json"} <= {a["name"] for a in body["artifacts"]}
    assert set(model.brain.experts.languages) == {"English"}
