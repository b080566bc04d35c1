"""Seed 002 phases 1-5 on the runtime: from a one-line idea to a draft the operator accepts.

Main's side (``draft_requirement``, ``choose_next``), every step an invoke or an operator's
answer (PRD §4.6 ``waiting_user``, ``ExecutionCall.ask_operator``):

1. the product manager matches the project type (``project_type_matching``); when its
   confidence is low, main asks the operator to pick one (``project_type``);
2. interview rounds (``interview``): the product manager picks and words at most 5
   questions ranked by impact, follow-ups on flagged answers first (``requirement_interview``,
   ``clarify``), main groups them by topic (``question_aggregation``) and asks the operator
   with the coverage map (``interview``), until nothing is left to ask;
3. the answers become ``interview_result.json`` (the user's baseline);
4. the product manager writes ``requirement.md``: numbered EARS requirements from the
   operator's words, open points, a Clarifications log (``requirement_writing``, ``ears``);
5. main asks the operator what next (``next_action``): ``modify`` (a new revision,
   ``requirement.v<N>.md``, then ask again), ``review`` (phase 6) or ``end``.

The handlers at the bottom are the ``offline`` executor's brains for the product manager's
capabilities and main's ``question_aggregation``; the pure logic is ``interview``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from teamclaw.runtime.errors import AgentFailure, ErrorCode
from teamclaw.runtime.execution import ExecutionCall
from teamclaw.workflows.document import document_language
from teamclaw.workflows.interview import (
    UNKNOWN,
    interview_result,
    interview_round,
    load_project_types,
    match_project_type,
    write_requirement,
)
from teamclaw.workflows.progress_steps import INTERVIEW_ROUND, REVISION_SAVED, WRITING_REQUIREMENT
from teamclaw.workflows.review_text import say
from teamclaw.workflows.steps import INPUT_WAIT_S, artifact_json, load_artifact, step

INTERVIEW_ARTIFACT = "interview_result.json"
MAX_REVISIONS = 20
"""Phase 5 modifications one task takes before it asks for review or end only."""
MAX_MARKDOWN_CHARS = 1_000_000

TEXT = {
    "en": {
        "type_question": "Which kind of project is this? The idea alone does not say clearly.",
        "type_pending": "Pick the project type",
        "interview_pending": "Answer the interview questions (round {round})",
        "next_pending": "Read the draft and choose: modify, review or end",
        "next_question": "The draft is ready (revision {revision}). Modify it, send it to the experts' review, "
        "or end here?",
    },
    "zh": {
        "type_question": "这是哪一类项目？仅凭描述还无法确定。",
        "type_pending": "请选择项目类型",
        "interview_pending": "请回答访谈问题（第 {round} 轮）",
        "next_pending": "请阅读草稿并选择：修改、评审或结束",
        "next_question": "草稿已生成（第 {revision} 版）。要修改、进入多角色评审，还是到此结束？",
    },
}


def _answers_schema(ids: list[str], choices: dict[str, list[str]] | None = None) -> dict[str, Any]:
    """The ``answer_schema`` of a questions request: ``{"answers": {id: text}}``, every id
    required (an empty text is a question left open), a choice question limited to its values."""
    properties: dict[str, Any] = {}
    for question_id in ids:
        if choices and question_id in choices:
            properties[question_id] = {"type": "string", "enum": choices[question_id]}
        else:
            properties[question_id] = {"type": "string", "maxLength": 4000}
    return {
        "type": "object",
        "properties": {
            "answers": {
                "type": "object",
                "properties": properties,
                "required": ids,
                "additionalProperties": False,
            }
        },
        "required": ["answers"],
        "additionalProperties": False,
    }


async def pick_project_type(call: ExecutionCall, idea: str, language: str) -> tuple[str, str, str]:
    """Phase 2: ``(project type, confidence, chosen_by)``. The type the operator named at the
    start wins; else the product manager's match; at low confidence the operator picks
    (``project_type`` request). No answer in time: ``unknown`` (open interview)."""
    (match,) = await step(call, "project type", [("project_type_matching", {"description": idea}, "pm")])
    call.write_artifact("project_type.json", artifact_json(match))
    named = call.params.get("project_type") or ""
    if named in load_project_types():
        return named, match["confidence"], "operator"
    if match["confidence"] != "low":
        return match["project_type"], match["confidence"], "matcher"
    choices = [c["type"] for c in match["candidates"]]
    request = {
        "questions": [
            {
                "id": "project_type",
                "text": TEXT[language]["type_question"],
                "choices": [{"value": c["type"], "label": c["label"]} for c in match["candidates"]],
            }
        ],
        "answer_schema": _answers_schema(["project_type"], {"project_type": choices}),
    }
    answer = await call.ask_operator(
        "project_type", request, timeout_s=INPUT_WAIT_S, question=TEXT[language]["type_pending"]
    )
    if answer is None:
        return UNKNOWN, "low", "nobody (no answer in time)"
    return answer.values["answers"]["project_type"], "low", f"operator:{answer.answered_by}"


async def _plan(
    call: ExecutionCall, project_type_id: str, language: str, number: int, rounds: list[dict[str, Any]]
) -> dict[str, Any]:
    """The product manager's round ``number`` (``requirement_interview``) and main's grouping
    of its questions (``question_aggregation``): the round with its ``groups``."""
    (asked,) = await step(
        call,
        f"interview round {number}",
        [("requirement_interview", {"project_type": project_type_id, "language": language, "round": number,
                                    "rounds": rounds}, "pm")],
    )  # fmt: skip
    if not asked["questions"]:
        return {**asked, "groups": []}
    (aggregated,) = await step(
        call,
        "question aggregation",
        [("question_aggregation", {"questions": [{"from_role": "pm", "question": q["text"], "topic": q["section"]}
                                                for q in asked["questions"]]}, "main")],
    )  # fmt: skip
    return {**asked, "groups": aggregated["groups"]}


async def interview(
    call: ExecutionCall, project_type_id: str, language: str
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Phase 3: rounds until the product manager has no question left (``clarify.plan_round``:
    at most 5 a round, ranked, follow-ups on flagged answers, at most ``max_rounds``).
    Returns ``(rounds, final plan)``; the final plan holds the coverage map after the last
    answers. Each round's request carries the ``coverage`` map the operator sees."""
    rounds: list[dict[str, Any]] = []
    number = 1
    while True:
        call.progress(min(5 + 5 * number, 24), INTERVIEW_ROUND % {"number": number})
        plan = await _plan(call, project_type_id, language, number, rounds)
        if not plan["questions"]:
            return rounds, plan
        questions = plan["questions"]
        request = {
            "round": number,
            "style": plan["style"],
            "project_type": project_type_id,
            "language": language,
            "questions": questions,
            "coverage": plan["coverage"],
            "groups": plan["groups"],
            "answer_schema": _answers_schema([q["id"] for q in questions]),
        }
        answer = await call.ask_operator(
            "interview", request, timeout_s=INPUT_WAIT_S,
            question=TEXT[language]["interview_pending"].format(round=number),
        )  # fmt: skip
        rounds.append({"round": number, "style": plan["style"], "questions": questions,
                       "answers": answer.values["answers"] if answer else {},
                       "answered_by": answer.answered_by if answer else ""})  # fmt: skip
        number += 1


