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
from teamclaw.workflows.review_rules import PERSPECTIVES
from teamclaw.workflows.review_text import label, say, word
from teamclaw.workflows.review_vocabulary import AI_TERMS

WHOLE_DOCUMENT = 0
"""Stands for "a point about the whole document" among an expert's lines: such a point is
anchored on the title, which is no line anyone found a problem on."""


def _whole(issue: dict[str, Any]) -> bool:
    return (issue.get("change") or {}).get("scope") == "document"


def _lines(review: dict[str, Any]) -> set[int]:
    """The lines of ``review``'s issues; ``WHOLE_DOCUMENT`` for a point about the whole document."""
    return {WHOLE_DOCUMENT if _whole(issue) else issue["location"]["line"]
            for issue in review.get("issues", []) if issue["location"]["line"] or _whole(issue)}  # fmt: skip


def _categories(review: dict[str, Any]) -> set[str]:
    return {issue["category"] for issue in review.get("issues", [])}


AI_FIELD = {"ai_without_evaluation"}
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


def _protects_scope(me: str, issue: dict[str, Any], mine: tuple[set[int], set[str]]) -> bool:
    return me == "pm" and issue.get("change", {}).get("action") == "scope_reduction"


def _protects_wording(me: str, issue: dict[str, Any], mine: tuple[set[int], set[str]]) -> bool:
    return me == "domain" and bool(issue.get("change", {}).get("strengthens"))


def _same_line(me: str, issue: dict[str, Any], mine: tuple[set[int], set[str]]) -> bool:
    line = issue["location"]["line"]
    return not _whole(issue) and bool(line) and line in mine[0]


def _same_document(me: str, issue: dict[str, Any], mine: tuple[set[int], set[str]]) -> bool:
    """A point about the whole document ("（全文）") when I made one too: never "line 1"."""
    return _whole(issue) and WHOLE_DOCUMENT in mine[0]


def _major_in_field(me: str, issue: dict[str, Any], mine: tuple[set[int], set[str]]) -> bool:
    return in_field(me, issue) and issue["severity"] in ("major", "critical")


TARGET_CATEGORIES = {"vague_term", "missing_unit", "ai_without_evaluation"}
DESIGN_CATEGORIES = {"personal_data"}


def _target_to_test(me: str, issue: dict[str, Any], mine: tuple[set[int], set[str]]) -> bool:
    return me == "pm" and issue["category"] in TARGET_CATEGORIES and "untestable" in mine[1]


def _needs_design(me: str, issue: dict[str, Any], mine: tuple[set[int], set[str]]) -> bool:
    return me == "dev" and issue["category"] in DESIGN_CATEGORIES


STANCES: tuple[tuple[Any, str, dict[str, str], dict[str, str]], ...] = (
    (_protects_scope, "challenge",
     {"en": "This drops or weakens something the user explicitly asked for.",
      "zh": "这会删减或削弱用户明确提出的需求。"},
     {"en": "The user's original requirement is the highest authority (seed 002 principle 4).",
      "zh": "用户的原始需求是最高准则（设计原则 4）。"}),
    (_protects_wording, "challenge",
     {"en": "Turning the user's wording into a hard requirement changes its meaning.",
      "zh": "把用户的措辞改成硬性要求会改变原意。"},
     {"en": "Only the requirement owner may decide whether this is mandatory.",
      "zh": "是否为必须，只能由需求方决定。"}),
    (_same_line, "agree",
     {"en": "Agreed: I found a problem on line {line} too, from the {me}'s side.",
      "zh": "同意：我从{me}的角度也在第 {line} 行发现了问题。"},
     {"en": "Two independent reviews point at the same sentence.", "zh": "两份独立评审指向同一句话。"}),
    (_same_document, "agree",
     {"en": "Agreed: I found this in the whole document too, from the {me}'s side.",
      "zh": "同意：我从{me}的角度也在全文中发现了这个问题。"},
     {"en": "Two independent reviews find the same gap in the whole document.",
      "zh": "两份独立评审在全文中发现了同一处缺失。"}),
    (_major_in_field, "agree",
     {"en": "Agreed; this matters for {focus}.", "zh": "同意；这属于{me}关注的范围。"},
     {"en": "It is in my field ({category}) and rated {severity}.",
      "zh": "属于我的领域（{category}），严重程度为{severity}。"}),
    (_target_to_test, "supplement",
     {"en": "Once the target is set, add it to the acceptance criteria so it is tested.",
      "zh": "目标确定后，把它写进验收标准，确保得到测试。"},
     {"en": "A target that is not in the acceptance criteria is not verified.",
      "zh": "不在验收标准中的目标不会被验证。"}),
    (_needs_design, "supplement",
     {"en": "This needs technical design: encryption, audit logging and deletion jobs.",
      "zh": "这需要技术设计：加密、审计日志和定期删除任务。"},
     {"en": "Compliance requirements have an implementation and operating cost.", "zh": "合规要求有实现和运维成本。"}),
)  # fmt: skip
"""The evaluate round's stances, first match wins: ``(test(me, issue, (my lines, my
categories)), stance, comment, reasoning)``, the texts per language with ``{line}``,
``{me}`` (my label), ``{focus}``, ``{category}`` and ``{severity}`` filled in. No match:
no comment (an expert comments only where it has evidence or something to add)."""


