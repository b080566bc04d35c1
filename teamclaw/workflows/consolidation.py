"""Consolidation (seed 002 §6.6, req_auto_consolidator) and the quality check (§6.7, review_report).

Merge rules applied to every final issue, in this order:

1. A change that drops or weakens what the user asked for (``scope_reduction``) is never
   adopted, even if every expert agrees (rule 3, 禁止采纳).
2. A change that rewrites the user's own wording into something stricter is adopted only
   when the experts are unanimous (rule 2, 谨慎采纳).
3. Otherwise unanimous and majority issues are adopted (rule 1, 可以采纳); contested ones are
   settled by the arbitration order compliance > technical feasibility > user value, and
   what remains is deferred to the user.

Adopted ``replace`` changes rewrite words in the user's line; ``append_section`` changes add
requirements under a section; ``open_point`` issues go to the report for the requirement
owner. The final document keeps the user's text and structure and carries no review notes.
"""

from __future__ import annotations

import re
from typing import Any

from teamclaw.workflows.document import parse_document
from teamclaw.workflows.review_rules import UNDECIDED, review_domain

QUANTITY = re.compile(r"\d+(?:\.\d+)?\s*(?:ms|s|seconds?|minutes?|min|hours?|MB|GB|KB|%)(?![\w])", re.IGNORECASE)

ADDED_SECTIONS = ("Acceptance criteria", "Error handling", "AI behaviour", "Privacy and compliance")
COMPLIANCE = {"privacy", "compliance", "terminology", "time"}
TECHNICAL = {"performance", "reliability", "integration", "units", "scalability", "evaluation", "data"}


