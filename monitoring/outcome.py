"""What came of a requirement_review task (seed 002), for the API, the task page and the
tasks list: the phase it is in, and its outcome (``outcome.json``, written by main at the
end: adopted / rejected / contested counts, the quality check with its findings, whether
the copy was saved, warnings)."""

from __future__ import annotations

import json
from typing import Any

from monitoring.models import Artifact, OpenPointAnswer, Task, ToolConfirmation
from teamclaw.workflows.open_point_folds import fold, interview_points, review_points
from teamclaw.workflows.revision import REVISION_NAME, answer_findings, report_name

PHASES = {
    "project_type": "interview",
    "interview": "interview",
    "next_action": "draft",
    "decisions": "decisions",
}
"""The phase a task waiting for an operator is in, by what it waits for."""
OPEN_POINT_FINDINGS = ("open point: ", "待确认：")
"""How the quality check's ``unresolved`` findings start when they repeat an open point
(``teamclaw.workflows.consolidation.quality_check``), in English and in Chinese: the
outcome lists those as open points to answer, not again as what the check wants."""


def _artifact_json(task: Task, name: str) -> Any:
    content = Artifact.objects.filter(task_id=task.id, name=name).values_list("content", flat=True).first()
    if content is None:
        return None
    try:
        return json.loads(content)
    except ValueError:
        return None


def verdict(outcome: dict[str, Any]) -> str:
    """An ``outcome.json``'s verdict: ``clean``, ``findings`` or ``draft_only`` (see ``task_outcome``)."""
    if outcome.get("phase") == "draft":
        return "draft_only"
    return "clean" if outcome.get("clean") else "findings"


def verdicts(task_ids: list[str]) -> dict[str, str]:
    """``{task id: verdict}`` of those tasks that have an outcome (one query), for lists."""
    out = {}
    for task_id, content in Artifact.objects.filter(task_id__in=task_ids, name="outcome.json").values_list(
        "task_id", "content"
    ):
        try:
            outcome = json.loads(content)
        except ValueError:
            continue
        if isinstance(outcome, dict):
            out[task_id] = verdict(outcome)
    return out


def task_outcome(task: Task) -> dict[str, Any] | None:
    """The task's ``outcome.json`` with ``verdict``: ``clean`` (quality check passed, no
    warnings), ``findings`` (the check flagged something or there were warnings),
    ``draft_only`` (ended at phase 5); None before main wrote it (or for other workflows)."""
    outcome = _artifact_json(task, "outcome.json")
    if not isinstance(outcome, dict):
        return None
    return {**outcome, "verdict": verdict(outcome)}


def task_phase(task: Task) -> str:
    """``interview`` (phases 1-4), ``draft`` (phase 5), ``review`` (phase 6), ``decisions``
    (6.5, confirm mode), ``done`` or ``ended`` (failed or cancelled): what the task is at now."""
    if task.status in ("failed", "terminated", "cancelled"):
        return "ended"
    if task.status == "completed":
        return "done"
    waiting = (
        ToolConfirmation.objects.filter(task_id=task.id, kind="input", status="pending")
        .order_by("-created_at")
        .values_list("tool", flat=True)
        .first()
    )
    if waiting:
        return PHASES.get(waiting, "review")
    names = set(Artifact.objects.filter(task_id=task.id).values_list("name", flat=True))
    start_at = (task.run_spec or {}).get("params", {}).get("start_at")
    if any(name.startswith("review_") for name in names) or "domain_role.md" in names:
        return "review"
    if start_at == "interview":
        return "draft" if "requirement.md" in names else "interview"
    return "draft" if start_at == "draft" else "review"


def waiting_for_operator(task_ids: list[str]) -> set[str]:
    """Those of ``task_ids`` that wait for an operator now (a question, a decision, a choice
    or a tool confirmation), for the lists' "waiting for you" badge."""
    return set(
        ToolConfirmation.objects.filter(task_id__in=task_ids, status="pending").values_list("task_id", flat=True)
    )


def _points_language(report: Any, interview: Any) -> str:
    """The document's language ("zh" or "en") from the consolidation report or the interview."""
    for artifact in (report, interview):
        if isinstance(artifact, dict) and artifact.get("language") in ("en", "zh"):
            return str(artifact["language"])
    return "en"