def _comment_on(me: str, issue: dict[str, Any], mine: tuple[set[int], set[str]], lang: str) -> dict[str, str] | None:
    """``{stance, my_comment, reasoning}`` of expert ``me`` on ``issue`` in ``lang``, or None."""
    language = "zh" if lang == "zh" else "en"
    for test, stance, comment, reasoning in STANCES:
        if not test(me, issue, mine):
            continue
        shown = label(me, language)
        values = {
            "line": issue["location"]["line"],
            "me": shown.lower() if language == "en" else shown,
            "focus": str(PERSPECTIVES.get(me, {}).get("focus", me)).split(",")[0],
            "category": word(issue["category"], language),
            "severity": word(issue["severity"], language),
        }
        return {"stance": stance, "my_comment": comment[language].format(**values),
                "reasoning": reasoning[language].format(**values)}  # fmt: skip
    return None


def evaluate(me: str, my_review: dict[str, Any], others: dict[str, tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """Comments of expert ``me`` on ``others`` (``perspective -> (file name, review)``).

    Stances (``STANCES``): ``agree`` (I found a problem on the same line, or it is in my field
    for this document (``in_field``) and major/critical; otherwise no stance), ``challenge``
    (the product manager objects to anything that weakens what the user asked for; the domain
    expert to rewriting the user's own wording into a hard requirement), ``supplement`` (an
    engineering note from my field). Comments and expert names are in the language the reviews
    are written in (the document's)."""
    mine = (_lines(my_review), _categories(my_review))
    responses = []
    lang = my_review.get("language") or document_language(
        " ".join(i.get("problem", "") for _, review in others.values() for i in review.get("issues", []))
    )
    for perspective, (file_name, review) in sorted(others.items()):
        for index, issue in enumerate(review.get("issues", [])):
            said = _comment_on(me, issue, mine, lang)
            if said is None:
                continue
            responses.append(
                {
                    "target_expert": label(perspective, lang),
                    "target_perspective": perspective,
                    "target_file": file_name,
                    "target_location": f"issues[{index}]",
                    "target_issue": issue["id"],
                    "target_content": issue["problem"],
                    **said,
                }
            )
    return {"expert": label(me, lang), "perspective": me, "mode": "evaluate", "responses": responses}


def consensus(agrees: int, challenges: int, others: int = 3) -> str:
    """How many experts stand behind a finding (seed 002 §6.4), counted: ``unanimous`` when
    every other expert agreed; ``majority`` only when at least two experts hold it (the author
    and at least one who agreed) and they outnumber its challengers; ``single`` when one expert
    raised it and nobody else agreed or objected; ``contested`` otherwise."""
    if agrees >= others:
        return "unanimous"
    if agrees >= 1 and 1 + agrees > challenges:
        return "majority"
    return "single" if challenges == 0 else "contested"


def _comment(received: dict[str, Any]) -> dict[str, Any]:
    """One evaluate-round comment as kept in ``response_*.json`` (who, stance, what, why)."""
    return {
        "expert": received.get("perspective", ""),
        "label": received["from"],
        "stance": received["stance"],
        "comment": received.get("my_comment", ""),
        "reasoning": received.get("reasoning", ""),
    }


def _received(me: str, evaluations: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """The evaluate-round comments aimed at ``me``, by target issue id."""
    comments: dict[str, list[dict[str, Any]]] = {}
    for evaluation in evaluations:
        for response in evaluation.get("responses", []):
            if response.get("target_perspective") == me:
                comments.setdefault(response["target_issue"], []).append(
                    {**response, "from": evaluation["expert"], "perspective": evaluation.get("perspective", "")}
                )
    return comments


def _withdrawal(
    issue: dict[str, Any], received: list[dict[str, Any]], withdrawals: Mapping[str, str] | None, lang: str
) -> tuple[bool, str]:
    """Whether ``issue`` is withdrawn, and why (see ``respond``)."""
    if withdrawals is not None:
        return issue["id"] in withdrawals, withdrawals.get(issue["id"], "")
    challenges = [c for c in received if c["stance"] == "challenge"]
    withdraw = len(challenges) >= 2 and not any(c["stance"] == "agree" for c in received)
    who = [label(c.get("perspective") or c["from"], lang) for c in challenges]
    return withdraw, say(lang, "Withdrawn after objections from " + ", ".join(who) + ".",
                         "因" + "、".join(who) + "的反对而撤回。")  # fmt: skip


def _note(issue: dict[str, Any], number: int, supplement: dict[str, Any]) -> dict[str, Any]:
    """A supplement as an engineering note (``change.action`` ``note``): something for the
    team to design, never a question to the requirement owner."""
    return {
        "id": f"{issue['id']}-s{number}",
        # the same comment from the same expert on the same line is one point
        "rule": f"debate_supplement:{supplement.get('perspective', '')}",
        "derived_from": issue["id"],
        "raised_by": supplement["from"],
        "raised_by_perspective": supplement.get("perspective", ""),
        "category": issue["category"],
        "severity": "minor",
        "location": issue["location"],
        "quote": issue.get("quote", ""),
        "problem": supplement["my_comment"],
        "suggestion": supplement["reasoning"],
        "consensus_level": "single",
        "change": {"action": "note", "note": supplement["my_comment"]},
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
    ``reasoning``) so the consolidator can show each expert's position (seed 002 §6.5); the
    ``consensus_level`` is counted (``consensus``). Supplements become engineering notes in
    ``new_issues_from_debate`` (``_note``). Names and reasons are in the document's language
    (``my_review["language"]`` when the review says it, else read from its findings)."""
    comments = _received(me, evaluations)
    lang = my_review.get("language") or document_language(
        " ".join(i.get("problem", "") for i in my_review.get("issues", []))
    )
    final_issues, withdrawn, new_issues = [], [], []
    for issue in my_review.get("issues", []):
        received = comments.get(issue["id"], [])
        withdraw, reason = _withdrawal(issue, received, withdrawals, lang)
        if withdraw:
            withdrawn.append({**issue, "reason": reason, "comments": [_comment(c) for c in received]})
            continue
        agrees = [c["from"] for c in received if c["stance"] == "agree"]
        challenges = [c["from"] for c in received if c["stance"] == "challenge"]
        final_issues.append(
            {
                **issue,
                "consensus_level": consensus(len(agrees), len(challenges)),
                "supporters": agrees,
                "challengers": challenges,
                "comments": [_comment(c) for c in received],
            }
        )
        supplements = [c for c in received if c["stance"] == "supplement"]
        new_issues += [_note(issue, number, c) for number, c in enumerate(supplements, start=1)]
    return {
        "expert": label(me, lang),
        "perspective": me,
        "mode": "respond",
        "final_issues": final_issues,
        "withdrawn_issues": withdrawn,
        "new_issues_from_debate": new_issues,
    }
