"""The model path uses the same requirement-quality engine (issue 27 item 9): each expert's
review request carries the checklist of its perspective generated from the engine's rows and
packs, in the document's language; a model's findings carry a taxonomy category, a row's rule
id, ``location.line`` and the exact quote (a made-up quote is never shown as one); the
consolidation never adopts a change the engine flags and the quality check reads the final
document as it reads the offline one's; ``eval_review --reviewer model`` scores the configured
model. A chat-completions server on 127.0.0.1 plays the model; runtime, database and API are real."""

from __future__ import annotations

import json
import re
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from teamclaw.workflows.consolidation import quality_check
from teamclaw.workflows.document import parse_document
from teamclaw.workflows.review_checklist import checklist, checklist_text
from tests.helpers import wait_for_task
from tests.model_server import Completion, host_on_model, usage_for

CLINIC_ZH = (Path(__file__).parents[1] / "data" / "requirements" / "zh_clinic.md").read_text(encoding="utf-8")
TEMPLATE_ZH = "在测试环境中执行“系统要快”时，预期：应观察到的结果。"
VAGUE_ADDITION = "系统应快速响应预约请求。"
MADE_UP = "居民的基因检测报告"


def _issue(category: str, line: int | None, quote: str | None, change: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "category": category,
        "severity": "major",
        "line": line,
        "quote": quote,
        "problem": "问题。",
        "suggestion": "建议。",
        "change": change,
        **extra,
    }


REVIEWS = {
    # the product manager names the row, gives the wrong category and a line one off
    "pm": [
        _issue(
            "untestable",
            13,
            "系统要快",
            {"action": "open_point", "question": "“系统要快”指多快？"},
            rule="vague-quality-word",
        ),
        _issue(
            "untestable",
            None,
            None,
            {"action": "append_section", "section": "Acceptance criteria", "lines": [TEMPLATE_ZH]},
        ),
    ],
    "dev": [
        _issue(
            "missing_error_handling",
            11,
            "每个时段最多 6 个号",
            {"action": "append_section", "section": "Error handling", "lines": [VAGUE_ADDITION]},
        ),
    ],
    "domain": [
        _issue("personal_data", 13, "身份证号", {"action": "open_point", "question": "身份证号的处理依据是什么？"}),
        _issue("personal_data", 17, MADE_UP, {"action": "open_point", "question": "基因数据如何保护？"}),
    ],
    "ai": [_issue("escape_clause", 16, "支持手机访问", {"action": "open_point", "question": "支持哪些手机系统？"})],
}


class ClinicBrain:
    """The experts' model on the Chinese clinic document: the answers of ``REVIEWS`` (the
    domain expert's made-up quote again on the repair request); in the evaluate round only
    the development expert agrees, with the product manager's first issue; nobody withdraws."""

    def __init__(self) -> None:
        self.review_prompts: dict[str, str] = {}
        self.repairs: dict[str, int] = {}

    def __call__(self, body: dict[str, Any]) -> Completion:
        prompt = body["messages"][1]["content"]
        me = re.search(r"perspective '(\w+)'", prompt).group(1)
        if "mode: review" in prompt:
            if len(body["messages"]) > 2:
                self.repairs[me] = self.repairs.get(me, 0) + 1
            self.review_prompts[me] = prompt
            content = json.dumps({"summary": "", "issues": REVIEWS[me]}, ensure_ascii=False)
        elif "mode: evaluate" in prompt:
            agree = {"target_issue": "pm-1", "stance": "agree", "comment": "同意。", "reasoning": "同样的证据。"}
            content = json.dumps({"responses": [agree] if me == "dev" else []}, ensure_ascii=False)
        else:
            content = json.dumps({"withdrawn": []})
        return Completion(content, usage=usage_for(body, content))


