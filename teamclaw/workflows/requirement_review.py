"""The built-in ``requirement_review`` workflow (seed 002, phase 6) on the runtime.

The main agent (``task_orchestration``, workflow ``requirement_review``) takes a Markdown
requirement and runs the multi-expert review, every step an invoke through the runtime:

1. writes ``requirement.md``, ``interview_result.json`` (the user's baseline statements)
   and ``domain_role.md`` (the domain expert it identified, §6.1);
2. four experts review in parallel (``expert_review`` mode ``review`` -> ``review_*.json``);
3. each evaluates the other three (mode ``evaluate`` -> ``evaluate_*.json``, §6.3);
4. each responds to the comments aimed at it (mode ``respond`` -> ``response_*.json``, §6.4);
5. the consolidator (a role of its own, seed 002's 汇总Agent) consolidates
   (``requirement_consolidation`` -> ``requirement_final.md`` and ``consolidation_report.json``,
   §6.6, auto mode);
6. the product manager runs the quality check (``requirement_quality_check`` ->
   ``quality_report.json``, §6.7);
7. the main agent saves ``requirement_final.md`` into the project's folder with the
   ``file_write`` tool, under the tool permission matrix (PRD §4.7): ``allow`` writes,
   ``confirm`` waits for an operator, ``deny`` (or a rejection) skips the copy and says so in
   the summary; the artifact is kept either way.

Experts hand work to each other through task artifacts, as the seed's ``temp/*.json`` files.
The handlers below are the ``offline`` executor's brains for these capabilities.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from teamclaw.runtime.errors import AgentFailure, ErrorCode
from teamclaw.runtime.execution import ExecutionCall
from teamclaw.workflows.consolidation import candidate_decisions, consolidate, quality_check
from teamclaw.workflows.debate import evaluate, respond
from teamclaw.workflows.document import document_language, nothing_to_review, parse_document, reviewable
from teamclaw.workflows.domains import domain_frame
from teamclaw.workflows.drafting import HANDLERS as DRAFTING_HANDLERS
from teamclaw.workflows.drafting import choose_next, draft_requirement
from teamclaw.workflows.open_point_folds import open_point_count
from teamclaw.workflows.progress_steps import (
    CONSOLIDATING,
    CONSOLIDATING_OPERATOR_DECIDES,
    DONE,
    DONE_WITH_FINDINGS,
    ENDED_AFTER_DRAFT,
    EVALUATING,
    EVALUATION_WRITTEN,
    EXPERT_ROUND,
    FILES_READ,
    PM_ANALYSIS,
    POINTS_FOR_OPERATOR,
    QUALITY_CHECK,
    RESPONDING,
    RESPONSE_WRITTEN,
    REVIEW_WRITTEN,
    REVIEWING,
    SAVING,
)
from teamclaw.workflows.review_rules import perspective_of, requirement_statements, review
from teamclaw.workflows.review_text import label, say
from teamclaw.workflows.review_text import summary as round_summary
from teamclaw.workflows.steps import INPUT_WAIT_S, artifact_json, artifacts_with_prefix, load_artifact, pace, step

REVIEWER_ROLES = ("architect", "pm", "ai_expert", "domain_expert")
"""Preferred reviewers: development expert, product manager, AI expert, domain expert."""


async def expert_review(call: ExecutionCall) -> dict[str, Any]:
    """``expert_review``: review, evaluate or respond, by ``params.mode`` (seed 002 modes)."""
    mode = call.params["mode"]
    me = perspective_of(call.role)
    source = load_artifact(call, call.params["requirement_artifact"])
    language = document_language(source)
    if mode == "review":
        call.progress(10, REVIEWING)
        issues = review(reviewable(parse_document(source)), me)
        data = {
            "expert": label(me, language),
            "perspective": me,
            "role": call.role,
            "mode": "review",
            "document": call.params["requirement_artifact"],
            "language": language,
            "issues": issues,
            "summary": round_summary("review", language, count=len(issues), expert=me),
        }
        name, count, said = f"review_{me}.json", len(issues), data["summary"]
        call.progress(33, REVIEW_WRITTEN)
    elif mode == "evaluate":
        call.progress(40, EVALUATING)
        reviews = artifacts_with_prefix(call, "review")
        mine: dict[str, Any] = reviews.pop(me, (None, {"issues": []}))[1]
        data = evaluate(me, {**mine, "language": language}, reviews)
        name, count = f"evaluate_{me}.json", len(data["responses"])
        said = round_summary("evaluate", language, count=count, reviews=len(reviews))
        call.progress(66, EVALUATION_WRITTEN)
    else:
        call.progress(70, RESPONDING)
        mine = artifacts_with_prefix(call, "review").get(me, (None, {"issues": []}))[1]
        evaluations = [data for _, data in artifacts_with_prefix(call, "evaluate").values()]
        data = respond(me, {**mine, "language": language}, evaluations)
        name, count = f"response_{me}.json", len(data["final_issues"])
        said = round_summary("respond", language, count=count, withdrawn=len(data["withdrawn_issues"]),
                       new=len(data["new_issues_from_debate"]))  # fmt: skip
        call.progress(100, RESPONSE_WRITTEN)
    call.write_artifact(name, artifact_json(data))
    return {"artifact": name, "perspective": me, "summary": said, "issue_count": count}


DECISION_PENDING = {"en": "Decide the review's points: accept or reject each", "zh": "请逐项决定评审意见：采纳或不采纳"}


def decisions_schema(ids: list[str]) -> dict[str, Any]:
    """The ``answer_schema`` of a confirm-mode request: ``{"decisions": {id: "accept" |
    "reject"}}``, every id required (they may come one by one)."""
    return {
        "type": "object",
        "properties": {
            "decisions": {
                "type": "object",
                "properties": {i: {"type": "string", "enum": ["accept", "reject"]} for i in ids},
                "required": ids,
                "additionalProperties": False,
            }
        },
        "required": ["decisions"],
        "additionalProperties": False,
    }


async def requirement_consolidation(call: ExecutionCall) -> dict[str, Any]:
    """Merge the 14 files of §6.6 into requirement_final.md and consolidation_report.json.

    ``decision_mode`` ``auto`` (req_auto_consolidator): the merge rules decide. ``confirm``
    (§6.5 req_consolidator): every candidate change, contested and open point is put to the
    operator with each expert's position through the rounds (``decisions`` request); the
    report records who decided what. No answer in time: the rules decide, with a warning."""
    original = load_artifact(call, call.params["requirement_artifact"])
    baseline = load_artifact(call, "interview_result.json").get("baseline_statements", [])
    responses = {p: data for p, (_, data) in artifacts_with_prefix(call, "response").items()}
    call.progress(30, FILES_READ % {"count": 3 + 3 * len(responses)})
    warnings: list[str] = []
    if call.params.get("decision_mode") == "confirm":
        candidates = candidate_decisions(original, responses, baseline)
        operator: dict[str, str] = {}
        decided_by = ""
        if candidates:
            language = document_language(original)
            call.progress(50, POINTS_FOR_OPERATOR % {"count": len(candidates)})
            answer = await call.ask_operator(
                "decisions",
                {
                    "items": candidates,
                    "language": language,
                    "answer_schema": decisions_schema([c["id"] for c in candidates]),
                },
                timeout_s=INPUT_WAIT_S,
                question=DECISION_PENDING[language],
            )
            if answer is None:
                warnings.append("the operator decided nothing in time; the merge rules decided every point")
            else:
                operator, decided_by = answer.values["decisions"], answer.answered_by
        final, report = consolidate(original, responses, baseline, operator_decisions=operator, decided_by=decided_by)
    else:
        final, report = consolidate(original, responses, baseline)
    report["warnings"] = warnings
    debate_files = sorted(n for n in call.artifact_names() if n.startswith(("review_", "evaluate_", "response_")))
    report["inputs"] = [*debate_files, "interview_result.json", call.params["requirement_artifact"]]
    call.write_artifact("requirement_final.md", final, "text/markdown")
    call.write_artifact("consolidation_report.json", artifact_json(report))
    counts = report["counts"]
    return {
        "final_artifact": "requirement_final.md",
        "report_artifact": "consolidation_report.json",
        "adopted": counts["adopted"],
        "rejected": counts["rejected"],
        "contested": counts["contested"],
        "open_points": len(report["open_points"]),  # the decisions' and the criteria the text does not give
        "warnings": warnings,
    }


async def requirement_quality_check(call: ExecutionCall) -> dict[str, Any]:
    """The §6.7 quality check of the final document; writes quality_report.json."""
    final = load_artifact(call, call.params["document_artifact"])
    original = load_artifact(call, call.params.get("original_artifact") or "requirement.md")
    result = quality_check(final, original)
    call.write_artifact("quality_report.json", artifact_json(result))
    return result


def _empty_document() -> AgentFailure:
    return AgentFailure(
        ErrorCode.INVALID_PARAMS,
        "the requirement document is empty",
        {"errors": [{"pointer": "/input_markdown", "message": "empty", "keyword": "minLength"}]},
        retryable=False,
    )


def write_document_baseline(call: ExecutionCall, text: str) -> None:
    """For a review that starts from a document (no interview): ``requirement.md`` and
    ``interview_result.json`` whose baseline is the document's own requirement lines."""
    document = parse_document(text)
    language = document_language(text)
    call.write_artifact("requirement.md", text, "text/markdown")
    call.write_artifact(
        "interview_result.json",
        artifact_json(
            {
                "source": "requirement.md",
                "title": document.title,
                "language": language,
                "baseline_statements": [s.text for s in requirement_statements(document)],
                "note": say(
                    language,
                    "The user's explicit requirements: the highest authority when consolidating.",
                    "用户明确提出的需求：汇总时的最高准则。",
                ),
            }
        ),
    )


