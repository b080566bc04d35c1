"""The interview's options on every project type and a draft that keeps the operator's words
(issue 27 items 5 and 6): every question of every type offers options and a recommended
answer (tested from the files' rows); a follow-up refines a clause instead of replacing it;
two answers that say the same thing give one requirement; two that disagree are an open
point naming both, never both stated; bad answers are refused naming the field. Offline
and through the API, in Chinese and English."""

from __future__ import annotations

import json
import re

import pytest
import yaml

from teamclaw.workflows import ears
from teamclaw.workflows.clarify import load_clarify_rules
from teamclaw.workflows.interview import (
    PROJECT_TYPES_DIR,
    interview_result,
    interview_round,
    load_project_types,
    match_project_type,
    write_requirement,
)
from teamclaw.workflows.quality_engine import check_text
from tests.runs.test_interview_api import artifact, interview_to_draft, start, wait_for
from tests.workflows.test_interview_clarify import CLINIC, plan_all

OLDER_TYPES = ("agent_dev", "feature_update", "testing", "unknown")
QUESTION_ROWS = [
    (kind, question["id"])
    for kind in OLDER_TYPES
    for question in yaml.safe_load((PROJECT_TYPES_DIR / f"{kind}.yaml").read_text(encoding="utf-8"))["questions"]
]
ORDERS = "Add a CSV export of the order list for shop admins"


def _question(kind: str, question_id: str) -> dict:
    return next(q for q in load_project_types()[kind].questions if q["id"] == question_id)


def _draft(kind: str, language: str, idea: str, texts: dict[str, str]) -> tuple[str, dict]:
    rounds, final = plan_all(kind, language, texts)
    project_type = load_project_types()[kind]
    result = interview_result(idea, project_type, language, "high", rounds, final)
    return write_requirement(result, project_type)[0], result


def _requirements(draft: str) -> list[str]:
    return re.findall(r"^- FR-\d{3}[：:] ?(.+)$", draft, re.MULTILINE)


def _open_points(draft: str, language: str) -> str:
    title = {"zh": "## 待确认事项", "en": "## Open points"}[language]
    clarifications = {"zh": "## 澄清记录", "en": "## Clarifications"}[language]
    return draft.split(title)[1].split(clarifications)[0] if title in draft else ""


# -- every project type offers options and a recommended answer -----------------------------------
@pytest.mark.parametrize(("kind", "question_id"), QUESTION_ROWS)
def test_each_question_of_the_older_types_offers_options_and_a_recommended_answer(kind, question_id):
    question = _question(kind, question_id)
    keys = [o["key"] for o in question["options"]]
    assert len(keys) >= 2 and question["recommended"] in keys
    for language in ("en", "zh"):
        assert question["reason"][language].strip()
        assert all(o[language].strip() for o in question["options"])
    # An option the operator picks is a requirement the engine does not need to follow up.
    follow_up = load_clarify_rules().follow_up_categories
    for option in question["options"]:
        for language, heading in (("en", "Requirements"), ("zh", "需求")):
            found = check_text(f"# Draft\n\n## {heading}\n\n- {option[language]}\n")
            assert not [f.rule for f in found if f.category in follow_up], (option["key"], language)


@pytest.mark.parametrize("kind", OLDER_TYPES)
@pytest.mark.parametrize("language", ["en", "zh"])
def test_the_first_round_of_each_older_type_offers_the_options_and_the_recommendation(kind, language):
    plan = interview_round(load_project_types()[kind], language, 1, [])
    for question in plan["questions"]:
        source = _question(kind, question["question_id"])
        assert [o["text"] for o in question["options"][:-1]] == [o[language] for o in source["options"]]
        assert question["options"][-1]["key"] == "X"  # the open option, always last
        assert question["recommended"] == source["recommended"] and question["reason"] == source["reason"][language]


@pytest.mark.parametrize("kind", OLDER_TYPES)
@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda q: q.pop("recommended"), "options need a recommended one"),
        (lambda q: q["reason"].pop("zh"), "options need a reason in each of en, zh"),
    ],
)
def test_an_older_type_file_whose_options_lack_a_recommendation_or_reason_is_refused(tmp_path, kind, change, message):
    for path in PROJECT_TYPES_DIR.glob("*.yaml"):
        (tmp_path / path.name).write_text(path.read_text(encoding="utf-8"), encoding="utf-8")
    data = yaml.safe_load((tmp_path / f"{kind}.yaml").read_text(encoding="utf-8"))
    change(data["questions"][1])
    (tmp_path / f"{kind}.yaml").write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    with pytest.raises(ValueError) as refused:
        load_project_types(tmp_path)
    assert f"{kind}.yaml" in str(refused.value) and message in str(refused.value)
    assert f"question {data['questions'][1]['id']}" in str(refused.value).replace("'", "")


