"""The offline reviewers find problems in the document itself (seed 002 §6.2), and the
consolidator applies the merge rules of §6.6."""

from __future__ import annotations

from teamclaw.workflows.consolidation import consolidate, decide, quality_check
from teamclaw.workflows.debate import consensus, evaluate, respond
from teamclaw.workflows.document import parse_document
from teamclaw.workflows.review_rules import acceptance_criterion, review
from teamclaw.workflows.review_rules import testable as is_testable
from tests.documents import BOOKSTORE, CLINIC, PLAIN_TOOL


def rules(text: str, perspective: str) -> set[tuple[str, int | None]]:
    return {(issue["rule"], issue["location"]["line"]) for issue in review(parse_document(text), perspective)}


def categories(text: str, perspective: str) -> set[tuple[str, int | None]]:
    return {(issue["category"], issue["location"]["line"]) for issue in review(parse_document(text), perspective)}


def line_of(text: str, fragment: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), start=1) if fragment in line)


def test_vague_performance_word_is_flagged_on_its_own_line():
    assert ("vague_term", line_of(BOOKSTORE, "load fast")) in categories(BOOKSTORE, "pm")


def test_a_number_without_a_unit_is_flagged_and_a_number_with_one_is_not():
    assert ("missing_unit", line_of(BOOKSTORE, "within 300")) in categories(BOOKSTORE, "dev")
    assert not any(category == "missing_unit" for category, _ in categories(PLAIN_TOOL, "dev"))


def test_missing_acceptance_criteria_is_a_pm_finding_only_when_absent():
    assert ("missing_acceptance_criteria", 1) in rules(BOOKSTORE, "pm")  # anchored on the title
    assert not any(rule == "missing_acceptance_criteria" for rule, _ in rules(CLINIC, "pm"))


def test_undefined_acronym_is_a_domain_finding_and_a_defined_one_is_not():
    assert ("undefined_term", line_of(BOOKSTORE, "ERP")) in categories(BOOKSTORE, "domain")
    defined = BOOKSTORE.replace("the ERP", "the ERP (enterprise resource planning system)")
    assert not any(category == "undefined_term" for category, _ in categories(defined, "domain"))


def test_ai_feature_without_evaluation_or_fallback_is_an_ai_finding():
    found = rules(BOOKSTORE, "ai")
    assert ("ai_without_evaluation", line_of(BOOKSTORE, "using AI")) in categories(BOOKSTORE, "ai")
    assert any(rule == "ai_without_fallback" for rule, _ in found)
    assert rules(PLAIN_TOOL, "ai") == set()


def test_personal_data_without_privacy_rules_is_critical():
    issues = review(parse_document(CLINIC), "domain")
    privacy = [i for i in issues if i["category"] == "personal_data"]
    assert privacy
    assert privacy[0]["severity"] == "critical"
    assert "date of birth" in privacy[0]["problem"]


def test_different_documents_give_different_findings():
    per_doc = [
        {(p, rule) for p in ("dev", "pm", "ai", "domain") for rule, _ in rules(text, p)}
        for text in (BOOKSTORE, CLINIC, PLAIN_TOOL)
    ]
    assert per_doc[0] != per_doc[1] != per_doc[2] != per_doc[0]


def test_chinese_wording_is_recognised():
    text = "# 需求\n- 页面必须快速加载。\n- 系统应该支持实时通知。\n"
    assert ("vague_term", 2) in categories(text, "pm")


def test_consensus_levels():
    assert consensus(agrees=3, challenges=0) == "unanimous"
    assert consensus(agrees=1, challenges=0) == "majority"  # two experts: the author and one who agreed
    assert consensus(agrees=1, challenges=1) == "majority"
    assert consensus(agrees=0, challenges=0) == "single"  # one expert is no majority
    assert consensus(agrees=0, challenges=1) == "contested"
    assert consensus(agrees=1, challenges=2) == "contested"


