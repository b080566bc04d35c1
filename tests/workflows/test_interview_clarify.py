"""The interview as a clarify step (issue 27 items 5 and 6): a new-system project type, a
coverage map, at most 5 ranked questions a round with options and a recommended one, a
follow-up on a vague answer or a contradiction, and a draft of numbered EARS requirements
with a Clarifications log, built only from the operator's words; through the API (offline
executor), on the page and in A2A's text, in Chinese and English."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from monitoring.models import ToolConfirmation
from teamclaw.workflows import clarify, ears
from teamclaw.workflows.clarify import InterviewFileError, load_clarify_rules, resolve_answer
from teamclaw.workflows.interview import (
    PROJECT_TYPES_DIR,
    interview_result,
    interview_round,
    load_project_types,
    match_project_type,
    write_requirement,
)
from teamclaw.workflows.quality_engine import check_text
from tests.helpers import wait_for_task
from tests.runs.test_interview_api import answer_all, artifact, interview_to_draft, start, wait_for

CLINIC = "给社区诊所做一个网上预约挂号系统"
CLINIC_ROUND_1 = {
    "goal": "让居民在网上预约挂号，不用到诊所排队",
    "users": "病人可以在手机上选医生和时间段；护士可以临时加号",
    "flow": "病人选科室、医生和时间段，提交后系统发短信确认",
    "data": "A",
    "quality": "系统要快，病人的信息要保密",
}
CLINIC_ROUND_2 = {
    "quality-f1": "A",  # the confidentiality follow-up: the recommended option
    "quality-f2": "95% 的页面在 2 秒内打开",  # the speed follow-up: a figure of the operator's own
    "edge_cases": "如果号满了，系统提示病人换一个时间段",
}
WALKS = "Build a web app for a dog-walking business to take bookings"
WALKS_ANSWERS = {
    "goal": "Owners book walks online instead of phoning the walker.",
    "users": "Owners can book and cancel their own walks; walkers can see the walks assigned to them.",
    "flow": "When an owner books a walk, the system must send the walker a confirmation.",
    "data": "C",
    "quality": "The booking page must be fast.",
    "quality-f1": "Bookings are confirmed within 3 seconds for 95% of requests.",
}


def plan_all(project_type: str, language: str, texts: dict[str, str], rounds_max: int = 6):
    """The offline interview run to its end with ``texts`` by question id: (rounds, final plan)."""
    kind = load_project_types()[project_type]
    rounds: list[dict] = []
    for number in range(1, rounds_max + 1):
        plan = interview_round(kind, language, number, rounds)
        if not plan["questions"]:
            return rounds, plan
        answers = {q["id"]: texts.get(q["question_id"], "") for q in plan["questions"]}
        rounds.append({**plan, "answers": answers})
    raise AssertionError("the interview never ended")


# -- the data -----------------------------------------------------------------------------------------
def test_the_clinic_idea_is_a_new_system_and_feature_ideas_stay_feature_updates():
    match = match_project_type(CLINIC)
    assert match["project_type"] == "new_system" and match["confidence"] == "high"
    assert "new_system" in [c["type"] for c in match["candidates"]]
    assert match_project_type(WALKS)["project_type"] == "new_system"
    assert match_project_type("Add a CSV export of the order list for shop admins")["project_type"] == "feature_update"
    assert match_project_type("给现有的订单列表页面增加导出功能")["project_type"] == "feature_update"


def test_every_project_type_question_names_a_coverage_category_and_an_impact():
    categories = {c["id"] for c in load_clarify_rules().categories}
    for kind in load_project_types().values():
        for question in kind.questions:
            assert question["category"] in categories, (kind.type, question["id"])
            assert 1 <= question["impact"] <= 5
    for question in load_project_types()["new_system"].questions:  # the new type offers options
        assert "reason" in question and isinstance(question["options"], list), question["id"]
        if question["options"]:
            assert question["recommended"] in {o["key"] for o in question["options"]}, question["id"]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d["questions"][0].update(category="speed"), "unknown category 'speed'"),
        (lambda d: d["questions"][0].update(impact=9), "impact must be a whole number from 1 to 5"),
        (lambda d: d["questions"][0].update(recommended="Z"), "recommended 'Z' is not one of its options"),
        (lambda d: d["questions"][0]["options"][0].pop("zh"), "needs a text for each of en, zh"),
    ],
)
def test_a_project_type_file_with_a_bad_question_is_refused_naming_file_and_question(tmp_path, change, message):
    for path in PROJECT_TYPES_DIR.glob("*.yaml"):
        (tmp_path / path.name).write_text(path.read_text(encoding="utf-8"), encoding="utf-8")
    data = yaml.safe_load((tmp_path / "new_system.yaml").read_text(encoding="utf-8"))
    change(data)
    (tmp_path / "new_system.yaml").write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    with pytest.raises(ValueError) as refused:
        load_project_types(tmp_path)
    assert "new_system.yaml" in str(refused.value) and message in str(refused.value)
    assert "goal" in str(refused.value)


def test_an_interview_data_file_with_a_bad_entry_is_refused(tmp_path):
    source = Path(clarify.__file__).with_name("interview_files")
    for path in source.glob("*.yaml"):
        (tmp_path / path.name).write_text(path.read_text(encoding="utf-8"), encoding="utf-8")
    data = yaml.safe_load((tmp_path / "follow_ups.yaml").read_text(encoding="utf-8"))
    data["follow_ups"][0]["category"] = "nowhere"
    (tmp_path / "follow_ups.yaml").write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    with pytest.raises(InterviewFileError, match=r"follow_ups\.yaml: follow-up speed: unknown coverage category"):
        load_clarify_rules(tmp_path)
    grammar = yaml.safe_load((source / "ears.yaml").read_text(encoding="utf-8"))
    grammar["zh"]["forms"][0]["pattern"] = "(unclosed"
    (tmp_path / "ears.yaml").write_text(yaml.safe_dump(grammar, allow_unicode=True), encoding="utf-8")
    with pytest.raises(InterviewFileError, match=r"ears\.yaml: zh\.forms\.unwanted: pattern does not compile"):
        ears.load_grammar(tmp_path / "ears.yaml")


@pytest.mark.parametrize("language", ["zh", "en"])
def test_each_ears_form_gives_its_example(language):
    """Each form row of ears.yaml carries an example clause and the requirement it must give."""
    grammar = ears.load_grammar()[language]
    for _, _, example in grammar.forms:
        assert ears.ears(example["clause"], grammar) == example["result"]


def test_a_sentence_splits_into_one_thought_each_but_keeps_a_trigger_with_its_response():
    grammar = ears.load_grammar()["zh"]
    assert ears.clauses("病人可以选医生，每个时段最多6个号；护士可以临时加号", grammar) == [
        "病人可以选医生", "每个时段最多6个号", "护士可以临时加号",
    ]  # fmt: skip
    assert ears.clauses("预约成功后，系统发短信提醒病人，但夜间不发", grammar) == [
        "预约成功后，系统发短信提醒病人，但夜间不发"
    ]
    english = ears.load_grammar()["en"]
    assert ears.clauses("Owners can book walks. Walkers see them; admins manage walkers.", english) == [
        "Owners can book walks", "Walkers see them", "admins manage walkers",
    ]  # fmt: skip


# -- answers and follow-ups ------------------------------------------------------------------------------
def test_an_answer_is_an_option_the_recommendation_the_open_option_or_the_operators_own_words():
    question = {"options": [{"key": "A", "text": "甲"}, {"key": "B", "text": "乙", "none": True}], "recommended": "B"}
    assert resolve_answer(question, " a ") == {"text": "甲", "choice": "A", "open": False, "none": False}
    assert resolve_answer(question, "推荐")["choice"] == "B"
    assert resolve_answer(question, "recommended")["none"] is True
    assert resolve_answer(question, "X")["open"] is True
    assert resolve_answer(question, "暂不确定：作为待确认事项")["open"] is True
    assert resolve_answer(question, "   ")["open"] is True
    assert resolve_answer(question, "A 和 B 都要") == {
        "text": "A 和 B 都要",
        "choice": "",
        "open": False,
        "none": False,
    }
    assert resolve_answer({"options": [], "recommended": ""}, "yes")["text"] == "yes"  # no recommendation to take


def test_the_clinic_interview_ranks_at_most_five_questions_and_follows_up_on_a_vague_answer():
    kind = load_project_types()["new_system"]
    first = interview_round(kind, "zh", 1, [])
    assert len(first["questions"]) == 5
    assert [q["question_id"] for q in first["questions"]] == ["goal", "users", "flow", "data", "quality"]
    assert {row["status"] for row in first["coverage"]} == {"missing"}
    assert all(q["options"][-1]["key"] == "X" for q in first["questions"])  # free answer or "not decided yet"
    answers = {q["id"]: CLINIC_ROUND_1.get(q["question_id"], "") for q in first["questions"]}
    second = interview_round(kind, "zh", 2, [{**first, "answers": answers}])
    follow_ups = [q for q in second["questions"] if q["kind"] == "follow_up"]
    texts = [q["text"] for q in follow_ups]
    # "系统要快": a measurable target; "病人的信息要保密": which data, who may see it.
    assert "“系统要快”中的“快”对应什么可度量的指标？" in texts
    assert "“病人的信息要保密”：具体是哪些信息？谁可以查看？" in texts
    speed = next(q for q in follow_ups if "快" in q["quote"])
    assert speed["recommended"] == "B" and "2 秒" in next(o["text"] for o in speed["options"] if o["key"] == "B")
    assert second["questions"][: len(follow_ups)] == follow_ups  # follow-ups ranked first
    assert len(second["questions"]) <= 5
    status = {row["category"]: row["status"] for row in second["coverage"]}
    assert status["scope"] == "clear" and status["quality"] == "partial" and status["edge_cases"] == "missing"


def test_an_answer_that_contradicts_an_earlier_one_draws_a_follow_up_naming_both():
    kind = load_project_types()["new_system"]
    first = interview_round(kind, "zh", 1, [])
    answers = {q["id"]: "" for q in first["questions"]}
    answers["r1-users"] = "每位病人最多同时预约 3 个号。"
    answers["r1-flow"] = "病人预约号的数量不限。"
    second = interview_round(kind, "zh", 2, [{**first, "answers": answers}])
    (follow_up,) = [q for q in second["questions"] if q["kind"] == "follow_up"]
    assert "每位病人最多同时预约 3 个号" in follow_up["text"] and "病人预约号的数量不限" in follow_up["text"]
    assert [o["withdraws"] for o in follow_up["options"][:2]] == ["病人预约号的数量不限", "每位病人最多同时预约 3 个号"]
    # The operator keeps the earlier statement: the later one is withdrawn from the draft.
    rounds = [{**first, "answers": answers}, {**second, "answers": {follow_up["id"]: "A"}}]
    result = interview_result(CLINIC, kind, "zh", "high", rounds, interview_round(kind, "zh", 3, rounds))
    texts = [r["text"] for r in result["requirements"]]
    assert any("每位病人最多同时预约 3 个号" in t for t in texts)
    assert not any("数量不限" in t for t in texts)


def test_a_round_left_wholly_empty_ends_the_interview_and_the_rest_stays_open():
    kind = load_project_types()["new_system"]
    first = interview_round(kind, "zh", 1, [])
    rounds = [{**first, "answers": {q["id"]: "" for q in first["questions"]}}]
    final = interview_round(kind, "zh", 2, rounds)
    assert final["questions"] == []
    result = interview_result(CLINIC, kind, "zh", "high", rounds, final)
    assert result["requirements"] == []
    assert len(result["unanswered"]) == 5


# -- the draft ------------------------------------------------------------------------------------------------
def test_the_clinic_draft_is_numbered_ears_from_the_operators_words_with_a_clarifications_log():
    rounds, final = plan_all("new_system", "zh", {**CLINIC_ROUND_1, **CLINIC_ROUND_2})
    kind = load_project_types()["new_system"]
    result = interview_result(CLINIC, kind, "zh", "high", rounds, final)
    draft, titles = write_requirement(result, kind)
    numbered = re.findall(r"^- (FR-\d{3})：(.+)$", draft, re.MULTILINE)
    assert [n for n, _ in numbered] == [f"FR-{i:03d}" for i in range(1, len(numbered) + 1)]
    texts = dict(numbered)
    # A person's own step keeps its actor (issue 27: "病人选科室…" is the patient's step).
    step = re.compile(r"^\w{1,4}的步骤：")
    assert all(t.startswith(("系统应", "当", "如果")) or step.match(t) for t in texts.values()), texts
    assert all(t.endswith("。") for t in texts.values()), texts
    assert "系统应允许病人在手机上选医生和时间段。" in texts.values()
    assert "系统应允许护士临时加号。" in texts.values()
    assert "当提交后，系统应发短信确认。" in texts.values()
    assert "如果号满了，那么系统应提示病人换一个时间段。" in texts.values()
    # A vague clause keeps the operator's words, refined by its follow-up's answer.
    assert "系统应快（细化：95% 的页面在 2 秒内打开）。" in texts.values()
    assert "系统应满足：病人的信息要保密（细化：只有本人和为其服务的工作人员可以查看）。" in texts.values()
    # Every requirement is a clause of an answer the operator gave or an option it picked.
    given = " ".join(e["answer"]["text"] for e in result["entries"])
    assert all(r["clause"] in given and all(x in given for x in r["refinements"]) for r in result["requirements"])
    assert titles[-1] == "澄清记录" and "## 待确认事项" in draft
    assert "- 问：对速度、可用时间和安全有什么要求？能给数字的请给数字。 → 答：系统要快，病人的信息要保密" in draft
    assert "→ 答：只有本人和为其服务的工作人员可以查看（选项 A，推荐）" in draft
    assert "→ 答：（未回答：待确认事项）" in draft
    # Nothing in the draft is English, and the engine finds no vague word left in a requirement.
    assert not re.search(r"[A-Za-z]{3,}", draft.replace("FR-", ""))
    requirement_lines = "\n".join(f"- {t}" for t in texts.values())
    assert not [f for f in check_text(f"# 草稿\n\n## 需求\n\n{requirement_lines}\n") if f.category == "vague_term"]


def test_the_english_draft_is_in_english_ears():
    rounds, final = plan_all("new_system", "en", WALKS_ANSWERS)
    kind = load_project_types()["new_system"]
    draft, _ = write_requirement(interview_result(WALKS, kind, "en", "high", rounds, final), kind)
    assert "- FR-002: The system shall let owners book and cancel their own walks." in draft
    assert "When an owner books a walk, the system shall send the walker a confirmation." in draft
    assert (
        "The system shall require the booking page to be fast (refined: Bookings are confirmed within 3 seconds "
        "for 95% of requests)." in draft
    )
    assert "## Clarifications" in draft and "### Round 2" in draft
    assert not re.search(r"[\u4e00-\u9fff]", draft)


# -- through the API, the page and A2A -----------------------------------------------------------------------
def test_the_clinic_idea_through_the_api_gets_a_new_system_follow_ups_and_an_ears_draft(api, runtime_host):
    task_id = start(api, description=CLINIC)
    body = wait_for(api, runtime_host, task_id, "interview")
    assert body["phase"] == "interview"
    assert len(body["questions"]) == 5
    assert [row["status"] for row in body["coverage"]] == ["missing"] * len(body["coverage"])
    assert {"scope", "users", "data", "quality", "completion"} <= {row["category"] for row in body["coverage"]}
    assert all(q["options"] and "recommended" in q for q in body["questions"])
    answer_all(api, task_id, body["questions"], CLINIC_ROUND_1)
    body = wait_for(api, runtime_host, task_id, "interview")
    follow_ups = [q for q in body["questions"] if q["kind"] == "follow_up"]
    assert any("系统要快" in q["text"] and "可度量" in q["text"] for q in follow_ups), follow_ups
    assert any("谁可以查看" in q["text"] for q in follow_ups), follow_ups
    assert {row["category"]: row["status"] for row in body["coverage"]}["quality"] == "partial"
    answer_all(api, task_id, body["questions"], CLINIC_ROUND_2)
    body, _ = interview_to_draft(api, runtime_host, task_id, {})
    project_type = json.loads(artifact(body, "project_type.json"))
    assert project_type["project_type"] == "new_system"
    draft = artifact(body, "requirement.md")
    assert "- FR-001：" in draft and "## 澄清记录" in draft and "### 第 2 轮" in draft
    assert "系统应快（细化：95% 的页面在 2 秒内打开）。" in draft
    result = json.loads(artifact(body, "interview_result.json"))
    assert result["project_type"] == "new_system"
    assert [r["id"] for r in result["requirements"]][:3] == ["FR-001", "FR-002", "FR-003"]
    assert result["unanswered"]  # what was not answered stays open
    api.post(f"/api/v1/tasks/{task_id}/next", {"action": "review"}, format="json")
    task = wait_for_task(runtime_host, task_id)
    assert task.status == "completed", task.error
    body = api.get(f"/api/v1/tasks/{task_id}").json()
    # The review reads the requirements, never the Clarifications log.
    log = {n for n, line in enumerate(draft.splitlines(), start=1) if line.startswith("- 问：")}
    for name in ("review_dev.json", "review_pm.json", "review_ai.json", "review_domain.json"):
        lines = {issue["location"].get("line") for issue in json.loads(artifact(body, name))["issues"]}
        assert not lines & log, name
    assert "## 澄清记录" in artifact(body, "requirement_final.md")


def test_an_english_idea_through_the_api(api, runtime_host):
    task_id = start(api, description=WALKS)
    body, seen = interview_to_draft(api, runtime_host, task_id, WALKS_ANSWERS)
    assert any(q["kind"] == "follow_up" and "fast" in q["text"] for round_ in seen for q in round_["questions"])
    assert all(len(round_["questions"]) <= 5 for round_ in seen)
    draft = artifact(body, "requirement.md")
    assert "- FR-001: " in draft and "## Clarifications" in draft
    assert "When an owner books a walk, the system shall send the walker a confirmation." in draft
    api.post(f"/api/v1/tasks/{task_id}/cancel", {}, format="json")


def test_bad_answers_are_refused_with_the_field_and_nothing_is_kept(api, runtime_host):
    task_id = start(api, description=CLINIC)
    body = wait_for(api, runtime_host, task_id, "interview")
    url = f"/api/v1/tasks/{task_id}/answers"
    cases = [
        ({"answers": {"r1-goal": "x" * 4001}}, "answers.r1-goal"),  # oversize
        ({"answers": {"r1-terms": "没有"}}, "answers.r1-terms"),  # a question of the type, not asked this round
        ({"answers": {"r2-quality-f1": "A"}}, "answers.r2-quality-f1"),  # a follow-up not asked (yet)
        ({"answers": {"r1-goal": None}}, "answers.r1-goal"),
        ({"answers": {"r1-goal": "ok\x00"}}, "answers.r1-goal"),
    ]
    for payload, field in cases:
        response = api.post(url, payload, format="json")
        assert response.status_code == 400, (payload, response.content)
        assert field in response.json()["errors"], response.json()
    row = ToolConfirmation.objects.get(task_id=task_id, kind="input", status="pending")
    assert row.answer is None
    # An empty answer is taken: the question stays an open point of the draft.
    empty = {q["id"]: "" for q in body["questions"]}
    empty["r1-goal"] = "让居民在网上预约挂号"
    assert api.post(url, {"answers": empty}, format="json").json()["status"] == "answered"
    body = wait_for(api, runtime_host, task_id, "interview")
    answer_all(api, task_id, body["questions"], {})
    body = wait_for(api, runtime_host, task_id, "next_action")
    draft = artifact(body, "requirement.md")
    assert "- FR-001：系统应满足：让居民在网上预约挂号。" in draft
    assert "谁会使用这个系统？每类人可以做什么、看到什么？" in draft.split("## 澄清记录")[0]  # an open point
    api.post(f"/api/v1/tasks/{task_id}/cancel", {}, format="json")


def test_the_interview_page_shows_the_coverage_map_options_and_follow_ups_in_both_languages(
    api, runtime_host, page_client
):
    task_id = start(api, description=CLINIC)
    body = wait_for(api, runtime_host, task_id, "interview")
    row_id = body["questions"][0]["input_id"]
    page = page_client.get(f"/tasks/{task_id}/", HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert "Coverage map" in page and 'data-status="missing"' in page
    assert 'name="choice.r1-data"' in page and "recommended" in page
    chinese = page_client.get(f"/tasks/{task_id}/", HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert "覆盖图" in chinese and "缺失" in chinese and "推荐" in chinese
    # A chosen option is sent when nothing is typed; a typed answer wins over a choice.
    form = {"input_id": row_id, "choice.r1-data": "A", "answers.r1-data": "", "choice.r1-quality": "A",
            "answers.r1-quality": "系统要快，病人的信息要保密", "answers.r1-goal": "让居民在网上预约挂号"}  # fmt: skip
    for q in body["questions"]:
        form.setdefault(f"answers.{q['id']}", "")
    page_client.post(f"/tasks/{task_id}/input/answers", form)
    row = ToolConfirmation.objects.get(pk=row_id)
    assert row.answer["answers"]["r1-data"] == "A"
    assert row.answer["answers"]["r1-quality"] == "系统要快，病人的信息要保密"
    wait_for(api, runtime_host, task_id, "interview")
    page = page_client.get(f"/tasks/{task_id}/", HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert 'data-kind="follow_up"' in page and "追问" in page and "部分清楚" in page
    api.post(f"/api/v1/tasks/{task_id}/cancel", {}, format="json")


def test_a2a_text_lists_the_options_the_recommendation_and_the_coverage():
    from interop.a2a_tasks import _question_line

    line = _question_line({"id": "r1-data", "text": "记录哪些信息？", "recommended": "A",
                           "options": [{"key": "A", "text": "姓名"}, {"key": "X", "text": "暂不确定"}]})  # fmt: skip
    assert line == "- r1-data: 记录哪些信息？ [A) 姓名 *; X) 暂不确定]"


# (answer as typed, the option it names): a Chinese input method types full-width letters,
# colons and brackets; each must name its option as the half-width one does.
TYPED_KEYS = (
    ("选项Ｂ", "B"),
    ("选项：B", "B"),
    ("选项：Ｂ。", "B"),
    ("Option: b", "B"),
    ("ａ", "A"),
    ("（Ｂ）", "B"),
)


def test_an_option_key_typed_full_width_or_after_a_colon_names_its_option():
    question = {"options": [{"key": "A", "text": "甲"}, {"key": "B", "text": "乙"}], "recommended": "B"}
    for typed, key in TYPED_KEYS:
        assert resolve_answer(question, typed)["choice"] == key, typed