# -- the draft keeps the operator's words ------------------------------------------------------------
CLINIC_ANSWERS = {
    "goal": "让居民在网上预约挂号，不用到诊所排队",
    "users": "病人可以在手机上选医生和时间段；护士可以临时加号；每位病人最多同时预约 3 个号",
    "flow": "病人选科室、医生和时间段，提交后系统要尽快发短信确认；医生可以查看当天的预约名单",
    "data": "A",
    "quality": "系统要快，病人的信息要保密",
    # Round 2: the follow-ups on the vague clauses, and an answer that repeats one and contradicts another.
    "flow-f1": "提交后 1 分钟内发出短信",
    "quality-f1": "A",
    "quality-f2": "95% 的页面在 2 秒内打开",
    "edge_cases": "如果号满了，系统提示病人换一个时间段；病人能在手机上选择医生和时段；每位病人最多同时预约 5 个号",
}


def test_a_follow_up_refines_the_flow_answer_and_keeps_the_operators_words():
    draft, _ = _draft("new_system", "zh", CLINIC, CLINIC_ANSWERS)
    requirements = _requirements(draft)
    # The flow's clause stays in the operator's words, with the follow-up's answer beside it.
    assert "当提交后，系统应尽快发短信确认（细化：提交后 1 分钟内发出短信）。" in requirements
    assert "系统应快（细化：95% 的页面在 2 秒内打开）。" in requirements
    assert "系统应满足：病人的信息要保密（细化：只有本人和为其服务的工作人员可以查看）。" in requirements
    assert "系统应允许医生查看当天的预约名单。" in requirements
    # A refinement is never a requirement of its own, cut from the clause it refines.
    assert not any(r.startswith("系统应满足：提交后 1 分钟内") for r in requirements)
    # Every clause the operator wrote is in a requirement, or an open point (never lost).
    kept = draft.split("## 澄清记录")[0]
    said = ("让居民在网上预约挂号", "不用到诊所排队", "护士临时加号", "病人选科室、医生和时间段", "尽快发短信确认",
            "医生查看当天的预约名单", "快", "病人的信息要保密")  # fmt: skip
    for words in said:
        assert words in kept, words


def test_two_answers_that_say_the_same_give_one_requirement_and_two_that_disagree_an_open_point():
    draft, result = _draft("new_system", "zh", CLINIC, CLINIC_ANSWERS)
    requirements = _requirements(draft)
    same = [r for r in requirements if "手机上选" in r]
    assert same == ["系统应允许病人在手机上选医生和时间段。"], same
    (row,) = [r for r in result["requirements"] if "手机上选" in r["clause"]]
    assert row["source"] == "r1-users" and row["also"] == ["r2-edge_cases"]
    # "at most 3" (users) against "at most 5" (edge cases): a follow-up names both ...
    follow_ups = [e for e in result["entries"] if e.get("rule") == "answers-disagree"]
    assert (
        follow_ups and "最多同时预约 3 个号" in follow_ups[0]["text"] and "最多同时预约 5 个号" in follow_ups[0]["text"]
    )
    # ... and, left unanswered, neither is stated: the open point names both.
    assert not any("最多同时预约" in r for r in requirements)
    assert any("3 个号" in p and "5 个号" in p for p in result["unanswered"]), result["unanswered"]
    assert "3 个号" in _open_points(draft, "zh") and "5 个号" in _open_points(draft, "zh")
    # The numbering has no gap and each requirement says one thing once.
    assert len(set(requirements)) == len(requirements)
    assert [r["id"] for r in result["requirements"]] == [f"FR-{n:03d}" for n in range(1, len(requirements) + 1)]