def _review(api: Any, model: Any) -> dict[str, str]:
    response = api.post("/api/v1/tasks", {"workflow": "requirement_review", "input_markdown": CLINIC_ZH}, format="json")
    assert response.status_code == 201, response.content
    wait_for_task(model.host, response.json()["task_id"])
    body = api.get(f"/api/v1/tasks/{response.json()['task_id']}").json()
    assert body["status"] == "completed", body["error"]
    return {a["name"]: a["content"] for a in body["artifacts"]}


def test_a_model_review_uses_the_engine_from_the_request_to_the_quality_check(api, transactional_db, builtin, settings):
    with host_on_model(settings, ClinicBrain()) as model:
        artifacts = _review(api, model)
    prompts = model.brain.review_prompts
    document = parse_document(CLINIC_ZH)

    # each request carries its perspective's checklist, generated from the rows, in Chinese
    assert "领域专家的审查清单" in prompts["domain"]
    assert "[add-on-beyond-slot-cap]" in prompts["domain"]  # the health-care pack applies to the clinic
    assert "[health-data-without-basis]" in prompts["domain"] and "个人信息" in prompts["domain"]
    assert "[vague-quality-word] vague_term（模糊用语）" in prompts["pm"]
    assert "[number-without-unit]" in prompts["dev"] and "[number-without-unit]" not in prompts["pm"]
    assert "[vague-quality-word]" not in prompts["dev"] and "[add-on-beyond-slot-cap]" not in prompts["pm"]
    for me, prompt in prompts.items():
        assert checklist_text(me, document) in prompt

    # the model's findings as the engine's: category of the named row, the line of the quote, verbatim
    pm = json.loads(artifacts["review_pm.json"])["issues"][0]
    assert (pm["rule"], pm["category"], pm["location"]["line"], pm["quote"]) == (
        "vague-quality-word",
        "vague_term",
        14,
        "系统要快",
    )
    domain = json.loads(artifacts["review_domain.json"])
    assert model.brain.repairs == {"domain": 1}  # sent back once, then dropped
    assert [i["quote"] for i in domain["issues"]] == ["身份证号"]
    assert any("/quote" in w and "not in the document" in w for w in domain["warnings"])
    for name in ("review_pm.json", "review_dev.json", "review_domain.json", "review_ai.json"):
        for issue in json.loads(artifacts[name])["issues"]:
            line = CLINIC_ZH.splitlines()[issue["location"]["line"] - 1]
            assert issue["quote"] and issue["quote"] in line, (name, issue)
    shown = {n: c for n, c in artifacts.items() if not n.startswith("review_")}  # a review's warnings name the drop
    assert MADE_UP not in json.dumps([shown, domain["issues"]], ensure_ascii=False)

    # the consolidation adopts no change the engine flags: no template criterion, no vague addition
    final = artifacts["requirement_final.md"]
    assert "应观察到的结果" not in final and VAGUE_ADDITION not in final
    report = json.loads(artifacts["consolidation_report.json"])
    flagged = [d for d in report["decisions"] if d["rule"] == "engine_flagged"]
    assert {d["category"] for d in flagged} == {"untestable", "missing_error_handling"}
    assert all(d["decision"] == "open_point" and d["flagged"] for d in flagged)
    # "majority" only where a second expert agreed; a point nobody took up is one expert's
    levels = {d["issue_ids"][0]: d["consensus_level"] for d in report["decisions"]}
    assert levels["pm-1"] == "majority" and levels["ai-1"] == "single" and levels["domain-1"] == "single"

    # the quality check reads the model's final document as the offline one's
    quality = json.loads(artifacts["quality_report.json"])
    clarity = next(c for c in quality["checks"] if c["name"] == "clarity")
    assert not clarity["passed"] and any("第 14 行：“系统要快”" in f for f in clarity["findings"])
    assert quality["passed"] is False