def _items(responses: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Final and debate-born issues of every expert, merged when they are the same finding."""
    merged: dict[tuple[Any, ...], dict[str, Any]] = {}
    for perspective, response in sorted(responses.items()):
        for issue in [*response.get("final_issues", []), *response.get("new_issues_from_debate", [])]:
            change = issue.get("change", {})
            key = (
                issue["location"].get("line"),
                issue.get("rule", issue["id"]),
                change.get("old"),
                change.get("section"),
            )
            if key in merged:
                merged[key]["experts"].append(perspective)
                merged[key]["issue_ids"].append(issue["id"])
                continue
            merged[key] = {**issue, "experts": [perspective], "issue_ids": [issue["id"]]}
    return list(merged.values())


def decide(item: dict[str, Any]) -> tuple[str, str, str]:
    """``(decision, rule, reasoning)`` for one issue under the merge rules above."""
    change = item.get("change", {})
    level = item.get("consensus_level", "majority")
    if change.get("action") == "scope_reduction":
        return (
            "rejected",
            "rule_3_forbidden",
            "It would drop or weaken what the user explicitly asked for; the original requirement wins.",
        )
    if change.get("strengthens"):
        if level == "unanimous":
            return "adopted", "rule_2_cautious", "It changes the user's wording, but every expert agreed."
        return ("rejected", "rule_2_cautious", "It changes the user's wording and the experts were not unanimous.")
    if change.get("action") == "open_point":
        return "open_point", "owner_decision", "Only the requirement owner can answer this."
    if level in ("unanimous", "majority"):
        return "adopted", "rule_1_optimise", f"It refines the requirement ({level} consensus)."
    if item["category"] in COMPLIANCE:
        return "adopted", "arbitration_compliance", "Contested; compliance comes first in arbitration."
    if item["category"] in TECHNICAL:
        return "adopted", "arbitration_feasibility", "Contested; technical feasibility comes next in arbitration."
    return "deferred", "arbitration_user", "Contested and not settled by arbitration; the user decides."


def _replace_once(line: str, old: str, new: str) -> str | None:
    if new in line:
        return None
    pattern = re.escape(old)
    if old.isascii() and old[:1].isalnum():
        pattern = r"(?<![\w-])" + pattern + r"(?![\w-])"
    updated, count = re.subn(pattern, new.replace("\\", "\\\\"), line, count=1, flags=re.IGNORECASE)
    return updated if count else None


def _append_sections(lines: list[str], additions: dict[str, list[str]]) -> list[str]:
    headings = {
        m.group(2).strip().lower(): i for i, line in enumerate(lines) if (m := re.match(r"^(#+)\s+(.*)$", line))
    }
    out = list(lines)
    tail: list[str] = []
    for section, bullets in additions.items():
        index = headings.get(section.lower())
        if index is None:
            tail += ["", f"## {section}", "", *[f"- {b}" for b in bullets]]
            continue
        end = index + 1
        while end < len(out) and not re.match(r"^#+\s", out[end]):
            end += 1
        while end > index + 1 and not out[end - 1].strip():
            end -= 1
        out[end:end] = [f"- {b}" for b in bullets]
    while out and not out[-1].strip():
        out.pop()
    return out + tail


def consolidate(original: str, responses: dict[str, dict[str, Any]], baseline: list[str]) -> tuple[str, dict[str, Any]]:
    """``(requirement_final.md, consolidation_report)`` from the experts' final positions."""
    lines = original.splitlines()
    additions: dict[str, list[str]] = {}
    deferred_lines: list[tuple[list[str], dict[str, Any]]] = []
    decisions, open_points = [], []
    counts = {"adopted": 0, "rejected": 0, "deferred": 0, "open_point": 0}
    contested = 0
    for item in _items(responses):
        decision, rule, reasoning = decide(item)
        contested += item.get("consensus_level") == "contested"
        change = item.get("change", {})
        applied = False
        if decision == "adopted":
            if change.get("action") == "replace" and item["location"].get("line"):
                number = item["location"]["line"]
                updated = (
                    _replace_once(lines[number - 1], change["old"], change["new"]) if number <= len(lines) else None
                )
                if updated is not None:
                    lines[number - 1] = updated
                    applied = True
            elif change.get("action") == "append_section":
                bucket = additions.setdefault(change["section"], [])
                bullets = list(change.get("lines", []))
                if change.get("from_lines"):
                    deferred_lines.append((bucket, change))
                for bullet in bullets:
                    if bullet not in bucket:
                        bucket.append(bullet)
                applied = True
        if decision in ("open_point", "deferred"):
            open_points.append(
                {
                    "issue_ids": item["issue_ids"],
                    "question": change.get("question") or item["problem"],
                    "line": item["location"].get("line"),
                }
            )
        counts[decision] += 1
        decisions.append(
            {
                "issue_ids": item["issue_ids"],
                "experts": item["experts"],
                "category": item["category"],
                "severity": item.get("severity"),
                "line": item["location"].get("line"),
                "problem": item["problem"],
                "consensus_level": item.get("consensus_level"),
                "decision": decision,
                "rule": rule,
                "reasoning": reasoning,
                "applied": applied,
            }
        )
    for bucket, change in deferred_lines:  # criteria quote the lines as they read now
        for number in change["from_lines"]:
            if number <= len(lines):
                text = re.sub(r"^\s*(?:[-*+]|\d+[.)])\s+", "", lines[number - 1]).strip()
                bullet = change.get("line_format", "{text}").format(text=text)
                if text and bullet not in bucket:
                    bucket.append(bullet)
    final_lines = _append_sections(lines, additions)
    final = "\n".join(final_lines).rstrip() + "\n"
    report = {
        "decision_mode": "auto",
        "baseline_statements": baseline,
        "counts": {**counts, "contested": contested},
        "decisions": decisions,
        "open_points": open_points,
        "added_sections": list(additions),
    }
    return final, report


def quality_check(final: str, original: str) -> dict[str, Any]:
    """The §6.7 review_report checks on ``final``: structure, objectivity, consistency,
    closure and business completeness; ``passed`` only when all pass."""
    final_doc, original_doc = parse_document(final), parse_document(original)
    checks = []

    original_titles = original_doc.section_titles()
    final_titles = final_doc.section_titles()
    findings = [f"section '{t}' of the original is missing" for t in original_titles if t not in final_titles]
    extra = [t for t in final_titles if t not in original_titles and t not in ADDED_SECTIONS]
    findings += [f"unexpected section '{t}'" for t in extra]
    kept = [t for t in final_titles if t in original_titles]
    if kept != [t for t in original_titles if t in kept]:
        findings.append("the original sections are out of order")
    checks.append({"name": "structure", "passed": not findings, "findings": findings})

    markers = re.compile(r"\b(?:I think|we suggest|reviewer|review comment|in my opinion)\b|建议|评审意见|讨论", re.I)
    findings = [
        f"line {s.number}: '{s.text[:80]}' reads as discussion, not as a requirement"
        for s in final_doc.statements
        if markers.search(s.text) or s.text.endswith("?")
    ]
    checks.append({"name": "objectivity", "passed": not findings, "findings": findings})

    targets: dict[str, set[str]] = {}
    for statement in final_doc.statements:
        for key in ("response time", "load time", "latency", "timeout", "upload limit"):
            if key in statement.text.lower():
                for value in QUANTITY.findall(statement.text):
                    targets.setdefault(key, set()).add(re.sub(r"\s+", " ", value.strip()))
    findings = [
        f"'{key}' has different targets: {', '.join(sorted(values))}"
        for key, values in targets.items()
        if len(values) > 1
    ]
    checks.append({"name": "consistency", "passed": not findings, "findings": findings})

    criteria_heading = next(
        (i for i, (_, t, _) in enumerate(final_doc.headings) if "acceptance" in t.lower() or "验收" in t), None
    )
    if criteria_heading is None:
        findings = ["there are no acceptance criteria"]
    else:
        title = final_doc.headings[criteria_heading][1]
        findings = (
            [] if any(s.section == title for s in final_doc.statements) else ["the acceptance criteria are empty"]
        )
    checks.append({"name": "closure", "passed": not findings, "findings": findings})

    findings = [
        f"line {s.number}: undecided ('{UNDECIDED.search(s.text).group(0)}')"  # type: ignore[union-attr]
        for s in final_doc.statements
        if UNDECIDED.search(s.text)
    ]
    findings += [
        f"'{f.change['term']}' is still undefined" for f in review_domain(final_doc) if f.rule == "undefined_term"
    ]
    checks.append({"name": "completeness", "passed": not findings, "findings": findings})

    return {"passed": all(c["passed"] for c in checks), "checks": checks}
