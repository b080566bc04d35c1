"""The requirement reviewers' brains on the ``openai`` executor (seed 002 §6.2-§6.4).

The control flow of ``requirement_review`` stays deterministic (main's orchestration, the
seed 002 §6.6 merge rules and the §6.7 quality check are policy, not judgement: a model must
never be able to adopt a change that drops what the user asked for). What the model decides
is each expert's judgement, asked with the role's rendered prompt as the system message:

- ``review``: the problems it finds, each pointing at a line of the user's document with a
  ``change`` the consolidator can apply (``replace`` / ``append_section`` / ``open_point`` /
  ``scope_reduction``) -> ``review_<perspective>.json``;
- ``evaluate``: its stance (agree / challenge / supplement) on the other experts' issues ->
  ``evaluate_<perspective>.json``;
- ``respond``: which of its issues it withdraws after the comments aimed at it; consensus
  levels are then counted by the seed's rules -> ``response_<perspective>.json``.

Answers are JSON checked against a schema and against the document (a ``replace`` must quote
words that are on that line; references must name real issues); the first invalid answer is
sent back once with the errors. An item still invalid after that (an issue, a stance, a
withdrawal) is dropped and the rest kept (``ModelSession.answer_items``), each drop a warning
in the artifact's ``warnings`` and the context's errors; only an answer with no valid item
fails the expert, and main's review goes on with the others (seed 002 point 7). The experts
write in the document's language (``document_language``).
"""

from __future__ import annotations

import json
from typing import Any

from teamclaw.runtime.execution import ExecutionCall
from teamclaw.runtime.executors.function_tools import FunctionTools
from teamclaw.runtime.executors.model import AnswerCheck, DroppedItem, ModelSession, OpenAIExecutor
from teamclaw.workflows.consolidation import ADDED_SECTIONS
from teamclaw.workflows.debate import respond
from teamclaw.workflows.document import RequirementDocument, document_language, parse_document
from teamclaw.workflows.document_rules import title_anchor
from teamclaw.workflows.quality_rules import CATEGORIES as QUALITY_CATEGORIES
from teamclaw.workflows.requirement_review import (
    artifact_json,
    artifacts_with_prefix,
    load_artifact,
    requirement_consolidation,
    requirement_quality_check,
    task_orchestration,
)
from teamclaw.workflows.review_checklist import checklist_text, rule_categories
from teamclaw.workflows.review_rules import PERSPECTIVES, label_of, perspective_of
from teamclaw.workflows.review_text import label as expert_label
from teamclaw.workflows.review_text import summary as round_summary

CATEGORIES = QUALITY_CATEGORIES
"""Issue categories: the requirement-quality taxonomy (docs/review-rules.md), as the offline
experts' findings carry."""
MAX_ISSUES = 15
LANGUAGE_NAMES = {"en": "English", "zh": "Chinese"}


def language_instruction(language: str, what: str) -> str:
    """The prompt line that keeps an expert's text in the document's language (``"en"`` or
    ``"zh"``, ``document.document_language``); ``what`` names the texts it writes."""
    name = LANGUAGE_NAMES.get(language, "English")
    return f"Write {what} in {name}, the language of the document."


TOOLS_NOTE = (
    "You may call the functions offered to you (your role's tools and the capabilities it may invoke, "
    "through TeamClaw) to check something before you answer; each returns its result or the reason it "
    "was refused."
)


def expert_tools(call: ExecutionCall, session: ModelSession) -> FunctionTools | None:
    """The functions an expert's model is offered (issue 29 item 6): what ``run_capability``
    offers the role (its tools under the tool matrix, allow or confirm; the capabilities it may
    invoke), except ``expert_review`` itself on another expert; None when the ``functions``
    option is off or nothing is offered. Each call runs through the runtime: a ``confirm``
    tool waits for the operator (PRD §4.7)."""
    if not session.options.functions:
        return None
    tools = FunctionTools(call, leave_out=frozenset({call.card.capability_id}))
    return tools if tools.specs() else None


def _tools_note(tools: FunctionTools | None) -> list[str]:
    return [TOOLS_NOTE] if tools is not None else []


def _warnings(dropped: list[DroppedItem], what: str) -> list[str]:
    return [f"{what}: {drop.warning()}" for drop in dropped]