@pytest.mark.parametrize(
    ("original", "criterion", "said"),
    [
        (CLINIC_ZH, TEMPLATE_ZH, "套用的模板"),
        (CLINIC_ZH, "当居民预约挂号时，预期结果符合预期。", "套用的模板"),
        (
            "# Shop\n\n## Requirements\n- The export must list every order.\n",
            "When executing 'The export must list every order' in the test environment, the expected result is "
            "observed.",
            "is a template",
        ),
    ],
)
def test_the_quality_check_catches_a_template_criterion_a_model_wrote(original, criterion, said):
    heading = "验收标准" if "诊所" in original else "Acceptance criteria"
    final = f"{original.rstrip()}\n\n## {heading}\n\n- {criterion}\n"
    result = quality_check(final, original)
    clarity = next(c for c in result["checks"] if c["name"] == "clarity")
    assert any(said in f for f in clarity["findings"]), clarity
    assert result["passed"] is False


def test_a_custom_reviewer_has_no_checklist_and_every_item_comes_from_a_row():
    document = parse_document(CLINIC_ZH)
    assert checklist("legal", document) == [] and checklist_text("legal", document) == ""
    items = checklist("pm", document)
    assert len({i.rule for i in items}) == len(items)
    assert all(i.source.startswith(("rule_files/", "document_rules")) for i in items)
    domain = checklist("domain", document)
    assert any(i.source == "pack_files/health_care.yaml" for i in domain)
    # a document of no domain a pack knows draws no pack row; a shop's draws the e-commerce pack
    notes = parse_document("# Notes\n\n## Requirements\n- Notes are exported quickly.\n")
    assert not any(i.source.startswith("pack_files/") for i in checklist("domain", notes))
    shop = parse_document("# Shop\n\n## Requirements\n- Orders are exported quickly.\n")
    assert {i.source for i in checklist("domain", shop) if i.source.startswith("pack_files/")} == {
        "pack_files/e_commerce.yaml"
    }


class CorpusBrain:
    """The model on the eval corpus: the product manager finds "quick" on line 4, the others nothing."""

    def __call__(self, body: dict[str, Any]) -> Completion:
        prompt = body["messages"][1]["content"]
        me = re.search(r"perspective '(\w+)'", prompt).group(1)
        if "mode: review" in prompt:
            issues = []
            if me == "pm":
                issues = [_issue("vague_term", 4, "quick", {"action": "open_point", "question": "How quick?"})]
            content = json.dumps({"summary": "", "issues": issues})
        elif "mode: evaluate" in prompt:
            content = json.dumps({"responses": []})
        else:
            content = json.dumps({"withdrawn": []})
        return Completion(content, usage=usage_for(body, content))


def _corpus(tmp_path: Path) -> Path:
    (tmp_path / "shop.md").write_text(
        "# Shop\n\n## Features\n- The export must be quick.\n- The export lists each order with its total.\n",
        encoding="utf-8",
    )
    (tmp_path / "shop.labels.yaml").write_text(
        "document: shop.md\ndefects:\n  - {id: d1, line: 4, quote: quick, category: vague_term}\nclean_lines: [5]\n",
        encoding="utf-8",
    )
    return tmp_path


def test_eval_review_scores_the_configured_model(transactional_db, builtin, settings, tmp_path):
    corpus = _corpus(tmp_path)
    with host_on_model(settings, CorpusBrain()) as model:
        out = StringIO()
        call_command("eval_review", str(corpus), "--reviewer", "model", stdout=out)
    metrics = dict(line.split(" ", 1) for line in out.getvalue().splitlines() if line.startswith("review_"))
    assert metrics["review_executors"] == "openai"
    assert metrics["review_recall_vague_term"] == "1.000"
    assert metrics["review_false_alarms"] == "0"
    assert metrics["review_findings"] == "1"
    assert any("mode: review" in r["messages"][1]["content"] for r in model.server.requests)


def test_eval_review_with_the_model_reviewer_refuses_when_nothing_runs_on_a_model(transactional_db, builtin, tmp_path):
    with pytest.raises(CommandError, match="OPENAI_BASE_URL") as error:
        call_command("eval_review", str(_corpus(tmp_path)), "--reviewer", "model")
    assert error.value.returncode == 2