async def run_requirement_review(call: ExecutionCall) -> dict[str, Any]:
    """Main's orchestration of seed 002 (see the module docstring). ``start_at``:
    ``interview`` (the default without a document: phases 1-5 from ``description``), ``draft``
    (a document, then phase 5) or ``review`` (the default with a document: phase 6 at once).
    ``decision_mode`` ``auto`` or ``confirm`` (§6.5); ``think_time_ms`` paces the demo."""
    params = call.params
    call.task.think_time_s = max(0, min(int(params.get("think_time_ms") or 0), 5000)) / 1000
    markdown = params.get("input_markdown") or ""
    start_at = params.get("start_at") or ("review" if markdown.strip() else "interview")
    if start_at == "interview":
        idea = (params.get("description") or params.get("task_description") or "").strip()
        if not idea:
            raise AgentFailure(
                ErrorCode.INVALID_PARAMS,
                "a one-line idea (description) is needed to start the interview",
                {"errors": [{"pointer": "/description", "message": "empty", "keyword": "minLength"}]},
                retryable=False,
            )
        text = await draft_requirement(call, idea)
    else:
        if not markdown.strip():
            raise _empty_document()
        if reason := nothing_to_review(markdown):
            raise AgentFailure(
                ErrorCode.INVALID_PARAMS,
                f"the requirement document {reason}",
                {"errors": [{"pointer": "/input_markdown", "message": reason, "keyword": "nothing_to_review"}]},
                retryable=False,
            )
        text = markdown
        write_document_baseline(call, text)
        if start_at == "draft":
            call.write_artifact("requirement.v1.md", text, "text/markdown")
    if start_at in ("interview", "draft"):
        choice = await choose_next(call, text)
        if choice.action == "end":
            call.progress(100, ENDED_AFTER_DRAFT)
            unanswered = choice.chosen_by.startswith("nobody")
            outcome = {
                "phase": "draft",
                "ended_at": "phase 5",
                "revision": choice.revision,
                "chosen_by": choice.chosen_by,
                "warnings": ["nobody chose what to do with the draft in time"] if unanswered else [],
                "clean": False,
            }
            call.write_artifact("outcome.json", artifact_json(outcome))
            title = parse_document(choice.text).title
            who = "no answer in time" if unanswered else f"ended by {choice.chosen_by}"
            return {
                "status": "completed",
                "summary": f"Draft '{title}' (revision {choice.revision}) kept without a review ({who}).",
                "subtasks": [],
                "artifacts": call.artifact_names(),
            }
        text = choice.text
    return await review_document(call, text, params.get("decision_mode") or "auto")