_TEXT = {"type": "string", "minLength": 1, "maxLength": 2000}
CHANGE_SCHEMA: dict[str, Any] = {
    "oneOf": [
        {
            "type": "object",
            "properties": {
                "action": {"const": "replace"},
                "old": _TEXT,
                "new": _TEXT,
                "strengthens": {"type": "boolean"},
            },
            "required": ["action", "old", "new"],
            "additionalProperties": False,
        },
        {
            "type": "object",
            "properties": {
                "action": {"const": "append_section"},
                "section": {"type": "string", "minLength": 1, "maxLength": 200},
                "lines": {"type": "array", "minItems": 1, "maxItems": 10, "items": _TEXT},
            },
            "required": ["action", "section", "lines"],
            "additionalProperties": False,
        },
        {
            "type": "object",
            "properties": {"action": {"const": "open_point"}, "question": _TEXT},
            "required": ["action", "question"],
            "additionalProperties": False,
        },
        {
            "type": "object",
            "properties": {"action": {"const": "scope_reduction"}, "old": _TEXT, "new": _TEXT},
            "required": ["action", "old", "new"],
            "additionalProperties": False,
        },
    ]
}
REVIEW_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "summary": {"type": "string", "maxLength": 2000},
        "issues": {
            "type": "array",
            "maxItems": MAX_ISSUES,
            "items": {
                "type": "object",
                "properties": {
                    "category": {"enum": list(CATEGORIES)},
                    "severity": {"enum": ["minor", "major", "critical"]},
                    "line": {"type": ["integer", "null"], "minimum": 1},
                    "quote": {"type": ["string", "null"], "maxLength": 2000},
                    "rule": {"type": ["string", "null"], "maxLength": 200},
                    "problem": _TEXT,
                    "suggestion": _TEXT,
                    "change": CHANGE_SCHEMA,
                },
                "required": ["category", "severity", "line", "problem", "suggestion", "change"],
                "additionalProperties": False,
            },
        },
    },
    "required": ["summary", "issues"],
    "additionalProperties": False,
}


def numbered(document: str) -> str:
    """The document with right-aligned 1-based line numbers (``  12 | text``)."""
    return "\n".join(f"{n:4d} | {line}" for n, line in enumerate(document.splitlines(), start=1))


def _perspective_text(me: str) -> str:
    spec = PERSPECTIVES.get(me)
    focus = spec["focus"] if spec else "the requirement from your role's point of view"
    return f"You review as the {label_of(me)} (perspective '{me}'). Your focus: {focus}."


# -- review ----------------------------------------------------------------------
LINE_BOUND = ("replace", "scope_reduction")
"""Changes that rewrite words of their own line: their quote must be on that line."""


def quote_lines(document: RequirementDocument, quote: str) -> list[int]:
    """The 1-based numbers of the lines of ``document`` holding ``quote`` (case-insensitive;
    [] for an empty quote or one that is nowhere in the document)."""
    wanted = quote.strip().lower()
    if not wanted:
        return []
    return [n for n, text in enumerate(document.lines, start=1) if wanted in text.lower()]


def _line_error(issue: dict[str, Any], lines: list[str]) -> str:
    line, change = issue["line"], issue["change"]
    if line is not None and line > len(lines):
        return f"the document has {len(lines)} lines"
    if change["action"] in LINE_BOUND and line is None:
        return f"a {change['action']} needs a line"
    return ""


def _change_error(issue: dict[str, Any], document: RequirementDocument, sections: set[str]) -> dict[str, str]:
    line, change = issue["line"], issue["change"]
    lines = document.lines
    if change["action"] in LINE_BOUND and change["old"].lower() not in lines[line - 1].lower():
        shown = lines[line - 1].strip()[:120]
        return {"pointer": "/change/old", "message": f"{change['old']!r} is not on line {line} ({shown!r})"}
    if change["action"] == "append_section" and change["section"].lower() not in sections:
        allowed = ", ".join([*document.section_titles(), *ADDED_SECTIONS])
        return {"pointer": "/change/section", "message": f"use one of: {allowed}"}
    return {}


def _quote_error(issue: dict[str, Any], document: RequirementDocument) -> str:
    """Why the issue's ``quote`` cannot stand as a quote of ``document`` ("" when it can: no
    quote, or words found on its line, or elsewhere for a change not bound to its line)."""
    quote, line = (issue.get("quote") or "").strip(), issue["line"]
    if not quote:
        return ""
    found = quote_lines(document, quote)
    if not found:
        return f"{quote!r} is not in the document: quote its words exactly as written, or give null"
    if issue["change"]["action"] in LINE_BOUND and line not in found:
        return f"{quote!r} is not on line {line} (it is on line {found[0]})"
    return ""


