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
import re
from typing import Any

from teamclaw.runtime.errors import AgentFailure, ErrorCode
from teamclaw.runtime.execution import ExecutionCall
from teamclaw.workflows.consolidation import consolidate, quality_check
from teamclaw.workflows.debate import evaluate, respond
from teamclaw.workflows.document import parse_document
from teamclaw.workflows.domains import identify_domain
from teamclaw.workflows.review_rules import label_of, perspective_of, requirement_statements, review

REVIEWER_ROLES = ("architect", "pm", "ai_expert", "domain_expert")
"""Preferred reviewers: development expert, product manager, AI expert, domain expert."""


def artifact_json(data: Any) -> str:
    """An artifact's JSON text: indented, non-ASCII kept as written (Chinese stays readable)."""
    return json.dumps(data, ensure_ascii=False, indent=2)


def load_artifact(call: ExecutionCall, name: str) -> Any:
    """The task's artifact ``name``, parsed when it is ``.json``. Raises AgentFailure
    (``executor_error``) when the task has no such artifact."""
    text = call.read_artifact(name)
    if text is None:
        raise AgentFailure(ErrorCode.EXECUTOR_ERROR, f"artifact {name} is missing", {"artifact": name}, retryable=False)
    return json.loads(text) if name.endswith(".json") else text


def artifacts_with_prefix(call: ExecutionCall, prefix: str) -> dict[str, tuple[str, Any]]:
    """``perspective -> (file name, parsed JSON)`` for every ``<prefix>_<perspective>.json``."""
    found = {}
    for name in call.artifact_names():
        match = re.fullmatch(rf"{prefix}_(.+)\.json", name)
        if match:
            found[match.group(1)] = (name, load_artifact(call, name))
    return found


async def expert_review(call: ExecutionCall) -> dict[str, Any]:
    """``expert_review``: review, evaluate or respond, by ``params.mode`` (seed 002 modes)."""
    mode = call.params["mode"]
    me = perspective_of(call.role)
    source = load_artifact(call, call.params["requirement_artifact"])
    if mode == "review":
        call.progress(10, "reviewing the requirement")
        issues = review(parse_document(source), me)
        data = {
            "expert": label_of(me),
            "perspective": me,
            "role": call.role,
            "mode": "review",
            "document": call.params["requirement_artifact"],
            "issues": issues,
            "summary": f"{len(issues)} issue(s) from the {label_of(me).lower()}'s perspective",
        }
        name, count, summary = f"review_{me}.json", len(issues), data["summary"]
        call.progress(33, "review written")
    elif mode == "evaluate":
        call.progress(40, "evaluating the other reviews")
        reviews = artifacts_with_prefix(call, "review")
        mine: dict[str, Any] = reviews.pop(me, (None, {"issues": []}))[1]
        data = evaluate(me, mine, reviews)
        name, count = f"evaluate_{me}.json", len(data["responses"])
        summary = f"{count} comment(s) on {len(reviews)} other review(s)"
        call.progress(66, "evaluation written")
    else:
        call.progress(70, "responding to the evaluations")
        mine = artifacts_with_prefix(call, "review").get(me, (None, {"issues": []}))[1]
        evaluations = [data for _, data in artifacts_with_prefix(call, "evaluate").values()]
        data = respond(me, mine, evaluations)
        name, count = f"response_{me}.json", len(data["final_issues"])
        summary = (
            f"{count} final issue(s), {len(data['withdrawn_issues'])} withdrawn, "
            f"{len(data['new_issues_from_debate'])} new from the debate"
        )
        call.progress(100, "response written")
    call.write_artifact(name, artifact_json(data))
    return {"artifact": name, "perspective": me, "summary": summary, "issue_count": count}


async def requirement_consolidation(call: ExecutionCall) -> dict[str, Any]:
    """Merge the 14 files of §6.6 into requirement_final.md and consolidation_report.json."""
    original = load_artifact(call, call.params["requirement_artifact"])
    baseline = load_artifact(call, "interview_result.json").get("baseline_statements", [])
    responses = {p: data for p, (_, data) in artifacts_with_prefix(call, "response").items()}
    call.progress(30, f"read {3 + 3 * len(responses)} files")
    final, report = consolidate(original, responses, baseline)
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
    }


async def requirement_quality_check(call: ExecutionCall) -> dict[str, Any]:
    """The §6.7 quality check of the final document; writes quality_report.json."""
    final = load_artifact(call, call.params["document_artifact"])
    original = load_artifact(call, call.params.get("original_artifact") or "requirement.md")
    result = quality_check(final, original)
    call.write_artifact("quality_report.json", artifact_json(result))
    return result