def still_open(point: dict[str, Any]) -> bool:
    """An open point without an answer, or whose answer the engine still finds unclear."""
    return not point["answer"] or bool(point.get("unclear"))


def open_points(task: Task) -> list[dict[str, Any]]:
    """What a finished review leaves for its operator to answer, in the document's language:
    the consolidation report's open points, then the interview's questions left empty, as
    ``[{id, question, line, source: "review"|"interview", answer, answered_by, answered_at,
    earlier}]``, those that ask the same thing folded into one (``open_point_folds.fold``:
    with ``ids``, ``lines``, ``sources``, ``questions``, ``members``); ``answer`` is the
    newest ``OpenPointAnswer`` given to any of ``ids`` (None while unanswered) and
    ``earlier`` how many answers it replaced; ``unclear`` what the requirement-quality engine
    still finds in that answer (``revision.answer_findings``: ``[{category, quote,
    message}]``; a vague "要快一点" keeps its point open). ``[]`` for a task without those
    artifacts."""
    report = _artifact_json(task, "consolidation_report.json")
    interview = _artifact_json(task, "interview_result.json")
    points = fold(review_points(report) + interview_points(interview))
    answers: dict[str, list[OpenPointAnswer]] = {}
    for row in OpenPointAnswer.objects.filter(task_id=task.id).select_related("answered_by"):
        answers.setdefault(row.point_id, []).append(row)  # newest first (Meta.ordering)
    language = _points_language(report, interview)
    for point in points:
        # a folded point's answer is the newest given to any of the points it folds
        rows = sorted((r for i in point["ids"] for r in answers.get(i, [])), key=lambda r: r.answered_at, reverse=True)
        newest = rows[0] if rows else None
        point["answer"] = newest.answer if newest else None
        point["unclear"] = answer_findings(newest.answer, language) if newest else []
        point["answered_by"] = newest.answered_by.get_username() if newest and newest.answered_by else ""
        point["answered_at"] = newest.answered_at if newest else None
        point["earlier"] = max(len(rows) - 1, 0)
    return points


def latest_quality(outcome: dict[str, Any], revisions: list[dict[str, Any]]) -> tuple[dict[str, Any], int]:
    """The quality check that holds now and the version it refers to: the re-check of the
    newest revision of the final document that carries one (``revision.r<N>.json``
    ``quality``, ``runs.open_points.recheck``), else ``outcome.json``'s (version 0: the
    final document as the review wrote it). Shape: ``({passed, failed_checks, findings}, N)``."""
    for revision in reversed(revisions):
        if isinstance(revision.get("quality"), dict):
            return revision["quality"], revision["version"]
    return outcome.get("quality") or {}, 0


def group_by_line(points: list[dict[str, Any]], document: str) -> list[dict[str, Any]]:
    """The open points grouped by the requirement line they are about, so a short document's
    many questions read as one entry a line: ``[{line, text, points, left}]`` in line order,
    ``text`` the line of ``document`` (the final document, Markdown list marker removed; "" if
    out of range), ``left`` how many of its points are unanswered; the points without a line
    (whole document, interview) last, as one group with ``line`` None. Every point is in
    exactly one group, in its original order within the group."""
    lines = document.splitlines()
    groups: dict[int | None, list[dict[str, Any]]] = {}
    for point in points:
        line = point.get("line") if isinstance(point.get("line"), int) else None
        groups.setdefault(line, []).append(point)
    ordered = sorted(groups.items(), key=lambda item: (item[0] is None, item[0] or 0))
    return [
        {
            "line": line,
            "text": lines[line - 1].strip().lstrip("-*+ ").strip() if line and 0 < line <= len(lines) else "",
            "points": members,
            "left": sum(1 for p in members if not p.get("answer")),
        }
        for line, members in ordered
    ]


def quality_wants(outcome: dict[str, Any]) -> list[str]:
    """The quality check's findings an operator still has to settle besides the open points
    (vague words, open lists, undefined terms...): ``outcome.quality.findings``
    without those that repeat an open point (``OPEN_POINT_FINDINGS``)."""
    quality = outcome.get("quality") or {}
    findings = quality.get("findings") or []
    return [str(f) for f in findings if not str(f).startswith(OPEN_POINT_FINDINGS)]