def review_check(document: RequirementDocument) -> AnswerCheck:
    """Checks of a review answer against the document: lines exist, quoted words (a
    ``replace``'s ``old``, an issue's ``quote``) are in the document and on their line where
    the change rewrites that line, sections exist or are one of the consolidator's added
    sections. A quote found nowhere is an error: after the one repair request the issue is
    dropped (``ModelSession.answer_items``), never shown with words the user did not write."""
    sections = {title.lower() for title in document.section_titles()} | {s.lower() for s in ADDED_SECTIONS}

    def check(answer: dict[str, Any]) -> list[dict[str, str]]:
        errors = []
        for index, issue in enumerate(answer["issues"]):
            where = f"/issues/{index}"
            if message := _line_error(issue, document.lines):
                errors.append({"pointer": f"{where}/line", "message": message})
                continue
            if error := _change_error(issue, document, sections):
                errors.append({"pointer": where + error["pointer"], "message": error["message"]})
            if message := _quote_error(issue, document):
                errors.append({"pointer": f"{where}/quote", "message": message})
        return errors

    return check


def locate(document: RequirementDocument, item: dict[str, Any]) -> tuple[int, str, str]:
    """``(line, section, quote)`` of a checked model issue, as the engine's findings carry
    them: the quote as the document writes it (its case) on the issue's line, or on the first
    line holding it (a statement before a heading); without a quote the statement on the issue's line, verbatim; for the
    whole document (no line) the title line (``title_anchor``)."""
    statements = {s.number: s for s in document.statements}
    quote, line = (item.get("quote") or "").strip(), item["line"]
    found = quote_lines(document, quote)
    if found:
        number = line if line in found else ([n for n in found if n in statements] or found)[0]
        text = document.lines[number - 1]
        start = text.lower().index(quote.lower())
        section = statements[number].section if number in statements else ""
        return number, section, text[start : start + len(quote)]
    statement = statements.get(line) if line else None
    if statement:
        return statement.number, statement.section, statement.text[:240]
    number, text = title_anchor(document)
    return number, "", text


def normalised_rule(item: dict[str, Any], known: dict[str, str]) -> tuple[str, str]:
    """``(rule, category)`` of a model issue: a rule id it names that is a row of the engine
    (``review_checklist.rule_categories``) with that row's category; otherwise its category
    (a taxonomy category, the schema's enum) as both."""
    rule = (item.get("rule") or "").strip()
    if rule in known:
        return rule, known[rule]
    return item["category"], item["category"]


async def _review(call: ExecutionCall, session: ModelSession, me: str, artifact: str, source: str) -> dict[str, Any]:
    document = parse_document(source)
    language = document_language(source)
    extra = ""
    if me == "domain" and call.read_artifact("domain_role.md"):
        extra = "\nThe domain identified for this requirement:\n" + (call.read_artifact("domain_role.md") or "")
    checklist = checklist_text(me, document)
    tools = expert_tools(call, session)
    prompt = "\n".join(
        [
            "Requirement review (seed 002), mode: review.",
            _perspective_text(me) + extra,
            "Report the problems you find from your perspective only, at most "
            f"{MAX_ISSUES}, each pointing at a line of the user's document (null for the whole document).",
            "Each issue gives its taxonomy category, the id of the checklist rule it fits as rule (null when "
            "none fits), and as quote the words of that line it is about, exactly as written there (null "
            "for the whole document); an issue whose quote is not in the document is dropped.",
            *([checklist] if checklist else []),
            "Each issue carries the change that would fix it:",
            '- {"action": "replace", "old": words exactly as on that line, "new": replacement, '
            '"strengthens": true if it makes what the user wrote stricter}',
            '- {"action": "append_section", "section": an existing section or one of '
            + ", ".join(ADDED_SECTIONS)
            + ', "lines": [requirement lines to add]}',
            '- {"action": "open_point", "question": what only the requirement owner can decide}',
            '- {"action": "scope_reduction", "old": ..., "new": ...} when the fix drops or weakens '
            "what the user asked for (say so honestly; it will not be adopted)",
            language_instruction(language, "the summary and every problem, suggestion and added line"),
            *_tools_note(tools),
            "Answer with one JSON object (no prose, no code fence) matching this JSON Schema:",
            json.dumps(REVIEW_SCHEMA),
            f"Requirement ({artifact}), with line numbers:",
            numbered(source),
        ]
    )
    messages = [{"role": "system", "content": session.system_prompt()}, {"role": "user", "content": prompt}]
    label = f"review ({me})"
    answer, dropped = await session.answer_items(
        messages, REVIEW_SCHEMA, "issues", tools=tools, check=review_check(document), label=label
    )
    known = rule_categories()
    issues = []
    for index, item in enumerate(answer["issues"]):
        line, section, quote = locate(document, item)
        rule, category = normalised_rule(item, known)
        change = dict(item["change"])
        issues.append(
            {
                "id": f"{me}-{index + 1}",
                "rule": rule,
                "category": category,
                "severity": item["severity"],
                "location": {"line": line, "section": section},
                "quote": quote,
                "problem": item["problem"],
                "suggestion": item["suggestion"],
                "change": change,
            }
        )
    return {
        "expert": expert_label(me, language),
        "perspective": me,
        "role": call.role,
        "mode": "review",
        "document": artifact,
        "issues": issues,
        "summary": answer["summary"] or round_summary("review", language, count=len(issues), expert=me),
        "model": session.options.model,
        "language": language,
        "warnings": _warnings(dropped, label),
    }