async def _expert_round(call: ExecutionCall, mode: str, reviewers: list[str], warnings: list[str]) -> list[str]:
    """One round of ``expert_review`` by ``reviewers`` in parallel; an expert that fails is
    left out of the later rounds with a warning (point 7 of seed 002's robustness: the review
    goes on with the others). Returns the reviewers still in. Raises AgentFailure when fewer
    than two remain."""
    params = {"mode": mode, "requirement_artifact": "requirement.md"}
    await pace(call)
    results = await asyncio.gather(*(call.invoke("expert_review", params, target_role=role) for role in reviewers))
    kept = []
    for role, result in zip(reviewers, results, strict=True):
        if result.success:
            kept.append(role)
            continue
        error = result.error
        assert error is not None
        warning = f"{role} failed in the {mode} round ({error.code}: {error.message}); the review went on without it"
        warnings.append(warning)
        call.context.errors.append({**error.as_dict(), "step": mode, "role": role, "warning": warning})
        call.port.alert("expert_failed", "warning", warning, role=role, step=mode, task_id=call.task.task_id)
    if len(kept) < 2:
        raise AgentFailure(
            ErrorCode.UNAVAILABLE,
            f"only {len(kept)} expert(s) left after the {mode} round; a review needs two",
            {"step": mode, "reviewers": kept, "warnings": warnings},
            retryable=False,
        )
    return kept


