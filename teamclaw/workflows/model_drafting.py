"""The product manager's drafting brains on the ``openai`` executor (seed 002 phases 2-4).

What the model decides, asked with the role's rendered prompt as the system message:

- ``project_type_matching`` (project_type_matcher): which of the known types
  (``interview.load_project_types``, their labels and keywords) the idea is, with a
  confidence and the idea's words it relied on. An answer naming a type that does not exist
  (or keywords the idea does not contain) is sent back once; still invalid, the offline
  keyword matcher (``interview.match_project_type``) decides, with a warning.
- ``requirement_interview`` (req_interviewer): the wording of the round's questions. Which
  questions are asked, their options and the coverage map stay the offline planner's
  (``interview.interview_round``: the ids, their count and sections); the model words
  each in the document's language, in business or technical style judged from the earlier
  answers. An answer that drops, adds or repeats an id, or is in the other language, is
  sent back once; still invalid, the offline wording is used, with a warning.

``requirement_writing`` and ``question_aggregation`` stay deterministic on a model too: the
writer uses only the user's own words (seed 002 principle 4), so a model could only make
the draft less honest. Every warning is in the output's ``warnings`` and the context's errors
(``reason: offline_fallback``), so the inspector shows it.
"""

from __future__ import annotations

import json
from typing import Any

from teamclaw.runtime.errors import AgentFailure, ErrorCode
from teamclaw.runtime.execution import ExecutionCall
from teamclaw.runtime.executors.model import ModelSession, OpenAIExecutor
from teamclaw.workflows.document import document_language
from teamclaw.workflows.drafting import question_aggregation, requirement_interview, requirement_writing
from teamclaw.workflows.interview import UNKNOWN, ProjectType, load_project_types, match_project_type
from teamclaw.workflows.model_review import LANGUAGE_NAMES, deterministic

CONFIDENCES = ("high", "medium", "low")
_SHORT = {"type": "string", "minLength": 1, "maxLength": 200}


def project_type_schema(types: dict[str, ProjectType]) -> dict[str, Any]:
    """The JSON Schema of the model's type match: ``{"project_type": one of ``types``,
    "confidence": high | medium | low, "matched_keywords": [words of the idea], "reason"}``."""
    return {
        "type": "object",
        "properties": {
            "project_type": {"enum": sorted(types)},
            "confidence": {"enum": list(CONFIDENCES)},
            "matched_keywords": {"type": "array", "maxItems": 20, "items": _SHORT},
            "reason": {"type": "string", "maxLength": 1000},
        },
        "required": ["project_type", "confidence", "matched_keywords"],
        "additionalProperties": False,
    }


def _fallback(call: ExecutionCall, what: str, failure: AgentFailure) -> str:
    """Record in the context's errors that the offline brain answered for ``what``; the warning."""
    warning = (
        f"{what}: the model's answer was still invalid after one repair attempt; the offline {what} was used instead"
    )
    call.context.errors.append(
        {
            "code": str(failure.error.code),
            "message": warning,
            "details": {
                "reason": "offline_fallback",
                "recovered": True,
                "errors": list(failure.error.details.get("errors", []))[:20],
            },
        }
    )
    return warning


async def project_type_matching(call: ExecutionCall, session: ModelSession) -> dict[str, Any]:
    """``project_type_matching`` on the model: the card's output (``project_type``,
    ``confidence``, ``matched_keywords``, ``candidates`` as the offline matcher scores them)
    plus ``matched_by`` (``model`` or ``offline``) and ``warnings``. At low confidence the
    type is ``unknown`` and main asks the operator (as offline). Raises AgentFailure as
    ``ModelSession.answer`` apart from ``output_invalid``, which falls back to the offline matcher."""
    idea = call.params["description"]
    types = load_project_types()
    offline = match_project_type(idea, types)
    listing = [
        f"- {t.type}: {t.label['en']} / {t.label['zh']}; keywords: {', '.join(t.keywords['en'] + t.keywords['zh'])}"
        for t in types.values()
        if t.type != UNKNOWN
    ]
    listing.append(f"- {UNKNOWN}: {types[UNKNOWN].label['en']} / {types[UNKNOWN].label['zh']} (none of the others)")
    schema = project_type_schema(types)
    lowered = idea.lower()

    def check(answer: dict[str, Any]) -> list[dict[str, str]]:
        return [
            {"pointer": f"/matched_keywords/{index}", "message": f"{word!r} is not in the idea; quote its own words"}
            for index, word in enumerate(answer["matched_keywords"])
            if word.lower() not in lowered
        ]

    prompt = "\n".join(
        [
            "Requirement interview (seed 002), phase 2: project type matching.",
            "Which one of these project types is the idea below? Judge by meaning; the keywords are hints.",
            *listing,
            "confidence: high when the idea clearly is that type, medium when it probably is, low when it "
            f"could be several or none (then answer {UNKNOWN!r}: the operator picks).",
            "matched_keywords: the idea's own words you relied on, quoted exactly.",
            "Answer with one JSON object (no prose, no code fence) matching this JSON Schema:",
            json.dumps(schema),
            "Idea:",
            idea,
        ]
    )
    messages = [{"role": "system", "content": session.system_prompt()}, {"role": "user", "content": prompt}]
    try:
        answer = await session.answer(messages, schema, check=check, label="project type matching")
    except AgentFailure as failure:
        if failure.error.code != ErrorCode.OUTPUT_INVALID:
            raise
        return {**offline, "matched_by": "offline", "warnings": [_fallback(call, "project type matching", failure)]}
    confidence = answer["confidence"] if answer["project_type"] != UNKNOWN else "low"
    low = confidence == "low"
    return {
        "project_type": UNKNOWN if low else answer["project_type"],
        "confidence": confidence,
        "matched_keywords": [] if low else answer["matched_keywords"],
        "candidates": offline["candidates"],
        "reason": answer.get("reason", ""),
        "matched_by": "model",
        "warnings": [],
    }


