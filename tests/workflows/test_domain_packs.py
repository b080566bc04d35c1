"""Domain packs: each pack's rules tested from their rows, packs refused at start-up naming file
and line, the domain expert reporting the packs that fit the document (issue 27; seed 002 §6.1,
§6.2 领域专家)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from teamclaw.workflows.document import parse_document
from teamclaw.workflows.domain_packs import PACKS_DIR, load_packs
from teamclaw.workflows.domains import domain_frame
from teamclaw.workflows.quality_engine import check_text, default_rules, packs_of
from teamclaw.workflows.quality_rules import CATEGORIES, RuleFileError, RuleSet
from teamclaw.workflows.review_rules import review

RULES = default_rules()
CORPUS = Path(__file__).parents[1] / "data" / "review_corpus"
REQUIRED = {
    "health_care",
    "payments_lending",
    "minors_education",
    "logistics",
    "government_services",
    "e_commerce",
    "hr_workforce",
}
EXAMPLES = [
    pytest.param(pack.domain, rule.id, kind, text, id=f"{pack.domain}-{rule.id}-{language}-{kind}-{index}")
    for pack in RULES.packs
    for rule in pack.rules
    for language, pairs in rule.examples.items()
    for kind, texts in pairs.items()
    for index, text in enumerate(texts)
]


def test_the_required_domains_each_have_a_pack_of_rules_in_known_categories():
    assert {pack.domain for pack in RULES.packs} >= REQUIRED
    for pack in RULES.packs:
        assert pack.rules and {rule.category for rule in pack.rules} <= set(CATEGORIES)
        assert all(rule.pack == pack.domain for rule in pack.rules)


@pytest.mark.parametrize(("domain", "rule_id", "kind", "text"), EXAMPLES)
def test_each_pack_rule_fires_on_its_positive_examples_and_not_on_its_negative_ones(domain, rule_id, kind, text):
    pack = next(p for p in RULES.packs if p.domain == domain)
    only_the_pack = RuleSet(pack.rules, RULES.extras)
    fired = {finding.rule for finding in check_text(text, only_the_pack)}
    assert (rule_id in fired) == (kind == "positive"), f"{rule_id} on {text!r}: {sorted(fired)}"


@pytest.mark.parametrize("pack", RULES.packs, ids=lambda p: p.domain)
def test_each_pack_applies_to_its_own_examples_and_not_to_a_text_of_another_field(pack):
    for language in ("en", "zh"):
        examples = [t for rule in pack.rules for t in rule.examples[language]["positive"]]
        text = "# Examples\n\n## Requirements\n" + "".join(f"- {t}\n" for t in examples)
        assert pack.domain in [p.domain for p in packs_of(parse_document(text))], language
    lamp = "# 智能灯\n\n## 功能\n- 用户可在 App 中远程开关客厅的灯，并设置定时开关。\n"
    assert not packs_of(parse_document(lamp))


def _bad_pack(tmp_path: Path, old: str, new: str) -> Path:
    source = (PACKS_DIR / "health_care.yaml").read_text(encoding="utf-8")
    assert old in source
    changed = source.replace(old, new, 1)
    (tmp_path / "health_care.yaml").write_text(changed, encoding="utf-8")
    line = changed[: changed.index(new)].count("\n") + 1
    return tmp_path, line


@pytest.mark.parametrize(
    ("old", "new", "reason"),
    [
        ("    category: domain_rule_gap\n", "    category: slot_rules\n", "unknown category"),
        ("zh: ['临时加号|", "zh: ['(临时加号|", "does not compile"),
        ('      zh: "“{match}”会在时段号源上限之外', '      xx: "“{match}”会在时段号源上限之外', "message"),
        ("  CN:\n", "  Mars:\n", "unknown jurisdiction"),
    ],
    ids=["unknown-category", "bad-pattern", "missing-language", "unknown-jurisdiction"],
)
def test_a_bad_pack_is_refused_naming_the_file_and_the_line(tmp_path, old, new, reason):
    directory, changed_line = _bad_pack(tmp_path, old, new)
    with pytest.raises(RuleFileError) as error:
        load_packs(directory)
    message = str(error.value)
    assert reason in message
    named = re.match(r"health_care\.yaml:(\d+): ", message)
    assert named, message
    rows = (directory / "health_care.yaml").read_text(encoding="utf-8").splitlines()
    # the named line is the faulty key itself or the start of the rule row that holds it
    assert int(named.group(1)) <= changed_line
    assert (
        rows[int(named.group(1)) - 1].lstrip().startswith(("- id:", "norms:", "Mars"))
        or int(named.group(1)) == changed_line
    )


def test_the_start_up_check_refuses_a_bad_pack(tmp_path, monkeypatch):
    from runs.checks import review_rule_files
    from teamclaw.workflows import domain_packs

    directory, _ = _bad_pack(tmp_path, "zh: ['临时加号|", "zh: ['(临时加号|")
    monkeypatch.setattr(domain_packs, "PACKS_DIR", directory)
    (error,) = review_rule_files()
    assert error.id == "runs.E001"
    assert re.search(r"health_care\.yaml:\d+: rule 'add-on-beyond-slot-cap'", error.msg)
    monkeypatch.setattr(domain_packs, "PACKS_DIR", PACKS_DIR)
    assert review_rule_files() == []


def test_a_pack_rule_id_must_not_repeat_a_rule_file_id(tmp_path):
    source = (PACKS_DIR / "health_care.yaml").read_text(encoding="utf-8")
    (tmp_path / "health_care.yaml").write_text(source, encoding="utf-8")
    with pytest.raises(RuleFileError, match="already used"):
        load_packs(tmp_path, taken=["add-on-beyond-slot-cap"])


CLINIC = (CORPUS / "health-station-booking-zh.md").read_text(encoding="utf-8")


def _line_of(text: str, fragment: str) -> int:
    (number,) = [i for i, line in enumerate(text.splitlines(), 1) if fragment in line]
    return number


def _issues(text: str) -> dict[str, list[dict]]:
    document = parse_document(text)
    return {p: review(document, p) for p in ("dev", "pm", "ai", "domain")}


def test_in_a_clinic_booking_the_experts_flag_quality_words_health_data_add_ons_and_no_shows():
    issues = _issues(CLINIC)
    found = {(p, i["category"], i["location"]["line"]) for p, items in issues.items() for i in items}
    for fragment in ("系统要快", "数据要安全"):
        assert ("pm", "vague_term", _line_of(CLINIC, fragment)) in found
    assert ("pm", "untestable", _line_of(CLINIC, "支持手机访问")) in found
    domain = issues["domain"]
    add_on = [i for i in domain if i["location"]["line"] == _line_of(CLINIC, "临时加号")]
    assert [i["rule"] for i in add_on] == ["add-on-beyond-slot-cap"]
    assert ("domain", "domain_rule_gap", _line_of(CLINIC, "每个时段放 6 个号")) in found
    no_show = {i["rule"] for i in domain if i["location"]["line"] == _line_of(CLINIC, "爽约")}
    assert "no-show-without-recorder" in no_show
    assert ("domain", "domain_rule_gap", _line_of(CLINIC, "排班变更时，已有的预约")) in found
    assert ("domain", "domain_rule_gap", _line_of(CLINIC, "同时持有多个预约")) in found
    health = next(i for i in domain if i["location"]["line"] == _line_of(CLINIC, "体检报告"))
    assert health["category"] == "personal_data"
    assert "医疗健康" in health["problem"] and "PIPL" in health["problem"] and "单独同意" in health["problem"]
    report = next(i for i in domain if i["category"] == "personal_data" and "就诊记录" in i["quote"])
    assert "医疗健康" in report["problem"]


def test_booking_by_phone_is_no_personal_data_and_the_clinic_is_never_asked_about_gdpr():
    issues = _issues(CLINIC)
    phone = _line_of(CLINIC, "通过电话预约")
    assert not [i for items in issues.values() for i in items if i["location"]["line"] == phone]
    everything = " ".join(i["problem"] + i["suggestion"] + str(i["change"]) for i in issues["domain"])
    assert "GDPR" not in everything
    assert not [i for i in issues["domain"] if i["rule"] == "jurisdiction_unknown"]


def test_the_domain_experts_prose_is_in_the_documents_language():
    for issue in _issues(CLINIC)["domain"]:
        for text in (issue["problem"], issue["suggestion"]):
            assert re.search(r"[\u4e00-\u9fff]", text), text
            assert not re.search(r"\b(?:the|is|not|and|of)\b", text), text


@pytest.mark.parametrize(
    ("text", "code", "law"),
    [
        ("# 社区诊所预约\n\n## 功能\n- 病人预约时填写既往病史。\n", "CN", "PIPL"),
        ("# 卫生服务站\n\n## 功能\n- 居民可在线预约医生。\n", "CN", "PIPL"),
        ("# Clinic booking\n\n## Features\n- Patients in Germany book a doctor online.\n", "EU", "GDPR"),
        ("# Clinic booking\n\n## Features\n- Patients book a doctor online.\n", "", ""),
    ],
    ids=["clinic-title", "residents", "eu-hint", "no-hint"],
)
def test_the_domain_frame_reads_the_jurisdiction_from_the_text_and_never_assumes_one(text, code, law):
    language = "zh" if re.search(r"[\u4e00-\u9fff]", text) else "en"
    frame = domain_frame(text, language)
    assert frame["field"] == "health_care"
    assert frame["jurisdiction"] == code
    norms = " ".join(frame["norms"])
    if law:
        assert law in norms or law in frame["jurisdiction_label"]
    else:
        assert "PIPL" not in norms and "GDPR" not in norms and "HIPAA" not in norms
        assert "open point" in norms


def test_health_data_is_named_sensitive_with_the_law_the_text_implies():
    clinic = "# 社区诊所预约\n\n## 功能\n- 护士在系统中录入患者的体检结果。\n"
    (finding,) = [f for f in check_text(clinic, RULES) if f.category == "personal_data"]
    assert finding.data["jurisdiction"] == "CN"
    assert finding.data["sensitive"] == ["health"]
    assert "单独同意" in finding.message


def test_a_pack_finding_names_its_pack_and_a_document_of_another_field_gets_none():
    loan = "# 员工借款\n\n## 功能\n- 员工可以提前还款。\n- 借款按月从工资中扣还。\n"
    (finding,) = [f for f in check_text(loan, RULES) if f.rule == "early-repayment-without-terms"]
    assert finding.data["pack"] == "payments_lending"
    lamp = "# 智能灯\n\n## 功能\n- 用户可以提前还款。\n"
    assert not [f for f in check_text(lamp, RULES) if f.data.get("pack")]


@pytest.mark.parametrize(
    ("text", "field", "code", "norm"),
    [
        ("# 商城退货\n\n## 功能\n- 买家用支付宝下单后可申请七天无理由退货。\n", "e_commerce", "CN", "七日无理由退货"),
        (
            "# Shop\n\n## Features\n- Buyers in Germany can apply coupons to their orders.\n",
            "e_commerce",
            "EU",
            "14-day",
        ),
        (
            "# 请假审批\n\n## 功能\n- 员工请假由直属主管审批，居民身份证号用于实名。\n",
            "hr_workforce",
            "CN",
            "劳动合同法",
        ),
        (
            "# Leave\n\n## Features\n- Employees request annual leave; payroll gets the days.\n",
            "hr_workforce",
            "",
            "open point",
        ),
    ],
    ids=["shop-zh", "shop-eu", "leave-zh", "leave-no-hint"],
)
def test_shops_and_workforce_get_their_pack_and_the_law_the_text_implies(text, field, code, norm):
    language = "zh" if re.search(r"[\u4e00-\u9fff]", text) else "en"
    frame = domain_frame(text, language)
    assert (frame["field"], frame["jurisdiction"]) == (field, code)
    assert norm in " ".join(frame["norms"])
