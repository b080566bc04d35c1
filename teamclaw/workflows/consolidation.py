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
requirements under a section; ``open_point`` and deferred issues go to the report and to an
"Open points" / "待确认事项" section of the final document. Everything added is in the
document's language. A figure an expert proposed (a target, a unit guessed for a bare
number) stays marked "(proposed, to be confirmed: …)" / "（建议值，待确认：…）" unless an
operator accepted it in confirm mode (seed 002 §6.5 req_consolidator), and the quality check
(§6.7) does not pass while proposals or open points remain.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from teamclaw.workflows.document import (
    RequirementDocument,
    Statement,
    document_language,
    parse_document,
    set_aside_lines,
)
from teamclaw.workflows.quality_engine import check_document
from teamclaw.workflows.review_rules import UNDECIDED, acceptance_criterion, review_domain, testable
from teamclaw.workflows.review_text import (
    PROPOSED,
    SECTION_TITLES,
    confirm,
    label,
    proposed,
    say,
    section_title,
    word,
)

QUANTITY = re.compile(r"\d+(?:\.\d+)?\s*(?:ms|s|seconds?|minutes?|min|hours?|MB|GB|KB|%)(?![\w])", re.IGNORECASE)

ADDED_SECTIONS = ("Acceptance criteria", "Error handling", "AI behaviour", "Privacy and compliance")
"""The sections a finding may add (canonical keys; written in the document's language)."""
ALL_SECTION_TITLES = {title for titles in SECTION_TITLES.values() for title in titles.values()}
NUMBER = re.compile(r"\d+(?:[.,]\d+)?")
COMPLIANCE = {"privacy", "compliance", "terminology", "time"} | {
    "personal_data", "notification_consent", "time_boundary", "undefined_term", "domain_rule_gap",
}  # fmt: skip
TECHNICAL = {"performance", "reliability", "integration", "units", "scalability", "evaluation", "data"} | {
    "missing_unit", "limit_without_overflow", "missing_error_handling", "integration_failure", "ai_without_evaluation",
}  # fmt: skip


def _key(issue: dict[str, Any]) -> tuple[Any, ...]:
    change = issue.get("change", {})
    line = issue.get("location", {}).get("line")
    return (line, issue.get("rule", issue["id"]), change.get("old"), change.get("section"), change.get("question"))