def interview_schema(ids: list[str]) -> dict[str, Any]:
    """The JSON Schema of the model's wording of a round: ``{"style": business | technical,
    "questions": [{"id": one of ``ids``, "text"}]}``, exactly ``len(ids)`` questions."""
    return {
        "type": "object",
        "properties": {
            "style": {"enum": ["business", "technical"]},
            "questions": {
                "type": "array",
                "minItems": len(ids),
                "maxItems": len(ids),
                "items": {
                    "type": "object",
                    "properties": {
                        "id": {"enum": ids},
                        "text": {"type": "string", "minLength": 1, "maxLength": 500},
                    },
                    "required": ["id", "text"],
                    "additionalProperties": False,
                },
            },
        },
        "required": ["style", "questions"],
        "additionalProperties": False,
    }


async def requirement_interview_on_model(call: ExecutionCall, session: ModelSession) -> dict[str, Any]:
    """``requirement_interview`` on the model: the offline round (``interview.interview_round``:
    ids, count, sections, topics) with each ``text`` and the ``style`` from the model, plus
    ``worded_by`` (``model`` or ``offline``) and ``warnings``. Raises AgentFailure
    (invalid_params) for an unknown type, and as ``ModelSession.answer`` apart from
    ``output_invalid``, which falls back to the offline wording."""
    offline = await requirement_interview(call)
    language = call.params["language"]
    project_type = load_project_types()[call.params["project_type"]]
    earlier = [
        str(a) for r in call.params.get("rounds", []) for a in (r.get("answers") or {}).values() if str(a).strip()
    ]
    if not offline["questions"]:
        return {**offline, "worded_by": "offline", "warnings": []}
    core = {q["id"]: q for q in project_type.questions}
    ids = [q["id"] for q in offline["questions"]]
    schema = interview_schema(ids)
    name = LANGUAGE_NAMES.get(language, "English")

    def check(answer: dict[str, Any]) -> list[dict[str, str]]:
        errors, seen = [], set()
        for index, question in enumerate(answer["questions"]):
            if question["id"] in seen:
                errors.append({"pointer": f"/questions/{index}/id", "message": "each question id once"})
            seen.add(question["id"])
            if document_language(question["text"]) != language:
                errors.append({"pointer": f"/questions/{index}/text", "message": f"write the question in {name}"})
        return errors

    listing = []
    for question in offline["questions"]:
        base = core.get(question["question_id"])
        wording = (
            f"business: {base['business'][language]} | technical: {base['technical'][language]}"
            if base
            else f"follow-up on an earlier answer: {question['text']}"
        )
        listing.append(f"- {question['id']} (section {question['section']}): {wording}")
    answers = [f"- {text[:500]}" for text in earlier] or ["(none yet: this is the first round)"]
    prompt = "\n".join(
        [
            f"Requirement interview (seed 002), phase 3: round {offline['round']} for a "
            f"{project_type.label['en']} project.",
            "Word each question below for the user. Keep every id, ask each one once, and keep its meaning; "
            "do not add or drop questions.",
            "style: business for a user who answers in business terms, technical when the earlier answers "
            "show technical depth (APIs, figures, latency, data); word every question in that style.",
            f"Write every question in {name}, the language of the user's idea.",
            "Questions (id, section, the business and technical wording to start from):",
            *listing,
            "The user's earlier answers:",
            *answers,
            "Answer with one JSON object (no prose, no code fence) matching this JSON Schema:",
            json.dumps(schema, ensure_ascii=False),
        ]
    )
    messages = [{"role": "system", "content": session.system_prompt()}, {"role": "user", "content": prompt}]
    try:
        answer = await session.answer(messages, schema, check=check, label=f"interview round {offline['round']}")
    except AgentFailure as failure:
        if failure.error.code != ErrorCode.OUTPUT_INVALID:
            raise
        return {**offline, "worded_by": "offline", "warnings": [_fallback(call, "interview wording", failure)]}
    texts = {q["id"]: q["text"] for q in answer["questions"]}
    questions = [{**q, "text": texts[q["id"]]} for q in offline["questions"]]
    return {**offline, "style": answer["style"], "questions": questions, "worded_by": "model", "warnings": []}


def register_model_handlers(executor: OpenAIExecutor) -> None:
    """Give the ``openai`` executor the product manager's drafting brains and main's
    aggregation (module docstring: what asks the model, what stays deterministic)."""
    executor.register("project_type_matching", project_type_matching)
    executor.register("requirement_interview", requirement_interview_on_model)
    executor.register("requirement_writing", deterministic(requirement_writing))
    executor.register("question_aggregation", deterministic(question_aggregation))
