"""The two debate rounds of seed 002: evaluate (§6.3) and respond (§6.4).

Evaluate: each expert reads the other three reviews and comments only where it agrees from
its own evidence, objects, or has something to add; every comment names its target
(``target_expert``, ``target_file``, ``target_location`` = ``issues[i]``).

Respond: each expert reads the comments aimed at it and settles its final position:
``final_issues`` with ``consensus_level`` (unanimous / majority / contested),
``withdrawn_issues`` and ``new_issues_from_debate``. Original reviews are never changed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from teamclaw.workflows.document import document_language
from teamclaw.workflows.review_rules import PERSPECTIVES, label_of
from teamclaw.workflows.review_text import label, say, word
from teamclaw.workflows.review_vocabulary import AI_TERMS


def _lines(review: dict[str, Any]) -> set[int]:
    return {issue["location"]["line"] for issue in review.get("issues", []) if issue["location"]["line"]}


def _categories(review: dict[str, Any]) -> set[str]:
    return {issue["category"] for issue in review.get("issues", [])}


AI_FIELD = {"ai", "data", "evaluation", "reliability", "ai_without_evaluation"}
"""What the AI expert's field covers, for an AI feature the document has."""


def in_field(me: str, issue: dict[str, Any]) -> bool:
    """True when ``issue`` is in the field of expert ``me`` for this document: its category is
    one of the expert's; for the AI expert, moreover, the point is about an AI feature the
    document has (an AI rule, or a line that names the AI feature), not any failure handling."""
    if issue["category"] not in PERSPECTIVES.get(me, {}).get("affinity", set()):
        return False
    if me == "ai":
        return issue["category"] in AI_FIELD and (
            str(issue.get("rule", "")).startswith("ai_") or bool(AI_TERMS.search(issue.get("quote") or ""))
        )
    return True