def issue(rule="x", category="performance", action="replace", line=3, level="majority", **change):
    return {
        "id": f"dev-{line}",
        "rule": rule,
        "category": category,
        "severity": "major",
        "location": {"line": line, "section": ""},
        "problem": "p",
        "suggestion": "s",
        "change": {"action": action, **change},
        "consensus_level": level,
    }


def test_a_change_that_weakens_the_requirement_is_never_adopted_even_when_unanimous():
    decision, rule, _ = decide(issue(action="scope_reduction", level="unanimous"))
    assert (decision, rule) == ("rejected", "rule_3_forbidden")


def test_rewording_the_users_text_needs_unanimity():
    assert decide(issue(level="unanimous", strengthens=True))[0] == "adopted"
    assert decide(issue(level="majority", strengthens=True))[0] == "rejected"


def test_contested_compliance_is_adopted_by_arbitration_and_contested_user_value_is_deferred():
    assert decide(issue(category="personal_data", level="contested", action="append_section"))[1] == (
        "arbitration_compliance"
    )
    assert decide(issue(category="untestable", level="contested", action="append_section"))[0] == "deferred"


def test_consolidation_rewrites_the_users_line_and_keeps_the_rest():
    original = "# T\n\n## Requirements\n- The page must load fast.\n- Keep it.\n"
    responses = {"dev": {"final_issues": [issue(line=4, old="fast", new="fast (p95 at most 2 s)")]}}
    final, report = consolidate(original, responses, ["The page must load fast."])
    # the expert's figure is a proposal until someone confirms it (issue point 5)
    assert "- The page must load fast (proposed, to be confirmed: p95 at most 2 s)." in final
    assert "- Keep it." in final
    assert final.startswith("# T")
    assert report["counts"]["adopted"] == 1
    assert report["decisions"][0]["applied"]


def test_debate_round_trip_produces_the_seed_fields():
    doc = parse_document(BOOKSTORE)
    reviews = {p: (f"review_{p}.json", {"issues": review(doc, p)}) for p in ("dev", "pm", "ai", "domain")}
    evaluations = [evaluate(p, reviews[p][1], {k: v for k, v in reviews.items() if k != p}) for p in reviews]
    for evaluation in evaluations:
        for response in evaluation["responses"]:
            assert {
                "target_expert",
                "target_file",
                "target_location",
                "target_content",
                "my_comment",
                "reasoning",
            } <= set(response)
            assert response["target_location"].startswith("issues[")
    answer = respond("dev", reviews["dev"][1], evaluations)
    assert {"final_issues", "withdrawn_issues", "new_issues_from_debate"} <= set(answer)
    assert all(i["consensus_level"] in ("unanimous", "majority", "single", "contested") for i in answer["final_issues"])
    for final in answer["final_issues"]:  # "majority" is counted: the author and at least one who agreed
        assert (final["consensus_level"] in ("majority", "unanimous")) == (len(final["supporters"]) >= 1)


def test_quality_check_flags_leftover_undecided_wording_and_missing_criteria():
    result = quality_check("# T\n\n## Requirements\n- Maybe export to CSV.\n", "# T\n\n## Requirements\n- x\n")
    by_name = {c["name"]: c for c in result["checks"]}
    assert not result["passed"]
    assert not by_name["closure"]["passed"]
    assert not by_name["completeness"]["passed"]
    assert by_name["structure"]["passed"]


EXPORT = """# Requirement: CSV export of orders

## Scope
- Admins export the orders of a month as a CSV file.
- The file lists order number, date, customer name, customer email and total.
- Only admins may export; staff may not.
- The export could include refunds.
"""


def findings(text: str, perspective: str) -> list[dict]:
    return review(parse_document(text), perspective)