def test_a_contradiction_settled_keeps_the_chosen_statement_or_the_operators_own_words():
    rounds, _ = plan_all("new_system", "zh", CLINIC_ANSWERS)
    disagreement = next(q for r in rounds for q in r["questions"] if q.get("rule") == "answers-disagree")
    kind = load_project_types()["new_system"]
    for answer, stated, gone in (
        ("A", ["每位病人最多同时预约 3 个号"], ["5 个号"]),
        ("每位病人最多同时预约 4 个号", ["每位病人最多同时预约 4 个号"], ["3 个号", "5 个号"]),
    ):
        settled = [
            {**r, "answers": {**r["answers"], disagreement["id"]: answer}} if disagreement in r["questions"] else r
            for r in rounds
        ]
        result = interview_result(CLINIC, kind, "zh", "high", settled, interview_round(kind, "zh", 9, settled))
        texts = " ".join(r["text"] for r in result["requirements"])
        assert all(s in texts for s in stated) and not any(g in texts for g in gone), (answer, texts)
        assert not any("3 个号" in p for p in result["unanswered"])


def test_a_contradiction_the_engine_finds_left_open_stays_an_open_point_naming_both():
    kind = load_project_types()["new_system"]
    first = interview_round(kind, "zh", 1, [])
    answers = {q["id"]: "" for q in first["questions"]}
    answers["r1-users"] = "每位病人最多同时预约 3 个号。"
    answers["r1-flow"] = "病人预约号的数量不限。"
    second = interview_round(kind, "zh", 2, [{**first, "answers": answers}])
    (follow_up,) = [q for q in second["questions"] if q["kind"] == "follow_up"]
    rounds = [{**first, "answers": answers}, {**second, "answers": {follow_up["id"]: "X"}}]
    result = interview_result(CLINIC, kind, "zh", "high", rounds, interview_round(kind, "zh", 3, rounds))
    assert result["requirements"] == []  # neither statement is stated while they contradict
    assert follow_up["text"] in result["unanswered"]
    assert "每位病人最多同时预约 3 个号" in follow_up["text"] and "病人预约号的数量不限" in follow_up["text"]


def test_relation_tells_the_same_thing_from_a_disagreement_in_both_languages():
    rows = [
        ("zh", "病人可以在手机上选医生和时间段", "病人能在手机上选择医生和时段", "same"),
        ("zh", "每位病人最多同时预约 3 个号", "每位病人最多同时预约 5 个号", "conflict"),
        ("zh", "护士可以临时加号", "护士不能临时加号", "conflict"),
        ("zh", "病人可以取消预约", "医生可以取消预约", "different"),
        ("zh", "病人选科室", "病人选科室、医生和时间段", "different"),
        ("en", "Shop admins can export the order list as CSV",
         "Admins of the shop can export the order list as a CSV file", "same"),
        ("en", "The export includes at most 10,000 orders", "The export includes at most 50,000 orders", "conflict"),
        ("en", "Shop admins can export the order list", "Shop admins can filter the order list by date", "different"),
    ]  # fmt: skip
    for language, a, b, expected in rows:
        assert ears.relation(a, b, language) == expected, (a, b)


ORDERS_ANSWERS = {
    "goal": "Admins copy orders into spreadsheets by hand every week.",
    "behaviour": "Shop admins can export the order list as CSV. The export must be quick. "
    "The export includes at most 10,000 orders.",
    "users": "B",
    "failure": "A",
    "acceptance": "",
    "behaviour-f1": "The file is ready within 60 seconds for 10,000 orders.",
    "scope": "Admins of the shop can export the order list as a CSV file. The export includes at most 50,000 orders.",
}


def test_the_english_order_export_draft_refines_folds_and_leaves_the_disagreement_open():
    assert match_project_type(ORDERS)["project_type"] == "feature_update"
    draft, _ = _draft("feature_update", "en", ORDERS, ORDERS_ANSWERS)
    requirements = _requirements(draft)
    assert "The system shall let shop admins export the order list as CSV." in requirements
    assert not any("Admins of the shop" in r for r in requirements)  # said once
    assert (
        "The system shall require the export to be quick (refined: The file is ready within 60 seconds for "
        "10,000 orders)." in requirements
    )
    assert "The system shall let only administrators use it." in requirements  # option B, the recommended one
    assert not any("at most" in r for r in requirements)
    points = _open_points(draft, "en")
    assert "at most 10,000 orders" in points and "at most 50,000 orders" in points
    assert "How will you check that the change works?" in points  # unanswered stays open
    assert "## Clarifications" in draft and "→ A: (not answered: an open point)" in draft
    assert not re.search(r"[\u4e00-\u9fff]", draft)