# -- evaluate --------------------------------------------------------------------
def _issue_line(perspective: str, issue: dict[str, Any]) -> str:
    change = issue.get("change", {})
    line = issue["location"].get("line")
    return (
        f"- [{issue['id']}] {label_of(perspective)}, {issue['category']}, {issue['severity']}"
        f"{f', line {line}' if line else ''}: {issue['problem']} Suggestion: {issue['suggestion']} "
        f"(change: {json.dumps(change, ensure_ascii=False)})"
    )


async def _evaluate(call: ExecutionCall, session: ModelSession, me: str, language: str) -> dict[str, Any]:
    reviews = artifacts_with_prefix(call, "review")
    reviews.pop(me, None)
    targets: dict[str, tuple[str, str, int, dict[str, Any]]] = {}
    listing = []
    for perspective, (file_name, review) in sorted(reviews.items()):
        for index, issue in enumerate(review.get("issues", [])):
            targets[issue["id"]] = (perspective, file_name, index, issue)
            listing.append(_issue_line(perspective, issue))
    responses: list[dict[str, Any]] = []
    warnings: list[str] = []
    if targets:
        schema = {
            "type": "object",
            "properties": {
                "responses": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "target_issue": {"enum": sorted(targets)},
                            "stance": {"enum": ["agree", "challenge", "supplement"]},
                            "comment": _TEXT,
                            "reasoning": _TEXT,
                        },
                        "required": ["target_issue", "stance", "comment", "reasoning"],
                        "additionalProperties": False,
                    },
                }
            },
            "required": ["responses"],
            "additionalProperties": False,
        }

        def check(answer: dict[str, Any]) -> list[dict[str, str]]:
            seen: set[str] = set()
            errors = []
            for index, item in enumerate(answer["responses"]):
                if item["target_issue"] in seen:
                    errors.append({"pointer": f"/responses/{index}/target_issue", "message": "one response per issue"})
                seen.add(item["target_issue"])
            return errors

        tools = expert_tools(call, session)
        prompt = "\n".join(
            [
                "Requirement review (seed 002), mode: evaluate.",
                _perspective_text(me),
                "Read the other experts' issues below. Comment only where you agree from your own evidence, "
                "object (challenge), or have something to add from your field (supplement); skip the rest.",
                "Issues:",
                *listing,
                language_instruction(language, "every comment and reasoning"),
                *_tools_note(tools),
                "Answer with one JSON object (no prose, no code fence) matching this JSON Schema:",
                json.dumps(schema),
            ]
        )
        messages = [{"role": "system", "content": session.system_prompt()}, {"role": "user", "content": prompt}]
        label = f"evaluate ({me})"
        answer, dropped = await session.answer_items(
            messages, schema, "responses", tools=tools, check=check, label=label
        )
        warnings = _warnings(dropped, label)
        for item in answer["responses"]:
            perspective, file_name, index, issue = targets[item["target_issue"]]
            responses.append(
                {
                    "target_expert": expert_label(perspective, language),
                    "target_perspective": perspective,
                    "target_file": file_name,
                    "target_location": f"issues[{index}]",
                    "target_issue": issue["id"],
                    "target_content": issue["problem"],
                    "stance": item["stance"],
                    "my_comment": item["comment"],
                    "reasoning": item["reasoning"],
                }
            )
    return {
        "expert": expert_label(me, language),
        "perspective": me,
        "mode": "evaluate",
        "responses": responses,
        "warnings": warnings,
    }