def evaluate(me: str, my_review: dict[str, Any], others: dict[str, tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """Comments of expert ``me`` on ``others`` (``perspective -> (file name, review)``).

    Stances: ``agree`` (I found a problem on the same line, or it is in my field for this
    document (``in_field``) and major/critical; otherwise no stance), ``challenge`` (the
    product manager objects to anything that weakens what the user asked for; the domain
    expert to rewriting the user's own wording into a hard requirement), ``supplement`` (I add
    a consequence from my field). Comments are in the language the reviews are written in
    (the document's)."""
    my_lines = _lines(my_review)
    my_categories = _categories(my_review)
    responses = []
    lang = document_language(
        " ".join(i.get("problem", "") for _, review in others.values() for i in review.get("issues", []))
    )
    for perspective, (file_name, review) in sorted(others.items()):
        for index, issue in enumerate(review.get("issues", [])):
            line = issue["location"]["line"]
            action = issue.get("change", {}).get("action")
            stance, comment, reasoning = None, "", ""
            if action == "scope_reduction" and me == "pm":
                stance = "challenge"
                comment = say(
                    lang,
                    "This drops or weakens something the user explicitly asked for.",
                    "这会删减或削弱用户明确提出的需求。",
                )
                reasoning = say(
                    lang,
                    "The user's original requirement is the highest authority (seed 002 principle 4).",
                    "用户的原始需求是最高准则（设计原则 4）。",
                )
            elif issue.get("change", {}).get("strengthens") and me == "domain":
                stance = "challenge"
                comment = say(
                    lang,
                    "Turning the user's wording into a hard requirement changes its meaning.",
                    "把用户的措辞改成硬性要求会改变原意。",
                )
                reasoning = say(
                    lang,
                    "Only the requirement owner may decide whether this is mandatory.",
                    "是否为必须，只能由需求方决定。",
                )
            elif line and line in my_lines:
                stance = "agree"
                comment = say(
                    lang,
                    f"Agreed: I found a problem on line {line} too, from the {label_of(me).lower()}'s side.",
                    f"同意：我从{label(me, lang)}的角度也在第 {line} 行发现了问题。",
                )
                reasoning = say(
                    lang, "Two independent reviews point at the same sentence.", "两份独立评审指向同一句话。"
                )
            elif in_field(me, issue) and issue["severity"] in ("major", "critical"):
                stance = "agree"
                comment = say(
                    lang,
                    f"Agreed; this matters for {PERSPECTIVES[me]['focus'].split(',')[0]}.",
                    f"同意；这属于{label(me, lang)}关注的范围。",
                )
                reasoning = say(
                    lang,
                    f"It is in my field ({issue['category']}) and rated {issue['severity']}.",
                    f"属于我的领域（{word(issue['category'], lang)}），严重程度为{word(issue['severity'], lang)}。",
                )
            elif (
                me == "pm"
                and issue["category"]
                in ("performance", "units", "evaluation", "vague_term", "missing_unit", "ai_without_evaluation")
                and ("acceptance" in my_categories)
            ):
                stance = "supplement"
                comment = say(
                    lang,
                    "Once the target is set, add it to the acceptance criteria so it is tested.",
                    "目标确定后，把它写进验收标准，确保得到测试。",
                )
                reasoning = say(
                    lang,
                    "A target that is not in the acceptance criteria is not verified.",
                    "不在验收标准中的目标不会被验证。",
                )
            elif me == "dev" and issue["category"] in ("privacy", "compliance", "personal_data"):
                stance = "supplement"
                comment = say(
                    lang,
                    "This needs technical design: encryption, audit logging and deletion jobs.",
                    "这需要技术设计：加密、审计日志和定期删除任务。",
                )
                reasoning = say(
                    lang,
                    "Compliance requirements have an implementation and operating cost.",
                    "合规要求有实现和运维成本。",
                )
            if stance is None:
                continue
            responses.append(
                {
                    "target_expert": label_of(perspective),
                    "target_perspective": perspective,
                    "target_file": file_name,
                    "target_location": f"issues[{index}]",
                    "target_issue": issue["id"],
                    "target_content": issue["problem"],
                    "stance": stance,
                    "my_comment": comment,
                    "reasoning": reasoning,
                }
            )
    return {"expert": label_of(me), "perspective": me, "mode": "evaluate", "responses": responses}


def consensus(agrees: int, challenges: int, others: int = 3) -> str:
    """unanimous: every other expert agreed; majority: supporters (author + agrees) outnumber
    challengers, or nobody objected; contested otherwise."""
    if agrees >= others:
        return "unanimous"
    if challenges == 0 or 1 + agrees > challenges:
        return "majority"
    return "contested"


def _comment(received: dict[str, Any]) -> dict[str, Any]:
    """One evaluate-round comment as kept in ``response_*.json`` (who, stance, what, why)."""
    return {
        "expert": received.get("perspective", ""),
        "label": received["from"],
        "stance": received["stance"],
        "comment": received.get("my_comment", ""),
        "reasoning": received.get("reasoning", ""),
    }


def respond(
    me: str,
    my_review: dict[str, Any],
    evaluations: list[dict[str, Any]],
    withdrawals: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The final position of expert ``me`` after reading ``evaluations`` aimed at it.

    ``withdrawals`` (issue id -> reason), when given, is the expert's own decision of what
    to withdraw (a model-backed expert decides); otherwise an issue is withdrawn when two or
    more experts challenged it and nobody agreed. Final and withdrawn issues keep the
    evaluate-round ``comments`` they received (``expert``, ``label``, ``stance``, ``comment``,
    ``reasoning``) so the consolidator can show each expert's position (seed 002 §6.5)."""
    comments: dict[str, list[dict[str, Any]]] = {}
    for evaluation in evaluations:
        for response in evaluation.get("responses", []):
            if response.get("target_perspective") == me:
                comments.setdefault(response["target_issue"], []).append(
                    {**response, "from": evaluation["expert"], "perspective": evaluation.get("perspective", "")}
                )
    lang = document_language(" ".join(i.get("problem", "") for i in my_review.get("issues", [])))
    final_issues, withdrawn, new_issues = [], [], []
    for issue in my_review.get("issues", []):
        received = comments.get(issue["id"], [])
        agrees = [c for c in received if c["stance"] == "agree"]
        challenges = [c for c in received if c["stance"] == "challenge"]
        supplements = [c for c in received if c["stance"] == "supplement"]
        if withdrawals is not None:
            withdraw, reason = issue["id"] in withdrawals, withdrawals.get(issue["id"], "")
        else:
            withdraw = len(challenges) >= 2 and not agrees
            who = [label(c.get("perspective") or c["from"], lang) for c in challenges]
            reason = say(
                lang,
                "Withdrawn after objections from " + ", ".join(who) + ".",
                "因" + "、".join(who) + "的反对而撤回。",
            )
        if withdraw:
            withdrawn.append({**issue, "reason": reason, "comments": [_comment(c) for c in received]})
            continue
        level = consensus(len(agrees), len(challenges))
        final_issues.append(
            {
                **issue,
                "consensus_level": level,
                "supporters": [c["from"] for c in agrees],
                "challengers": [c["from"] for c in challenges],
                "comments": [_comment(c) for c in received],
            }
        )
        for number, supplement in enumerate(supplements, start=1):
            new_issues.append(
                {
                    "id": f"{issue['id']}-s{number}",
                    # the same comment from the same expert on the same line is one point
                    "rule": f"debate_supplement:{supplement.get('perspective', '')}",
                    "derived_from": issue["id"],
                    "raised_by": supplement["from"],
                    "raised_by_perspective": supplement.get("perspective", ""),
                    "category": issue["category"],
                    "severity": "minor",
                    "location": issue["location"],
                    "problem": supplement["my_comment"],
                    "suggestion": supplement["reasoning"],
                    "consensus_level": "majority",
                    "change": {"action": "open_point", "question": supplement["my_comment"]},
                }
            )
    return {
        "expert": label_of(me),
        "perspective": me,
        "mode": "respond",
        "final_issues": final_issues,
        "withdrawn_issues": withdrawn,
        "new_issues_from_debate": new_issues,
    }