def _items(responses: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Final and debate-born issues of every expert, merged when they are the same finding.
    A debate-born issue is credited to the expert who raised it in the evaluate round, not to
    the expert whose response carries it."""
    merged: dict[tuple[Any, ...], dict[str, Any]] = {}
    for perspective, response in sorted(responses.items()):
        for issue in [*response.get("final_issues", []), *response.get("new_issues_from_debate", [])]:
            key = _key(issue)
            author = issue.get("raised_by_perspective") or perspective
            if key in merged:
                if author not in merged[key]["experts"]:
                    merged[key]["experts"].append(author)
                merged[key]["issue_ids"].append(issue["id"])
                continue
            merged[key] = {**issue, "experts": [author], "issue_ids": [issue["id"]], "key": key}
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


def _new_numbers(text: str, original: str) -> list[str]:
    """Numbers in ``text`` outside proposal markers that ``original`` does not contain."""
    known = set(NUMBER.findall(original))
    return [n for n in NUMBER.findall(PROPOSED.sub("", text)) if n not in known]


def _honest_replacement(old: str, new: str, original: str, language: str) -> str:
    """``new`` with any figure the user did not write marked as proposed (seed 002 principle 4):
    "fast (p95 at most 2 s)" becomes "fast (proposed, to be confirmed: p95 at most 2 s)"."""
    if not _new_numbers(new, original):
        return new
    if new.lower().startswith(old.lower()):
        return new[: len(old)] + proposed(language, PROPOSED.sub("", new[len(old) :]).strip())
    return old + proposed(language, new)


def _honest_line(line: str, original: str, language: str) -> str:
    """An added line whose unmarked figures the user never wrote becomes a proposal as a whole."""
    if not _new_numbers(line, original):
        return line
    return proposed(language, PROPOSED.sub("", line)).strip()


def _find_section(lines: list[str], key: str, language: str) -> int | None:
    titles = {key.lower(), *(t.lower() for t in SECTION_TITLES.get(key, {}).values())}
    if key == "Acceptance criteria":
        titles |= {"验收", "acceptance"}
    for index, line in enumerate(lines):
        match = re.match(r"^(#+)\s+(.*?)\s*$", line)
        if match and any(t in match.group(2).lower() for t in titles):
            return index
    return None


def added_by_review(language: str) -> str:
    """The mark after each line the review adds to the document (a new section's bullets, or
    bullets put into one of the user's sections), so that what the team wrote never reads as
    the requester's words (seed 002 principle 4: the user's requirement is the baseline).
    Open points (the operator's questions) and proposals (marked already) carry none."""
    return say(language, " _(added by the review)_", "（评审补充）")


def _append_sections(lines: list[str], additions: dict[str, list[str]], language: str) -> list[str]:
    out = list(lines)
    tail: list[str] = []
    mark = added_by_review(language)
    for section, bullets in additions.items():
        if not bullets:
            continue
        # A proposal ("proposed, to be confirmed: ...") says whose it is already.
        items = [f"- {b}" if section == "Open points" or PROPOSED.search(b) else f"- {b}{mark}" for b in bullets]
        index = _find_section(out, section, language)
        if index is None:
            tail += ["", f"## {section_title(section, language)}", "", *items]
            continue
        end = index + 1
        while end < len(out) and not re.match(r"^#+\s", out[end]):
            end += 1
        while end > index + 1 and not out[end - 1].strip():
            end -= 1
        out[end:end] = items
    while out and not out[-1].strip():
        out.pop()
    return out + tail


def candidate_id(item: dict[str, Any]) -> str:
    """A stable id for one candidate (same finding -> same id across runs): ``c-`` and ten hex
    digits of the finding's line, rule, words and section."""
    digest = hashlib.sha256(json.dumps(list(item.get("key") or _key(item)), ensure_ascii=False).encode())
    return "c-" + digest.hexdigest()[:10]


def _positions(item: dict[str, Any], responses: dict[str, dict[str, Any]], language: str) -> list[dict[str, Any]]:
    positions: list[dict[str, Any]] = []
    key = item.get("key") or _key(item)
    for perspective, response in sorted(responses.items()):
        kept = [i for i in response.get("final_issues", []) if _key(i) == key]
        new = [i for i in response.get("new_issues_from_debate", []) if _key(i) == key]
        withdrawn = [i for i in response.get("withdrawn_issues", []) if "location" in i and _key(i) == key]
        for issue in [*kept, *withdrawn]:
            positions.append(_position(perspective, "raised", issue["problem"], "review", language))
            for comment in issue.get("comments", []):
                stance = comment.get("stance", "agree")
                positions.append(
                    _position(comment.get("expert", ""), stance, comment.get("comment", ""), "evaluate", language)
                )
        for issue in kept:
            level = issue.get("consensus_level", "majority")
            positions.append(
                _position(
                    perspective,
                    "raised",
                    say(language, f"keeps it ({level})", f"坚持该意见（{word(level, language)}）"),
                    "respond",
                    language,
                )
            )
        for issue in withdrawn:
            positions.append(_position(perspective, "withdrawn", issue.get("reason", ""), "respond", language))
        for issue in new:
            author = issue.get("raised_by_perspective") or perspective
            positions.append(_position(author, "supplement", issue["problem"], "evaluate", language))
    unique: dict[tuple[str, str, str, str], dict[str, Any]] = {}
    for position in positions:  # the same comment from the same expert and round is shown once
        unique.setdefault((position["expert"], position["stance"], position["comment"], position["round"]), position)
    return list(unique.values())


def _position(expert: str, stance: str, comment: str, round_: str, language: str) -> dict[str, Any]:
    return {"expert": expert, "label": label(expert, language), "stance": stance, "comment": comment, "round": round_}


def _proposal(item: dict[str, Any], lines: list[str], language: str) -> str:
    change = item.get("change", {})
    action = change.get("action")
    number = item["location"].get("line")
    if action in ("replace", "scope_reduction") and number and number <= len(lines):
        return _replace_once(lines[number - 1], change.get("old", ""), change.get("new", "")) or change.get("new", "")
    if action == "append_section":
        bullets = list(change.get("lines", []))
        if change.get("criteria"):
            bullets += [acceptance_criterion(_text_of(lines, n), language) for n in change.get("from_lines", [])]
        return "\n".join(bullets)
    return change.get("question") or item["problem"]


def _text_of(lines: list[str], number: int) -> str:
    return re.sub(r"^\s*(?:[-*+]|\d+[.)])\s+", "", lines[number - 1]).strip() if number <= len(lines) else ""


def _kind(item: dict[str, Any]) -> str:
    if item.get("consensus_level") == "contested":
        return "contested"
    return "open_point" if item.get("change", {}).get("action") == "open_point" else "change"


def candidate_decisions(
    original: str, responses: dict[str, dict[str, Any]], baseline: list[str]
) -> list[dict[str, Any]]:
    """What confirm mode puts to the operator (seed 002 §6.5 req_consolidator, 用户确认模式):
    every candidate change, open point and contested point as ``{"id", "kind"
    ("change"|"contested"|"open_point"), "summary", "category", "severity", "line", "quote",
    "proposal", "auto_decision" {"decision", "rule", "reasoning"}, "positions" [{"expert",
    "label", "stance", "comment", "round"}]}``, in the document's language. A rule-3 change
    (scope reduction) is listed too, its summary saying it goes against the user's requirement."""
    language = document_language(original)
    lines = original.splitlines()
    out = []
    for item in _items(responses):
        decision, rule, reasoning = decide(item)
        proposal = _proposal(item, lines, language)
        line = item["location"].get("line")
        where = say(language, f" (line {line})", f"（第 {line} 行）") if line else ""
        who = say(language, ", ", "、").join(label(p, language) for p in item["experts"])
        summary = f"{who}{say(language, ': ', '：')}{item['problem']}{where}"
        if rule == "rule_3_forbidden":
            summary += say(
                language,
                " This goes against the user's original requirement (merge rule 3).",
                "此项与用户的原始需求相悖（合并规则 3：禁止采纳）。",
            )
        out.append(
            {
                "id": candidate_id(item),
                "kind": _kind(item),
                "summary": summary,
                "category": item["category"],
                "severity": item.get("severity"),
                "line": line,
                "quote": item.get("quote") or (_text_of(lines, line) if line else ""),
                "proposal": proposal,
                "auto_decision": {"decision": decision, "rule": rule, "reasoning": reasoning},
                "positions": _positions(item, responses, language),
            }
        )
    return out


def _apply(
    item: dict[str, Any],
    lines: list[str],
    additions: dict[str, list[str]],
    deferred_lines: list[tuple[list[str], dict[str, Any], bool]],
    original: str,
    language: str,
    *,
    confirmed: bool,
) -> bool:
    """Write one adopted change into ``lines`` / ``additions``; True when it was applied.
    Unconfirmed figures are marked as proposed."""
    change = item.get("change", {})
    action = change.get("action")
    applied = False
    if action in ("replace", "scope_reduction") and item["location"].get("line"):
        number = item["location"]["line"]
        new = change.get("new", "")
        new = confirm(new) if confirmed else _honest_replacement(change.get("old", ""), new, original, language)
        updated = _replace_once(lines[number - 1], change["old"], new) if number <= len(lines) else None
        if updated is not None:
            lines[number - 1] = updated
            applied = True
    elif action == "append_section":
        bucket = additions.setdefault(change["section"], [])
        if change.get("from_lines"):
            deferred_lines.append((bucket, change, confirmed))
        for bullet in change.get("lines", []):
            bullet = confirm(bullet) if confirmed else _honest_line(bullet, original, language)
            if bullet not in bucket:
                bucket.append(bullet)
        applied = True
    return applied


def _decision(item: dict[str, Any], operator: str | None, language: str) -> tuple[str, str, str]:
    """The merge rule's decision, or the operator's when confirm mode decided this candidate."""
    if operator is None:
        return decide(item)
    accepted = operator == "accept"
    reasoning = say(language, f"The operator chose to {operator}.", f"操作员选择{'采纳' if accepted else '不采纳'}。")
    if item.get("change", {}).get("action") == "open_point":
        return ("open_point" if accepted else "rejected"), "operator", reasoning
    return ("adopted" if accepted else "rejected"), "operator", reasoning


def consolidate(
    original: str,
    responses: dict[str, dict[str, Any]],
    baseline: list[str],
    *,
    operator_decisions: dict[str, str] | None = None,
    decided_by: str = "",
) -> tuple[str, dict[str, Any]]:
    """``(requirement_final.md, consolidation_report)`` from the experts' final positions
    (seed 002 §6.6). ``operator_decisions=None``: auto mode (req_auto_consolidator, the merge
    rules above). Otherwise confirm mode (§6.5 req_consolidator): a candidate whose id
    (``candidate_decisions``) maps to "accept" is applied and to "reject" is not, whatever
    the rule says; candidates the operator did not decide follow the rules. Each decision
    records ``id`` and ``decided_by`` ("rules" or "operator:<decided_by>"). The report has
    ``decision_mode``, ``language``, ``baseline_statements``, ``counts``, ``decisions``,
    ``open_points`` and ``added_sections`` (their titles in the document's language)."""
    language = document_language(original)
    confirm_mode = operator_decisions is not None
    choices = operator_decisions or {}
    lines = original.splitlines()
    additions: dict[str, list[str]] = {}
    deferred_lines: list[tuple[list[str], dict[str, Any], bool]] = []
    decisions, open_points = [], []
    counts = {"adopted": 0, "rejected": 0, "deferred": 0, "open_point": 0}
    contested = 0
    for item in _items(responses):
        ident = candidate_id(item)
        operator = choices.get(ident) if confirm_mode else None
        decision, rule, reasoning = _decision(item, operator, language)
        change = item.get("change", {})
        contested += item.get("consensus_level") == "contested"
        applied = False
        confirmed = operator == "accept"
        if decision == "adopted":
            applied = _apply(item, lines, additions, deferred_lines, original, language, confirmed=confirmed)
        if decision in ("open_point", "deferred"):
            open_points.append(
                {
                    "id": ident,
                    "issue_ids": item["issue_ids"],
                    "question": change.get("question") or item["problem"],
                    "line": item["location"].get("line"),
                }
            )
            applied = True
        counts[decision] += 1
        decisions.append(
            {
                "id": ident,
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
                "decided_by": f"operator:{decided_by}" if operator is not None else "rules",
            }
        )
    for bucket, change, confirmed in deferred_lines:  # criteria read the lines as they are now
        for number in change["from_lines"]:
            text = _text_of(lines, number)
            if not text:
                continue
            bullet = acceptance_criterion(text if not confirmed else confirm(text), language)
            if bullet not in bucket:
                bucket.append(bullet)
    if open_points:
        bucket = additions.setdefault("Open points", [])
        for point in open_points:
            where = say(language, f" (line {point['line']})", f"（第 {point['line']} 行）") if point["line"] else ""
            entry = f"{point['question']}{where}"
            if entry not in bucket:
                bucket.append(entry)
    final_lines = _append_sections(lines, additions, language)
    final = "\n".join(final_lines).rstrip() + "\n"
    report = {
        "decision_mode": "confirm" if confirm_mode else "auto",
        "language": language,
        "baseline_statements": baseline,
        "counts": {**counts, "contested": contested},
        "decisions": decisions,
        "open_points": open_points,
        "added_sections": [section_title(s, language) for s, bullets in additions.items() if bullets],
    }
    return final, report


def _open_section(doc_titles: list[str]) -> set[str]:
    return {t for t in doc_titles if t in (SECTION_TITLES["Open points"]["en"], SECTION_TITLES["Open points"]["zh"])}


CLARITY_CATEGORIES = ("vague_term", "absolute", "escape_clause", "untestable", "contradiction")
"""The engine's categories the quality check reports on the final document (seed 002 §6.7:
objective, declarative, no contradictions; docs/review-rules.md)."""


def _clarity_check(document: RequirementDocument, statements: list[Statement], language: str) -> dict[str, Any]:
    """The ``clarity`` check: each engine finding of ``CLARITY_CATEGORIES`` on a requirement
    line of the final ``document`` that carries no proposal awaiting confirmation (those are
    listed as unresolved already), as "line N: “quote”: message" in ``language``."""
    lines = {s.number for s in statements if not PROPOSED.search(s.text)}
    findings = [
        say(language, f"line {f.line}: '{f.quote}': {f.message}", f"第 {f.line} 行：“{f.quote}”：{f.message}")
        for f in check_document(document, categories=CLARITY_CATEGORIES)
        if f.line in lines
    ]
    return {"name": "clarity", "passed": not findings, "findings": findings}


def quality_check(final: str, original: str) -> dict[str, Any]:
    """The §6.7 review_report checks on ``final``: structure, objectivity, consistency,
    closure (testable acceptance criteria), completeness and ``unresolved`` (open points and
    proposed figures still awaiting confirmation); ``passed`` only when all pass. Returns
    ``{"passed", "checks": [{"name", "passed", "findings"}], "unresolved": [str]}``, findings
    in the document's language."""
    language = document_language(original or final)
    final_doc, original_doc = parse_document(final), parse_document(original)
    open_titles = _open_section(final_doc.section_titles())
    aside = set_aside_lines(final_doc)  # the interview's clarifications log is no requirement
    statements = [s for s in final_doc.statements if s.section not in open_titles and s.number not in aside]
    checks = []

    def line_of(number: int) -> str:
        return say(language, f"line {number}", f"第 {number} 行")

    def lines_of(numbers: list[int]) -> str:
        if len(numbers) == 1:
            return line_of(numbers[0])
        return say(language, f"lines {', '.join(map(str, numbers))}", f"第 {'、'.join(map(str, numbers))} 行")

    original_titles = original_doc.section_titles()
    final_titles = final_doc.section_titles()
    findings = [
        say(language, f"section '{t}' of the original is missing", f"原文的章节“{t}”缺失")
        for t in original_titles
        if t not in final_titles
    ]
    extra = [t for t in final_titles if t not in original_titles and t not in ALL_SECTION_TITLES]
    findings += [say(language, f"unexpected section '{t}'", f"多余的章节“{t}”") for t in extra]
    kept = [t for t in final_titles if t in original_titles]
    if kept != [t for t in original_titles if t in kept]:
        findings.append(say(language, "the original sections are out of order", "原文章节的顺序被打乱"))
    checks.append({"name": "structure", "passed": not findings, "findings": findings})

    markers = re.compile(r"\b(?:I think|we suggest|reviewer|review comment|in my opinion)\b|建议|评审意见|讨论", re.I)
    findings = [
        say(
            language,
            f"{line_of(s.number)}: '{s.text[:80]}' reads as discussion, not as a requirement",
            f"{line_of(s.number)}：“{s.text[:80]}”是讨论性表述，不是需求陈述",
        )
        for s in statements
        if markers.search(PROPOSED.sub("", s.text)) or PROPOSED.sub("", s.text).rstrip().endswith(("?", "？"))
    ]
    checks.append({"name": "objectivity", "passed": not findings, "findings": findings})
    checks.append(_clarity_check(final_doc, statements, language))

    targets: dict[str, set[str]] = {}
    for statement in statements:
        for key in ("response time", "load time", "latency", "timeout", "upload limit", "响应时间", "加载时间", "超时"):
            if key in statement.text.lower():
                for value in QUANTITY.findall(PROPOSED.sub("", statement.text)):
                    targets.setdefault(key, set()).add(re.sub(r"\s+", " ", value.strip()))
    findings = [
        say(
            language,
            f"'{key}' has different targets: {', '.join(sorted(values))}",
            f"“{key}”有不同的目标值：{'、'.join(sorted(values))}",
        )
        for key, values in targets.items()
        if len(values) > 1
    ]
    checks.append({"name": "consistency", "passed": not findings, "findings": findings})

    criteria_heading = next(
        (i for i, (_, t, _) in enumerate(final_doc.headings) if "acceptance" in t.lower() or "验收" in t), None
    )
    if criteria_heading is None:
        findings = [say(language, "there are no acceptance criteria", "没有验收标准")]
    else:
        title = final_doc.headings[criteria_heading][1]
        criteria = [s for s in statements if s.section == title]
        findings = [] if criteria else [say(language, "the acceptance criteria are empty", "验收标准为空")]
        findings += [
            say(
                language,
                f"{line_of(s.number)}: acceptance criterion '{s.text[:80]}' is not testable",
                f"{line_of(s.number)}：验收标准“{s.text[:80]}”不可测试",
            )
            for s in criteria
            if not testable(s.text)
        ]
    checks.append({"name": "closure", "passed": not findings, "findings": findings})

    findings = [
        say(
            language,
            f"{line_of(s.number)}: undecided ('{m.group(0)}')",
            f"{line_of(s.number)}：悬而未决（“{m.group(0)}”）",
        )
        for s in statements
        if (m := UNDECIDED.search(PROPOSED.sub("", s.text)))
    ]
    findings += [
        say(language, f"'{f.change['term']}' is still undefined", f"“{f.change['term']}”仍未定义")
        for f in review_domain(final_doc)
        if f.rule == "undefined_term"
    ]
    checks.append({"name": "completeness", "passed": not findings, "findings": findings})

    proposals: dict[str, list[int]] = {}  # the same proposal is one item, with every line it is on
    for s in final_doc.statements:
        for m in PROPOSED.finditer(s.text):
            numbers = proposals.setdefault(m.group(0).strip(), [])
            if s.number not in numbers:
                numbers.append(s.number)
    unresolved = [
        say(
            language,
            f"{lines_of(numbers)}: proposed, not confirmed: {text}",
            f"{lines_of(numbers)}：建议值未确认：{text}",
        )
        for text, numbers in proposals.items()
    ]
    unresolved += [
        say(language, f"open point: {text}", f"待确认：{text}")
        for text in dict.fromkeys(s.text for s in final_doc.statements if s.section in open_titles)
    ]
    checks.append({"name": "unresolved", "passed": not unresolved, "findings": unresolved})

    return {"passed": all(c["passed"] for c in checks), "checks": checks, "unresolved": unresolved}