# -- respond ---------------------------------------------------------------------
async def _respond(call: ExecutionCall, session: ModelSession, me: str, language: str) -> dict[str, Any]:
    mine: dict[str, Any] = artifacts_with_prefix(call, "review").get(me, (None, {"issues": []}))[1]
    evaluations = [data for _, data in artifacts_with_prefix(call, "evaluate").values()]
    comments: dict[str, list[str]] = {}
    for evaluation in evaluations:
        for response in evaluation.get("responses", []):
            if response.get("target_perspective") == me:
                comments.setdefault(response["target_issue"], []).append(
                    f"({response['stance']}) {evaluation['expert']}: {response['my_comment']} "
                    f"Reasoning: {response['reasoning']}"
                )
    own = {issue["id"]: issue for issue in mine.get("issues", [])}
    if not comments or not own:
        return {**respond(me, {**mine, "language": language}, evaluations, withdrawals={}), "warnings": []}
    schema = {
        "type": "object",
        "properties": {
            "withdrawn": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"issue_id": {"enum": sorted(own)}, "reason": _TEXT},
                    "required": ["issue_id", "reason"],
                    "additionalProperties": False,
                },
            }
        },
        "required": ["withdrawn"],
        "additionalProperties": False,
    }
    listing = []
    for issue_id, issue in own.items():
        listing.append(_issue_line(me, issue))
        listing += [f"    {text}" for text in comments.get(issue_id, [])] or ["    (no comments)"]
    tools = expert_tools(call, session)
    prompt = "\n".join(
        [
            "Requirement review (seed 002), mode: respond.",
            _perspective_text(me),
            "Below are your issues and the other experts' comments on them. Decide which issues you withdraw "
            "because the objections convinced you; keep the rest (consensus is counted from the comments).",
            *listing,
            language_instruction(language, "every reason"),
            *_tools_note(tools),
            "Answer with one JSON object (no prose, no code fence) matching this JSON Schema:",
            json.dumps(schema),
        ]
    )
    messages = [{"role": "system", "content": session.system_prompt()}, {"role": "user", "content": prompt}]
    label = f"respond ({me})"
    answer, dropped = await session.answer_items(messages, schema, "withdrawn", tools=tools, label=label)
    withdrawals = {item["issue_id"]: item["reason"] for item in answer["withdrawn"]}
    answered = respond(me, {**mine, "language": language}, evaluations, withdrawals=withdrawals)
    return {**answered, "warnings": _warnings(dropped, label)}


async def expert_review(call: ExecutionCall, session: ModelSession) -> dict[str, Any]:
    """``expert_review`` on the model: review, evaluate or respond by ``params.mode``; writes
    the seed's ``<mode>_<perspective>.json`` artifact (its ``warnings`` list the items of the
    model's answer that were dropped as invalid) and returns the card's output with them.
    Raises AgentFailure as ``ModelSession.answer_items`` (``output_invalid`` when no item of
    the answer is valid: main's review goes on without this expert)."""
    mode = call.params["mode"]
    me = perspective_of(call.role)
    artifact = call.params["requirement_artifact"]
    source = load_artifact(call, artifact)
    language = document_language(source)
    if mode == "review":
        data = await _review(call, session, me, artifact, source)
        name, count = f"review_{me}.json", len(data["issues"])
        summary = data["summary"]
    elif mode == "evaluate":
        data = await _evaluate(call, session, me, language)
        name, count = f"evaluate_{me}.json", len(data["responses"])
        summary = round_summary("evaluate", language, count=count, reviews=3)
    else:
        data = await _respond(call, session, me, language)
        name, count = f"response_{me}.json", len(data["final_issues"])
        summary = round_summary("respond", language, count=count, withdrawn=len(data["withdrawn_issues"]),
                                new=len(data["new_issues_from_debate"]))  # fmt: skip
    call.write_artifact(name, artifact_json(data))
    return {
        "artifact": name,
        "perspective": me,
        "summary": summary[:2000],
        "issue_count": count,
        "warnings": data["warnings"],
    }


def deterministic(handler: Any) -> Any:
    """A ``ModelHandler`` that runs the offline ``handler(call)`` and never asks the model
    (policy, not judgement: module docstring)."""

    async def run(call: ExecutionCall, session: ModelSession) -> dict[str, Any]:
        return await handler(call)

    run.__doc__ = handler.__doc__
    return run


def register_model_handlers(executor: OpenAIExecutor) -> None:
    """Give the ``openai`` executor the requirement_review brains: the experts ask the model;
    orchestration, consolidation and the quality check stay deterministic (module docstring)."""
    executor.register("expert_review", expert_review)
    executor.register("task_orchestration", deterministic(task_orchestration))
    executor.register("requirement_consolidation", deterministic(requirement_consolidation))
    executor.register("requirement_quality_check", deterministic(requirement_quality_check))