# -- through the API, as an operator would --------------------------------------------------------------
def test_the_clinic_interview_through_the_api_keeps_refined_words_folds_repeats_and_opens_the_contradiction(
    api, runtime_host
):
    task_id = start(api, description=CLINIC)
    body, seen = interview_to_draft(api, runtime_host, task_id, CLINIC_ANSWERS)
    assert json.loads(artifact(body, "project_type.json"))["project_type"] == "new_system"
    asked = [q for round_ in seen for q in round_["questions"]]
    assert any(q["kind"] == "follow_up" and "系统要快" in q["text"] for q in asked)
    assert any(q.get("rule") == "answers-disagree" for q in asked)
    assert all(len(round_["questions"]) <= 5 for round_ in seen)
    draft = artifact(body, "requirement.md")
    requirements = _requirements(draft)
    assert "当提交后，系统应尽快发短信确认（细化：提交后 1 分钟内发出短信）。" in requirements
    assert [r for r in requirements if "手机上选" in r] == ["系统应允许病人在手机上选医生和时间段。"]
    assert not any("最多同时预约" in r for r in requirements)
    assert "3 个号" in _open_points(draft, "zh") and "5 个号" in _open_points(draft, "zh")
    assert "## 澄清记录" in draft and "→ 答：提交后 1 分钟内发出短信" in draft
    api.post(f"/api/v1/tasks/{task_id}/cancel", {}, format="json")


def test_the_order_export_interview_through_the_api_in_english(api, runtime_host):
    task_id = start(api, description=ORDERS)
    body = wait_for(api, runtime_host, task_id, "interview")
    assert all(q["options"] and q["recommended"] for q in body["questions"])  # the feature-update type offers them
    body, _ = interview_to_draft(api, runtime_host, task_id, ORDERS_ANSWERS)
    draft = artifact(body, "requirement.md")
    assert "(refined: The file is ready within 60 seconds for 10,000 orders)" in draft
    assert "at most 50,000 orders" in _open_points(draft, "en")
    api.post(f"/api/v1/tasks/{task_id}/cancel", {}, format="json")


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        ("   ", "holds no words"),
        ("。。。", "holds no words"),
        ("D", "is not one of the options (A, B, C, X)"),
        ("option d.", "is not one of the options (A, B, C, X)"),
        ("选项：Ｄ", "is not one of the options (A, B, C, X)"),
        ("Ｄ", "is not one of the options (A, B, C, X)"),
        ("Patients \u202eand doctors", "holds an invisible control character (U+202E"),
        ("Patients\x1b[31m", "holds an invisible control character (U+001B"),
    ],
)
def test_a_blank_answer_or_an_unknown_option_is_refused_naming_the_field(api, runtime_host, answer, reason):
    task_id = start(api, description=CLINIC)
    body = wait_for(api, runtime_host, task_id, "interview")
    answers = {q["id"]: "" for q in body["questions"]}
    response = api.post(f"/api/v1/tasks/{task_id}/answers", {"answers": {**answers, "r1-data": answer}}, format="json")
    assert response.status_code == 400, response.content
    assert any(reason in message for message in response.json()["errors"]["answers.r1-data"]), response.json()
    # An option key, in any case, is taken; so is a word of the operator's own.
    ok = api.post(f"/api/v1/tasks/{task_id}/answers", {"answers": {**answers, "r1-data": "b"}}, format="json")
    assert ok.status_code == 200 and ok.json()["status"] == "answered"
    api.post(f"/api/v1/tasks/{task_id}/cancel", {}, format="json")


def test_an_unknown_option_is_refused_in_chinese_too(api, runtime_host):
    task_id = start(api, description=CLINIC)
    body = wait_for(api, runtime_host, task_id, "interview")
    answers = {q["id"]: "" for q in body["questions"]}
    response = api.post(
        f"/api/v1/tasks/{task_id}/answers",
        {"answers": {**answers, "r1-users": "选项 E"}},
        format="json",
        HTTP_ACCEPT_LANGUAGE="zh-hans",
    )
    assert response.status_code == 400
    assert response.json()["errors"]["answers.r1-users"] == ["“选项 E”不是可选项之一（A, B, C, X）"]
    api.post(f"/api/v1/tasks/{task_id}/cancel", {}, format="json")