def outcome_panel(outcome: dict[str, Any] | None, task: Task, *, can_operate: bool) -> dict[str, Any]:
    """What the task page's Outcome panel shows besides ``outcome`` itself: ``open_points``
    (``open_points``) and ``open_point_groups`` (the same points by line, ``group_by_line``),
    ``open_points_left`` (how many are unanswered or answered unclearly), ``quality_wants``,
    ``quality_passed`` (the names of the checks that passed), ``outcome_language`` (the
    document's, for ``lang``), ``can_answer`` (the operator may act on the task),
    ``revisions`` (``final_revisions``), ``answered`` (how many points have an answer), and
    ``quality_now`` / ``quality_version``: the quality check of the newest revised version
    (``latest_quality``; 0 for the final document as reviewed), which ``quality_wants`` lists."""
    if not outcome or outcome.get("phase") != "review":
        return {}
    points = open_points(task)
    revisions = final_revisions(task)
    current, version = latest_quality(outcome, revisions)
    quality = _artifact_json(task, "quality_report.json")
    checks = quality.get("checks", []) if isinstance(quality, dict) else []
    report = _artifact_json(task, "consolidation_report.json")
    language = report.get("language") if isinstance(report, dict) else None
    final = Artifact.objects.filter(task_id=task.id, name="requirement_final.md").values_list("content", flat=True)
    return {
        "open_points": points,
        "open_point_groups": group_by_line(points, final.first() or ""),
        "open_points_left": sum(1 for p in points if still_open(p)),
        "quality_wants": quality_wants({"quality": current}),
        "quality_now": current,
        "quality_version": version,
        "quality_passed": [c.get("name") for c in checks if isinstance(c, dict) and c.get("passed")],
        "outcome_language": "zh-Hans" if language == "zh" else "en",
        "can_answer": can_operate,
        "revisions": revisions,
        "answered": sum(1 for p in points if p["answer"]),
    }


def revision_summary(task: Task, name: str) -> dict[str, Any] | None:
    """What a revision of the final document did, as the operator reads it, for the diff of
    ``requirement_final.md`` with ``name``: ``{version, in_place, in_section, resolved,
    still_unclear, unanswered}`` (answers written into their line, answers in the answers'
    section, and the counts of open points of ``revision.r<N>.json``); None when ``name`` is no
    revision of this task."""
    revision = next((r for r in final_revisions(task) if r["name"] == name), None)
    if revision is None:
        return None
    placed = [a.get("placed") for a in revision["answers"] if isinstance(a, dict)]
    keys = ("version", "resolved", "still_unclear", "unanswered")
    return {key: revision[key] for key in keys} | {
        "in_place": placed.count("line"),
        "in_section": placed.count("section"),
    }


def final_revisions(task: Task) -> list[dict[str, Any]]:
    """The revisions of ``requirement_final.md`` an operator's answers produced
    (``runs.open_points.revise_final_document``), oldest first: ``[{version, name,
    report_name, created_at, resolved, still_unclear, unanswered, answers, quality}]`` (the
    counts, answers and re-check (None before it was kept) of ``revision.r<N>.json``;
    ``teamclaw.workflows.revision``). ``[]`` for none."""
    rows = Artifact.objects.filter(task_id=task.id, name__startswith="requirement_final.r").values_list(
        "name", "created_at"
    )
    found = []
    for name, created_at in rows:
        matched = REVISION_NAME.match(name)
        if not matched:
            continue
        version = int(matched.group(1))
        report = _artifact_json(task, report_name(version))
        report = report if isinstance(report, dict) else {}
        found.append(
            {
                "version": version,
                "name": name,
                "report_name": report_name(version),
                "based_on": report.get("based_on", "requirement_final.md"),
                "created_at": created_at,
                "resolved": report.get("resolved", 0),
                "still_unclear": report.get("still_unclear", 0),
                "unanswered": report.get("unanswered", 0),
                "answers": report.get("answers", []),
                "quality": report.get("quality"),
            }
        )
    return sorted(found, key=lambda r: r["version"])