async def _step(call: ExecutionCall, step: str, invocations: list[tuple[str, dict[str, Any], str]]) -> list[Any]:
    results = await asyncio.gather(
        *(call.invoke(capability_id, params, target_role=role) for capability_id, params, role in invocations)
    )
    for (capability_id, _, role), result in zip(invocations, results, strict=True):
        if not result.success:
            error = result.error
            assert error is not None
            raise AgentFailure(
                error.code,
                f"{step}: {capability_id} on {role} failed: {error.message}",
                {"step": step, "role": role, **error.details},
                retryable=False,
            )
    return [r.data for r in results]


async def run_requirement_review(call: ExecutionCall) -> dict[str, Any]:
    """Main's orchestration of the whole review (see module docstring)."""
    text = call.params.get("input_markdown") or ""
    if not text.strip():
        raise AgentFailure(
            ErrorCode.INVALID_PARAMS,
            "the requirement document is empty",
            {"errors": [{"pointer": "/input_markdown", "message": "empty", "keyword": "minLength"}]},
            retryable=False,
        )
    document = parse_document(text)
    call.write_artifact("requirement.md", text, "text/markdown")
    baseline = [s.text for s in requirement_statements(document)]
    call.write_artifact(
        "interview_result.json",
        artifact_json(
            {
                "source": "requirement.md",
                "title": document.title,
                "baseline_statements": baseline,
                "note": "The user's explicit requirements: the highest authority when consolidating "
                "(seed 002 principle 4).",
            }
        ),
    )
    domain, norms = identify_domain(text)
    call.write_artifact(
        "domain_role.md",
        f"# Domain expert: {domain}\n\nReviews '{document.title}' for:\n" + "".join(f"- {norm}\n" for norm in norms),
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
    for percent, mode in ((10, "review"), (35, "evaluate"), (60, "respond")):
        call.progress(percent, f"{mode} by {len(reviewers)} experts")
        params = {"mode": mode, "requirement_artifact": "requirement.md"}
        await _step(call, mode, [("expert_review", params, role) for role in reviewers])
        subtasks += [{"capability_id": "expert_review", "role": role, "success": True} for role in reviewers]
    call.progress(80, "consolidating")
    (consolidation,) = await _step(
        call,
        "consolidation",
        [
            (
                "requirement_consolidation",
                {"requirement_artifact": "requirement.md", "decision_mode": "auto"},
                "consolidator",
            )
        ],
    )
    subtasks.append({"capability_id": "requirement_consolidation", "role": "consolidator", "success": True})
    call.progress(90, "quality check")
    (quality,) = await _step(
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
    call.progress(95, "saving to the project folder")
    saved = await save_final_document(call)
    call.progress(100, "done")
    failed = [c["name"] for c in quality["checks"] if not c["passed"]]
    summary = (
        f"{len(reviewers)} experts reviewed '{document.title}': {consolidation['adopted']} change(s) adopted, "
        f"{consolidation['rejected']} rejected, {consolidation['contested']} contested. Quality check "
        + ("passed. " if quality["passed"] else f"flags: {', '.join(failed)}. ")
        + saved
    )
    return {"status": "completed", "summary": summary, "subtasks": subtasks, "artifacts": call.artifact_names()}


async def save_final_document(call: ExecutionCall) -> str:
    """Main copies ``requirement_final.md`` to ``reviews/<task_id>/requirement_final.md`` in
    the project's folder (``TEAMCLAW_PROJECTS_ROOT`` or the project's working directory, inside
    main's ``file_scope``) through the ``file_write`` tool, so the tool permission matrix
    applies (PRD §4.7). Returns a sentence for the task summary; a refusal (``tool_denied``:
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
        return f"Not saved to the project folder ({failure.error.message})."
    return f"Saved to the project folder as {path}."


async def run_generic_task(call: ExecutionCall) -> dict[str, Any]:
    """A plain task: the product manager analyses it and main reports the analysis."""
    description = call.params["task_description"]
    call.progress(20, "analysis by the product manager")
    (analysis,) = await _step(call, "analysis", [("requirement_analysis", {"requirement": description}, "pm")])
    call.write_artifact("analysis.json", artifact_json(analysis))
    call.progress(100, "done")
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
    "task_orchestration": task_orchestration,
    "expert_review": expert_review,
    "requirement_consolidation": requirement_consolidation,
    "requirement_quality_check": requirement_quality_check,
}