async def draft_requirement(call: ExecutionCall, idea: str) -> str:
    """Phases 1-4 for ``idea`` (see the module docstring); returns ``requirement.md``, also
    written as ``requirement.v1.md``. Raises AgentFailure when a step fails."""
    language = document_language(idea)
    project_type_id, confidence, chosen_by = await pick_project_type(call, idea, language)
    project_type = load_project_types()[project_type_id]
    rounds, final = await interview(call, project_type_id, language)
    result = interview_result(idea, project_type, language, confidence, rounds, final)
    result["project_type_chosen_by"] = chosen_by
    call.write_artifact(INTERVIEW_ARTIFACT, artifact_json(result))
    call.progress(25, WRITING_REQUIREMENT)
    await step(
        call,
        "requirement writing",
        [("requirement_writing", {"project_type": project_type_id, "interview_artifact": INTERVIEW_ARTIFACT}, "pm")],
    )
    text: str = load_artifact(call, "requirement.md")
    call.write_artifact("requirement.v1.md", text, "text/markdown")
    return text


@dataclass(frozen=True, slots=True)
class NextAction:
    """The operator's phase 5 choice: ``action`` (``review`` or ``end``), the document as it
    stands (``text``), its ``revision`` and who chose (``chosen_by``)."""

    action: str
    text: str
    revision: int
    chosen_by: str