async def review_document(call: ExecutionCall, text: str, decision_mode: str) -> dict[str, Any]:
    """Phase 6 on ``requirement.md`` (``text``): domain, the three expert rounds, consolidation
    (``decision_mode`` auto or confirm), the quality check, the copy into the project folder;
    ``outcome.json`` says what came of it."""
    document = parse_document(text)
    language = document_language(text)
    frame = domain_frame(text, language)
    heading = {"en": "Domain expert", "zh": "领域专家"}[language]
    scope = {"en": "Jurisdiction", "zh": "适用法域"}[language]
    colon = {"en": ": ", "zh": "："}[language]  # Chinese text takes the full-width colon (issue 32)
    reviews = {"en": f"Reviews '{document.title}' for:", "zh": f"评审《{document.title}》时关注："}[language]
    call.write_artifact(
        "domain_role.md",
        f"# {heading}{colon}{frame['field_label']}\n\n{scope}{colon}{frame['jurisdiction_label']}\n\n{reviews}\n"
        + "".join(f"- {norm}\n" for norm in frame["norms"]),
        "text/markdown",
    )
    snapshot = call.snapshot
    owners = set(snapshot.cards["expert_review"].owner_roles) if "expert_review" in snapshot.cards else set()
    reviewers = [r for r in REVIEWER_ROLES if r in owners and r in snapshot.roles and snapshot.roles[r].enabled]
    reviewers += sorted(r for r in owners - set(REVIEWER_ROLES) if r in snapshot.roles and snapshot.roles[r].enabled)
    if len(reviewers) < 2:
        raise AgentFailure(
            ErrorCode.UNAVAILABLE,
            "at least two enabled reviewer roles are needed",
            {"reviewers": reviewers},
            retryable=False,
        )
    subtasks: list[dict[str, Any]] = []
    warnings: list[str] = []
    for percent, mode in ((40, "review"), (55, "evaluate"), (70, "respond")):
        call.progress(percent, EXPERT_ROUND[mode] % {"count": len(reviewers)})
        asked = list(reviewers)
        reviewers = await _expert_round(call, mode, reviewers, warnings)
        subtasks += [{"capability_id": "expert_review", "role": role, "success": role in reviewers} for role in asked]
    call.progress(80, CONSOLIDATING if decision_mode == "auto" else CONSOLIDATING_OPERATOR_DECIDES)
    (consolidation,) = await step(
        call,
        "consolidation",
        [
            (
                "requirement_consolidation",
                {"requirement_artifact": "requirement.md", "decision_mode": decision_mode},
                "consolidator",
            )
        ],
    )
    subtasks.append({"capability_id": "requirement_consolidation", "role": "consolidator", "success": True})
    call.progress(90, QUALITY_CHECK)
    (quality,) = await step(
        call,
        "quality check",
        [
            (
                "requirement_quality_check",
                {"document_artifact": "requirement_final.md", "original_artifact": "requirement.md"},
                "pm",
            )
        ],
    )
    subtasks.append({"capability_id": "requirement_quality_check", "role": "pm", "success": True})
    call.progress(95, SAVING)
    saved, saved_ok = await save_final_document(call, language)
    if not saved_ok:
        warnings.append(saved)
    warnings += consolidation.get("warnings", [])
    failed = [c["name"] for c in quality["checks"] if not c["passed"]]
    interview = load_artifact(call, "interview_result.json")
    # the open points as the operator sees them: the report's and the interview's, folded
    report_text = call.read_artifact("consolidation_report.json")
    open_count = open_point_count(json.loads(report_text) if report_text else None, interview)
    outcome = {
        "phase": "review",
        "decision_mode": decision_mode,
        "reviewers": reviewers,
        "adopted": consolidation["adopted"],
        "rejected": consolidation["rejected"],
        "contested": consolidation["contested"],
        "open_points": open_count,
        "quality": {
            "passed": quality["passed"],
            "failed_checks": failed,
            "findings": list(dict.fromkeys(f for c in quality["checks"] for f in c["findings"])),
            "unresolved": quality.get("unresolved", []),
        },
        "saved": saved_ok,
        "warnings": warnings,
        "clean": quality["passed"] and not warnings,
    }
    call.write_artifact("outcome.json", artifact_json(outcome))
    call.progress(100, DONE if outcome["clean"] else DONE_WITH_FINDINGS)
    summary = review_summary(language, len(reviewers), document.title, consolidation, failed, saved, len(warnings))
    return {"status": "completed", "summary": summary, "subtasks": subtasks, "artifacts": call.artifact_names()}