def test_an_email_column_is_data_not_a_notification():
    """A list of fields naming "customer email" sends nothing: no delivery-failure or consent
    finding about notifications; a sentence that sends one still gets them."""
    every = {issue["category"] for p in ("dev", "pm", "domain", "ai") for issue in findings(EXPORT, p)}
    assert "notification_consent" not in every
    sending = EXPORT + "- The system sends an email to the customer when the export is ready.\n"
    assert ("notification_consent", line_of(sending, "sends an email")) in categories(sending, "domain")


def test_may_granting_a_permission_is_not_made_a_duty():
    """A "may" that grants or refuses a right ("only admins may export; staff may not"):
    proposing "must" would make exporting an admin's duty. "could" there is still weak."""
    weak = [issue for issue in findings(EXPORT, "pm") if issue["rule"] == "weak_wording"]
    assert [issue["location"]["line"] for issue in weak] == [line_of(EXPORT, "could include refunds")]
    optional = "# Requirement: Reports\n\n## Scope\n- The report may include a chart.\n"
    assert [i["rule"] for i in findings(optional, "pm") if i["rule"] == "weak_wording"] == ["weak_wording"]


def test_lines_the_review_adds_are_marked_as_the_teams_in_either_language():
    """A section the review appends, or bullets it puts into the user's section, never read as
    the requester's words; the open points (questions) carry the mark too."""
    for original, mark in (
        ("# T\n\n## Requirements\n- The page must load.\n", " _(added by the review)_"),
        ("# 订单\n\n## 需求\n- 页面必须加载。\n", "（评审补充）"),
    ):
        new_section = issue(
            category="reliability",
            action="append_section",
            level="unanimous",
            section="Error handling",
            lines=["Errors are shown."],
        )
        into_theirs = issue(
            category="reliability",
            action="append_section",
            level="unanimous",
            section="Requirements",
            lines=["It is logged."],
        )
        into_theirs["id"] = "dev-9"
        question = issue(category="goals", action="open_point", level="unanimous", question="Who pays?")
        responses = {"dev": {"final_issues": [new_section, into_theirs, question]}}
        final, _ = consolidate(original, responses, [])
        assert f"- Errors are shown.{mark}" in final, final
        assert f"- It is logged.{mark}" in final or "需求" in original, final
        assert any(line.startswith("- Who pays?") and line.endswith(mark) for line in final.splitlines()), final
        assert original.splitlines()[3] in final.splitlines()  # the user's line, unmarked


def test_a_criterion_the_rules_cannot_build_is_an_open_point_not_a_template():
    """A requirement with no actor and action ("Exports in CSV.") gets no criterion at all,
    neither a made-up result nor a template ("expected: the result to expect, which the review
    could not derive"): the consolidation asks the owner how it is verified, and the quality
    check reports that open point unresolved."""
    for text, language in (("Exports in CSV", "en"), ("导出为CSV格式", "zh")):
        assert acceptance_criterion(text, language) is None
    original = "# T\n\n## Requirements\n- Exports in CSV.\n"
    criteria = issue(category="untestable", action="append_section", level="single", section="Acceptance criteria",
                     criteria=True, from_lines=[4], lines=[])  # fmt: skip
    final, report = consolidate(original, {"pm": {"final_issues": [criteria]}}, [])
    assert "could not derive" not in final and "proposed, to be confirmed" not in final
    assert [p["line"] for p in report["open_points"]] == [4]
    assert '"Exports in CSV" verified' in final
    result = quality_check(final, original)
    assert not {c["name"]: c for c in result["checks"]}["unresolved"]["passed"]
    assert any("Exports in CSV" in u for u in result["unresolved"])


def test_a_line_the_engine_flags_gets_no_criterion():
    """ "The page must load fast" has an actor and an action, but no result follows from "fast":
    an open point, not "the action completes without an error"."""
    original = "# T\n\n## Requirements\n- The page must load fast.\n- Admins can export the orders.\n"
    criteria = issue(category="untestable", action="append_section", level="single", section="Acceptance criteria",
                     criteria=True, from_lines=[4, 5], lines=[])  # fmt: skip
    final, report = consolidate(original, {"pm": {"final_issues": [criteria]}}, [])
    assert [p["line"] for p in report["open_points"]] == [4]
    assert "Given admins, when they export the orders" in final