def next_schema(actions: list[str]) -> dict[str, Any]:
    """The ``answer_schema`` of the phase 5 choice: ``{"action": one of ``actions``,
    "markdown"?}``; ``modify`` needs the edited ``markdown`` (at most 1,000,000 characters,
    not blank)."""
    return {
        "type": "object",
        "properties": {
            "action": {"type": "string", "enum": actions},
            "markdown": {"type": "string", "minLength": 1, "maxLength": MAX_MARKDOWN_CHARS, "pattern": r"\S"},
        },
        "required": ["action"],
        "additionalProperties": False,
        "if": {"properties": {"action": {"const": "modify"}}},
        "then": {"required": ["action", "markdown"]},
    }


async def choose_next(call: ExecutionCall, text: str, revision: int = 1) -> NextAction:
    """Phase 5 (用户交互): ask the operator ``modify`` / ``review`` / ``end`` until it is not
    modify. A modification becomes revision N+1 (``requirement.v<N>.md``; ``requirement.md``
    is always the current one). No answer in time: ``end``, said as such in the summary."""
    language = document_language(text)
    while True:
        actions = ["modify", "review", "end"] if revision < MAX_REVISIONS else ["review", "end"]
        request = {
            "revision": revision,
            "artifact": f"requirement.v{revision}.md",
            "actions": actions,
            "text": TEXT[language]["next_question"].format(revision=revision),
            "markdown": text,
            "answer_schema": next_schema(actions),
        }
        answer = await call.ask_operator(
            "next_action", request, timeout_s=INPUT_WAIT_S, question=TEXT[language]["next_pending"]
        )
        if answer is None:
            return NextAction("end", text, revision, "nobody (no answer in time)")
        action = answer.values["action"]
        if action != "modify":
            return NextAction(action, text, revision, answer.answered_by)
        edited = answer.values["markdown"]
        if edited == text:
            continue  # saved without a change: nothing to record, ask again
        revision += 1
        text = edited
        call.write_artifact(f"requirement.v{revision}.md", text, "text/markdown")
        call.write_artifact("requirement.md", text, "text/markdown")
        call.progress(30, REVISION_SAVED % {"revision": revision})


# -- the product manager's and main's brains (offline executor) ---------------------------------
async def project_type_matching(call: ExecutionCall) -> dict[str, Any]:
    """``project_type_matching`` (seed 002 project_type_matcher): ``interview.match_project_type``."""
    return match_project_type(call.params["description"])


async def requirement_interview(call: ExecutionCall) -> dict[str, Any]:
    """``requirement_interview`` (req_interviewer): the round's questions after the earlier
    ``rounds`` (``interview.interview_round``). Raises AgentFailure (invalid_params) for an
    unknown type."""
    types = load_project_types()
    project_type = types.get(call.params["project_type"])
    if project_type is None:
        raise AgentFailure(
            ErrorCode.INVALID_PARAMS,
            f"unknown project type {call.params['project_type']!r}; known: {', '.join(types)}",
            {"errors": [{"pointer": "/project_type", "message": "unknown project type", "keyword": "enum"}]},
            retryable=False,
        )
    return interview_round(project_type, call.params["language"], call.params["round"], call.params.get("rounds", []))


async def requirement_writing(call: ExecutionCall) -> dict[str, Any]:
    """``requirement_writing`` (req_writer): ``requirement.md`` from the interview result."""
    result = load_artifact(call, call.params["interview_artifact"])
    types = load_project_types()
    project_type = types.get(call.params["project_type"], types[UNKNOWN])
    text, sections = write_requirement(result, project_type)
    call.write_artifact("requirement.md", text, "text/markdown")
    return {"artifact": "requirement.md", "sections": sections, "open_points": len(result["unanswered"])}


async def question_aggregation(call: ExecutionCall) -> dict[str, Any]:
    """``question_aggregation`` (main): the agents' questions without duplicates, grouped by
    their ``topic`` (else by the asking role), in the order first asked."""
    groups: dict[str, list[str]] = {}
    for item in call.params["questions"]:
        topic = item.get("topic") or item["from_role"]
        bucket = groups.setdefault(topic, [])
        if item["question"] not in bucket:
            bucket.append(item["question"])
    count = sum(len(q) for q in groups.values())
    return {
        "summary": say(
            document_language(" ".join(q for qs in groups.values() for q in qs)),
            f"{count} question(s) in {len(groups)} topic(s)",
            f"{len(groups)} 个主题下共 {count} 个问题",
        ),
        "groups": [{"topic": topic, "questions": questions} for topic, questions in groups.items()],
    }


HANDLERS = {
    "project_type_matching": project_type_matching,
    "requirement_interview": requirement_interview,
    "requirement_writing": requirement_writing,
    "question_aggregation": question_aggregation,
}