def review_summary(
    language: str, experts: int, title: str, consolidation: dict[str, Any], failed: list[str], saved: str, warnings: int
) -> str:
    """The task's one-line summary in the document's ``language`` ("zh" or "en", issue 32:
    message logs on a Chinese page read in Chinese): experts, the consolidation's counts
    (``adopted``/``rejected``/``contested``), the quality checks ``failed`` (names), the
    ``saved`` sentence and the number of ``warnings``."""
    counts = {k: consolidation[k] for k in ("adopted", "rejected", "contested")}
    if language == "zh":
        quality = "质量检查通过。" if not failed else f"质量检查未通过：{'、'.join(failed)}。"
        return (
            f"{experts} 位专家评审了《{title}》：采纳 {counts['adopted']} 项修改，不采纳 {counts['rejected']} 项，"
            f"有争议 {counts['contested']} 项。{quality}{saved}" + (f"警告 {warnings} 条。" if warnings else "")
        )
    quality = "passed. " if not failed else f"flags: {', '.join(failed)}. "
    return (
        f"{experts} experts reviewed '{title}': {counts['adopted']} change(s) adopted, "
        f"{counts['rejected']} rejected, {counts['contested']} contested. Quality check {quality}{saved}"
        + (f" Warnings: {warnings}." if warnings else "")
    )


async def save_final_document(call: ExecutionCall, language: str = "en") -> tuple[str, bool]:
    """Main copies ``requirement_final.md`` to ``reviews/<task_id>/requirement_final.md`` in
    the project's folder (``TEAMCLAW_PROJECTS_ROOT`` or the project's working directory, inside
    main's ``file_scope``) through the ``file_write`` tool, so the tool permission matrix
    applies (PRD §4.7). Returns a sentence for the task summary and whether it was saved; a refusal (``tool_denied``:
    denied, rejected by the operator, or no project folder) is that sentence, never a failed
    task, because the document is already a task artifact."""
    path = f"reviews/{call.task.task_id}/requirement_final.md"
    content = load_artifact(call, "requirement_final.md")
    try:
        await call.use_tool("file_write", path=path, content=content)
    except AgentFailure as failure:
        if failure.error.code != ErrorCode.TOOL_DENIED:
            raise
        # Shown in main's context (errors) on the live page and the replay.
        call.context.errors.append({**failure.error.as_dict(), "tool": "file_write", "path": path})
        return say(
            language,
            f"Not saved to the project folder ({failure.error.message}).",
            f"未保存到项目文件夹（{failure.error.message}）。",
        ), False
    return say(language, f"Saved to the project folder as {path}.", f"已保存到项目文件夹：{path}。"), True


async def run_generic_task(call: ExecutionCall) -> dict[str, Any]:
    """A plain task: the product manager analyses it and main reports the analysis."""
    description = call.params["task_description"]
    call.progress(20, PM_ANALYSIS)
    (analysis,) = await step(call, "analysis", [("requirement_analysis", {"requirement": description}, "pm")])
    call.write_artifact("analysis.json", artifact_json(analysis))
    call.progress(100, DONE)
    return {
        "status": "completed",
        "summary": f"Analysed: {description[:120]}",
        "subtasks": [{"capability_id": "requirement_analysis", "role": "pm", "success": True}],
        "artifacts": call.artifact_names(),
    }


async def task_orchestration(call: ExecutionCall) -> dict[str, Any]:
    """Main's ``task_orchestration``: run the named workflow."""
    if call.params.get("workflow") == "requirement_review":
        return await run_requirement_review(call)
    return await run_generic_task(call)


HANDLERS = {
    **DRAFTING_HANDLERS,
    "task_orchestration": task_orchestration,
    "expert_review": expert_review,
    "requirement_consolidation": requirement_consolidation,
    "requirement_quality_check": requirement_quality_check,
}