def test_a_criterion_with_a_condition_and_an_observable_result_is_testable():
    """Found by a second walkthrough: "a CSV ... is downloaded" is a result a tester sees."""
    assert is_testable(
        "When an admin presses Export on a list of 3 orders, a CSV with 3 rows and 4 columns is downloaded."
    )
    assert is_testable("当管理员在 3 个订单的列表上点击导出时，下载一个包含 3 行和 4 列的 CSV。")
    assert not is_testable("When an admin presses Export, it works well.")


def test_pressing_export_to_get_a_file_is_no_integration():
    """ "press Export to get a CSV" names no other system: no retry section about one (second
    walkthrough: it added "When an external system named in ... is slow")."""
    text = EXPORT + "- Filter the order list, then press Export to get a CSV.\n"
    assert "integration_failure" not in {i["category"] for i in findings(text, "dev")}
    synced = EXPORT + "- Orders are imported from Shopify every hour.\n- We export to Salesforce nightly.\n"
    lines = {i["location"]["line"] for i in findings(synced, "dev") if i["category"] == "integration_failure"}
    assert line_of(synced, "export to Salesforce") in lines


def test_an_email_column_is_personal_data_in_either_language():
    """The same export in English and in Chinese gets the same privacy finding (second
    walkthrough: "客户邮箱" got none while "customer email" did)."""
    english = (
        "# Order export\n\n## Scope\n- Admins export a month of orders.\n"
        "- The file lists order number, date, customer email and total.\n"
    )
    chinese = "# 订单导出\n\n## 需求\n- 管理员导出一个月的订单。\n- 文件列出订单号、日期、客户邮箱和金额。\n"
    rules_en = {i["rule"] for p in ("dev", "pm", "domain") for i in findings(english, p)}
    rules_zh = {i["rule"] for p in ("dev", "pm", "domain") for i in findings(chinese, p)}
    privacy = {rule for rule in rules_en if "privacy" in rule or "personal" in rule}
    assert privacy and privacy <= rules_zh, (privacy, rules_zh)


def test_a_criterion_names_a_short_actor_and_keeps_the_whole_action():
    """Found by a new-operator run: "Shop admins need to export ... so they can reconcile
    ..." made "Given shop admins need to export the order list as CSV so they, when they
    reconcile payments quickly ..., then the target(proposed ...) is met". The actor is a
    short noun phrase, "need to" is a modal, the proposed target is its own words, and the
    action is kept whole: a review found that cutting a purpose clause dropped what followed
    ("so fast that no spinner is shown", "and must also archive them")."""
    text = (
        "Shop admins need to export the order list as CSV so they can reconcile payments quickly"
        " (proposed, to be confirmed: within 5 s)"
    )
    assert acceptance_criterion(text, "en") == (
        "Given shop admins, when they export the order list as CSV so they can reconcile payments quickly in the"
        " test environment, then the target (proposed, to be confirmed: within 5 s) is met in every run."
    )
    for line, kept in (
        ("Pages must load so fast that no spinner is shown", "so fast that no spinner is shown"),
        ("Users must see the orders placed so far", "the orders placed so far"),
        ("Admins must export orders in order to reconcile and must also archive them", "also archive them"),
    ):
        assert kept in acceptance_criterion(line, "en"), line


def test_a_line_without_a_plain_actor_and_action_gets_no_criterion_rather_than_a_wrong_one():
    """A negated modal ("must not delete") is no action a test performs, and "Users who can
    log in must ..." has a clause for an actor: rather than "when they not delete orders" or
    "Given users who, when they log in must ...", there is no criterion (an open point)."""
    for line in ("The system must not delete orders", "Users who can log in must see their orders"):
        assert acceptance_criterion(line, "en") is None
