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
from dataclasses import dataclass, field
from typing import Any

from teamclaw.workflows.document import (
    RequirementDocument,
    Statement,
    document_language,
    parse_document,
    set_aside_lines,
)
from teamclaw.workflows.open_point_folds import fold, where
from teamclaw.workflows.quality_engine import check_document
from teamclaw.workflows.review_findings import clip, q
from teamclaw.workflows.review_rules import UNDECIDED, acceptance_criterion, testable
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
COMPLIANCE = {"personal_data", "notification_consent", "time_boundary", "undefined_term", "domain_rule_gap"}
"""Taxonomy categories that arbitration settles first (compliance, seed 002 §6.6)."""
TECHNICAL = {"missing_unit", "limit_without_overflow", "missing_error_handling", "integration_failure",
             "ai_without_evaluation"}  # fmt: skip
"""Taxonomy categories that arbitration settles next (technical feasibility)."""


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


def _action(item: dict[str, Any]) -> str:
    return str(item.get("change", {}).get("action", ""))


def _level(item: dict[str, Any]) -> str:
    return str(item.get("consensus_level") or "single")


DECISION_RULES: tuple[tuple[Any, str, str, dict[str, str]], ...] = (
    (lambda i: _action(i) == "scope_reduction", "rejected", "rule_3_forbidden",
     {"en": "It would drop or weaken what the user explicitly asked for; the original requirement wins.",
      "zh": "它会删减或削弱用户明确提出的需求；以原始需求为准。"}),
    (lambda i: _action(i) == "note", "noted", "engineering_note",
     {"en": "An engineering note for the team's design, not a question for the requirement owner.",
      "zh": "这是留给团队设计时处理的工程备注，不是向需求方提出的问题。"}),
    (lambda i: bool(i.get("change", {}).get("strengthens")) and _level(i) == "unanimous", "adopted", "rule_2_cautious",
     {"en": "It changes the user's wording, but every expert agreed.",
      "zh": "它改变了用户的措辞，但全体专家一致同意。"}),
    (lambda i: bool(i.get("change", {}).get("strengthens")), "rejected", "rule_2_cautious",
     {"en": "It changes the user's wording and the experts were not unanimous.",
      "zh": "它改变了用户的措辞，而专家意见并不一致。"}),
    (lambda i: _action(i) == "open_point", "open_point", "owner_decision",
     {"en": "Only the requirement owner can answer this.", "zh": "只有需求方能回答这个问题。"}),
    (lambda i: bool(i.get("flagged")), "open_point", "engine_flagged",
     {"en": "The change itself fails the requirement-quality rules ({flagged}); the owner decides instead.",
      "zh": "建议的修改本身不符合需求质量规则（{flagged}），改由需求方决定。"}),
    (lambda i: _level(i) in ("unanimous", "majority"), "adopted", "rule_1_optimise",
     {"en": "It refines the requirement ({level} consensus, {count} experts).",
      "zh": "它细化了需求（{level}，{count} 位专家）。"}),
    (lambda i: _level(i) == "single", "adopted", "rule_1_optimise",
     {"en": "It only refines the requirement; one expert raised it and no other expert objected.",
      "zh": "它只细化需求；由一位专家提出，其他专家没有反对。"}),
    (lambda i: i["category"] in COMPLIANCE, "adopted", "arbitration_compliance",
     {"en": "Contested; compliance comes first in arbitration.", "zh": "存在争议；裁决时合规优先。"}),
    (lambda i: i["category"] in TECHNICAL, "adopted", "arbitration_feasibility",
     {"en": "Contested; technical feasibility comes next in arbitration.",
      "zh": "存在争议；裁决时其次考虑技术可行性。"}),
    (lambda i: True, "deferred", "arbitration_user",
     {"en": "Contested and not settled by arbitration; the user decides.",
      "zh": "存在争议且无法通过裁决解决，由用户决定。"}),
)  # fmt: skip
"""The merge rules of the module docstring as rows, first match wins: ``(test(item),
decision, rule, reasoning per language)``; ``{level}``, ``{count}`` (experts behind the
point) and ``{flagged}`` (what the engine found in the change) are filled in."""


def decide(item: dict[str, Any], language: str = "en") -> tuple[str, str, str]:
    """``(decision, rule, reasoning)`` for one issue under ``DECISION_RULES``, the reasoning
    in ``language``."""
    language = "zh" if language == "zh" else "en"
    values = {
        "level": word(_level(item), language),
        "count": 1 + len(item.get("supporters", [])),
        "flagged": say(language, ", ", "、").join(item.get("flagged", [])),
    }
    _, decision, rule, reasoning = next(row for row in DECISION_RULES if row[0](item))
    return decision, rule, reasoning[language].format(**values)


WORDING_CATEGORIES = ("vague_term", "escape_clause", "absolute", "untestable", "missing_unit")
"""What the engine must not find in the words a change would write (seed 002 §6.6: the
consolidation never adopts a change the requirement-quality engine flags)."""


def engine_flags(text: str, language: str) -> list[str]:
    """The ``WORDING_CATEGORIES`` the engine finds in ``text`` (proposal markers left out), as
    category names in ``language``; [] for clean text."""
    text = PROPOSED.sub("", text).strip()
    if not text:
        return []
    heading = say(language, "Requirements", "功能需求")
    found = check_document(parse_document(f"# r\n\n## {heading}\n\n- {text}\n"), categories=WORDING_CATEGORIES)
    return list(dict.fromkeys(word(f.category, language) for f in found))


def flag_changes(item: dict[str, Any], language: str) -> dict[str, Any]:
    """``item`` with ``flagged``: what the engine finds (``engine_flags``) in the words its
    change would write and not already in the words it replaces (the new words of a
    ``replace``, each line of an ``append_section``)."""
    change = item.get("change", {})
    if change.get("action") == "replace":
        before = set(engine_flags(change.get("old", ""), language))
        flagged = [f for f in engine_flags(change.get("new", ""), language) if f not in before]
    elif change.get("action") == "append_section":
        flagged = [f for text in change.get("lines", []) for f in engine_flags(text, language)]
    else:
        flagged = []
    return {**item, "flagged": list(dict.fromkeys(flagged))}


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
    Every added line carries it: requirements, proposals and open points alike."""
    return say(language, " _(added by the review)_", "（评审补充）")


def _append_sections(lines: list[str], additions: dict[str, list[str]], language: str) -> list[str]:
    out = list(lines)
    tail: list[str] = []
    mark = added_by_review(language)
    for section, bullets in additions.items():
        if not bullets:
            continue
        items = [f"- {b}{mark}" for b in bullets]
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
            texts = [_text_of(lines, n) for n in change.get("from_lines", [])]
            criteria = (acceptance_criterion(t, language) for t in texts if not engine_flags(t, language))
            bullets += [c for c in criteria if c]
        return "\n".join(bullets)
    return change.get("question") or item["problem"]


def nothing_to_write(item: dict[str, Any], lines: list[str], language: str) -> dict[str, Any]:
    """``item`` as an open point when it is a section to append ("Acceptance criteria") of
    which nothing can be derived honestly from the text (every line it would draw a criterion
    from is flagged by the engine, and it brings no lines of its own): a change must show
    what it changes and write exactly that, so one with nothing to write asks the owner
    instead: how each of its lines is verified (the open points ``_write_criteria`` would
    list), else its ``question``. Any other item is returned unchanged."""
    change = item.get("change") or {}
    if change.get("action") != "append_section" or _proposal(item, lines, language).strip():
        return item
    questions = [_verify_question(language, _text_of(lines, n)) for n in change.get("from_lines", [])]
    question = "\n".join(q for q in questions if q) or change.get("question") or item["problem"]
    return {**item, "change": {**change, "action": "open_point", "question": question}}


def _text_of(lines: list[str], number: int) -> str:
    return re.sub(r"^\s*(?:[-*+]|\d+[.)])\s+", "", lines[number - 1]).strip() if number <= len(lines) else ""


def _kind(item: dict[str, Any]) -> str:
    if item.get("consensus_level") == "contested":
        return "contested"
    return "open_point" if item.get("change", {}).get("action") == "open_point" else "change"


def _whole_document(item: dict[str, Any]) -> bool:
    return (item.get("change") or {}).get("scope") == "document"


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
        if _action(item) == "note":  # an engineering note is no question for the owner
            continue
        item = nothing_to_write(flag_changes(item, language), lines, language)
        decision, rule, reasoning = decide(item, language)
        proposal = _proposal(item, lines, language)
        line = anchored_line(item)
        where = say(language, f" (line {line})", f"（第 {line} 行）") if line else ""
        if item.get("change", {}).get("scope") == "document":
            where = say(language, " (whole document)", "（全文）")
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
                # A point about the whole document shows no line: its anchor (the title) is no context.
                "quote": "" if _whole_document(item) else item.get("quote") or (_text_of(lines, line) if line else ""),
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
        return decide(item, language)
    accepted = operator == "accept"
    reasoning = say(language, f"The operator chose to {operator}.", f"操作员选择{'采纳' if accepted else '不采纳'}。")
    if item.get("change", {}).get("action") == "open_point":
        return ("open_point" if accepted else "rejected"), "operator", reasoning
    return ("adopted" if accepted else "rejected"), "operator", reasoning


@dataclass
class _Merge:
    """The consolidation under way: the document's ``lines`` (rewritten in place), the
    sections' ``additions``, the acceptance criteria still to write (``criteria``: bucket,
    change, confirmed), and what the report lists."""

    original: str
    language: str
    lines: list[str]
    additions: dict[str, list[str]] = field(default_factory=dict)
    criteria: list[tuple[list[str], dict[str, Any], bool]] = field(default_factory=list)
    sections: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    """Adopted sections with no lines of their own: (index in ``decisions``, change)."""
    decisions: list[dict[str, Any]] = field(default_factory=list)
    open_points: list[dict[str, Any]] = field(default_factory=list)
    notes: list[dict[str, Any]] = field(default_factory=list)
    counts: dict[str, int] = field(
        default_factory=lambda: {"adopted": 0, "rejected": 0, "deferred": 0, "open_point": 0, "noted": 0}
    )


def anchored_line(item: dict[str, Any]) -> int | None:
    """The line an issue is about, or None for a point about the whole document
    (``change.scope == "document"``: anchored on the title, which is no requirement)."""
    if item.get("change", {}).get("scope") == "document":
        return None
    return item["location"].get("line")


def _settle(merge: _Merge, item: dict[str, Any], operator: str | None, decided_by: str) -> None:
    """Decide ``item`` (``operator``: the operator's choice in confirm mode, or None) and
    record the decision: apply an adopted change, list an open point or an engineering note."""
    ident = candidate_id(item)
    item = flag_changes(item, merge.language)
    decision, rule, reasoning = _decision(item, operator, merge.language)
    applied = decision in ("open_point", "deferred", "noted")
    if decision == "adopted":
        applied = _apply(item, merge.lines, merge.additions, merge.criteria, merge.original, merge.language,
                         confirmed=operator == "accept")  # fmt: skip
        change = item.get("change") or {}
        if change.get("action") == "append_section" and not change.get("lines"):
            merge.sections.append((len(merge.decisions), change))
    if decision in ("open_point", "deferred"):
        question = item.get("change", {}).get("question") or item["problem"]
        line = anchored_line(item)
        merge.open_points.append({"id": ident, "issue_ids": item["issue_ids"], "question": question, "line": line,
                                  "source": "review", "category": item["category"]})  # fmt: skip
    if decision == "noted":
        merge.notes.append({"id": ident, "experts": item["experts"], "line": item["location"].get("line"),
                            "note": item.get("change", {}).get("note") or item["problem"]})  # fmt: skip
    merge.counts[decision] += 1
    merge.decisions.append(
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
            "flagged": item["flagged"],
            "applied": applied,
            "decided_by": f"operator:{decided_by}" if operator is not None else "rules",
        }
    )


def _verify_question(language: str, text: str) -> str:
    """How ``text`` (a requirement line) is verified, as an open point asks it; "" without text."""
    if not text:
        return ""
    return say(
        language,
        f"How is {q(language, clip(text, 80))} verified: under which condition, with which observable result?",
        f"{q(language, clip(text, 80))}如何验收：在什么条件下，应观察到什么结果？",
    )


def _unverifiable(merge: _Merge, number: int, text: str) -> None:
    """An open point instead of an acceptance criterion the text does not give."""
    question = _verify_question(merge.language, text)
    merge.open_points.append({"id": f"criterion-{number}", "issue_ids": [], "question": question, "line": number,
                              "source": "review", "category": "untestable", "topic": "acceptance"})  # fmt: skip


def _write_criteria(merge: _Merge) -> set[int]:
    """The acceptance criteria of the adopted ``criteria`` changes, from the lines as they
    read now; a line whose expected result does not follow from its text (``acceptance_criterion``
    gives None) becomes an open point instead. Returns the ``id()`` of each change that wrote
    at least one criterion."""
    asked: set[int] = set()
    wrote: set[int] = set()
    for bucket, change, confirmed in merge.criteria:
        for number in change["from_lines"]:
            text = _text_of(merge.lines, number)
            if not text:
                continue
            bullet = acceptance_criterion(confirm(text) if confirmed else text, merge.language)
            if engine_flags(text, merge.language):  # "must load fast": no result follows from it
                bullet = None
            if bullet is None and number not in asked:
                asked.add(number)
                _unverifiable(merge, number, text)
            elif bullet:
                wrote.add(id(change))
                if bullet not in bucket:
                    bucket.append(bullet)
    return wrote


def _nothing_written(merge: _Merge, wrote: set[int]) -> None:
    """An adopted section that wrote nothing (no criterion followed from the text) is counted
    and reported as what it became, open points, never as a change written (issue 27)."""
    for index, change in merge.sections:
        if id(change) in wrote:
            continue
        decision = merge.decisions[index]
        if decision["decision"] != "adopted":
            continue
        merge.counts["adopted"] -= 1
        merge.counts["open_point"] += 1
        decision["decision"] = "open_point"
        decision["reasoning"] += say(
            merge.language,
            " Nothing could be derived from the text, so it is asked as open points instead.",
            "但无法从原文推出任何内容，因此改为待确认事项。",
        )


def _list_open_points(merge: _Merge) -> None:
    """Fold the open points that ask the same thing (``open_point_folds.fold``: one entry
    with all its source lines) and list each once under "Open points"."""
    if not merge.open_points:
        return
    merge.open_points = [
        {**point, "issue_ids": [i for m in point["members"] for i in m["issue_ids"]]}
        for point in fold(merge.open_points)
    ]
    bucket = merge.additions.setdefault("Open points", [])
    for point in merge.open_points:
        entry = f"{point['question']}{where(point['lines'], merge.language)}"
        if entry not in bucket:
            bucket.append(entry)


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
    the rule says; candidates the operator did not decide follow the rules. A change the
    requirement-quality engine flags (``flag_changes``) is never adopted by the rules.
    Each decision records ``id``, ``flagged`` and ``decided_by`` ("rules" or
    "operator:<decided_by>"). The report has ``decision_mode``, ``language``,
    ``baseline_statements``, ``counts``, ``decisions``, ``open_points``,
    ``engineering_notes`` (supplements for the team, kept out of the document) and
    ``added_sections`` (their titles in the document's language); its prose is in the
    document's language."""
    merge = _Merge(original, document_language(original), original.splitlines())
    confirm_mode = operator_decisions is not None
    choices = operator_decisions or {}
    contested = 0
    for item in _items(responses):
        contested += item.get("consensus_level") == "contested"
        operator = choices.get(candidate_id(item)) if confirm_mode else None
        _settle(merge, item, operator, decided_by)
    _nothing_written(merge, _write_criteria(merge))
    _list_open_points(merge)
    final = "\n".join(_append_sections(merge.lines, merge.additions, merge.language)).rstrip() + "\n"
    report = {
        "decision_mode": "confirm" if confirm_mode else "auto",
        "language": merge.language,
        "baseline_statements": baseline,
        "counts": {**merge.counts, "contested": contested},
        "decisions": merge.decisions,
        "open_points": merge.open_points,
        "engineering_notes": merge.notes,
        "added_sections": [section_title(s, merge.language) for s, bullets in merge.additions.items() if bullets],
    }
    return final, report


def _open_section(doc_titles: list[str]) -> set[str]:
    return {t for t in doc_titles if t in (SECTION_TITLES["Open points"]["en"], SECTION_TITLES["Open points"]["zh"])}


CLARITY_CATEGORIES = ("vague_term", "absolute", "escape_clause", "untestable")
"""The engine's categories the quality check reports as ``clarity`` on the final document
(seed 002 §6.7: objective, declarative; docs/review-rules.md); its ``contradiction``
findings are the ``consistency`` check's (no contradictions)."""


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


def _lines_of(numbers: list[int], language: str) -> str:
    if len(numbers) == 1:
        return say(language, f"line {numbers[0]}", f"第 {numbers[0]} 行")
    return say(language, f"lines {', '.join(map(str, numbers))}", f"第 {'、'.join(map(str, numbers))} 行")


def _structure_check(final_doc: RequirementDocument, original_doc: RequirementDocument, language: str) -> list[str]:
    """The original's sections are all there, in order, and nothing but the review's own
    sections (``SECTION_TITLES``) was added."""
    original_titles, final_titles = original_doc.section_titles(), final_doc.section_titles()
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
    return findings


DISCUSSION = re.compile(r"\b(?:I think|we suggest|reviewer|review comment|in my opinion)\b|建议|评审意见|讨论", re.I)
"""Words of a discussion rather than a requirement (seed 002 §6.7 客观性)."""


def _objectivity_check(statements: list[Statement], language: str) -> list[str]:
    out = []
    for s in statements:
        text = PROPOSED.sub("", s.text)
        if DISCUSSION.search(text) or text.rstrip().endswith(("?", "？")):
            out.append(say(language, f"line {s.number}: '{s.text[:80]}' reads as discussion, not as a requirement",
                           f"第 {s.number} 行：“{s.text[:80]}”是讨论性表述，不是需求陈述"))  # fmt: skip
    return out


TARGET_KEYS = ("response time", "load time", "latency", "timeout", "upload limit", "响应时间", "加载时间", "超时")
"""Quantities whose targets must agree across the document (seed 002 §6.7 逻辑严谨性)."""


def _consistency_check(final_doc: RequirementDocument, statements: list[Statement], language: str) -> list[str]:
    """Targets of one quantity agree, and the requirement-quality engine finds no
    contradiction between two requirements (seed 002 §6.7 逻辑严谨性: "不收集这些信息"
    against "填写姓名和手机号", "不对接其他系统" against "收到短信确认")."""
    numbers = {s.number for s in statements if not PROPOSED.search(s.text)}
    found = [
        say(language, f"line {f.line}: '{f.quote}': {f.message}", f"第 {f.line} 行：“{f.quote}”：{f.message}")
        for f in check_document(final_doc, categories=("contradiction",))
        if f.line in numbers
    ]
    return found + _target_check(statements, language)


def _target_check(statements: list[Statement], language: str) -> list[str]:
    targets: dict[str, set[str]] = {}
    for statement in statements:
        for key in (k for k in TARGET_KEYS if k in statement.text.lower()):
            values = QUANTITY.findall(PROPOSED.sub("", statement.text))
            targets.setdefault(key, set()).update(re.sub(r"\s+", " ", v.strip()) for v in values)
    return [
        say(language, f"'{key}' has different targets: {', '.join(sorted(values))}",
            f"“{key}”有不同的目标值：{'、'.join(sorted(values))}")
        for key, values in targets.items()
        if len(values) > 1
    ]  # fmt: skip


def _closure_check(final_doc: RequirementDocument, statements: list[Statement], language: str) -> list[str]:
    """Acceptance criteria exist and each is testable (seed 002 §6.7 闭环性)."""
    title = next((t for _, t, _ in final_doc.headings if "acceptance" in t.lower() or "验收" in t), None)
    if title is None:
        return [say(language, "there are no acceptance criteria", "没有验收标准")]
    criteria = [s for s in statements if s.section == title]
    findings = [] if criteria else [say(language, "the acceptance criteria are empty", "验收标准为空")]
    return findings + [
        say(language, f"line {s.number}: acceptance criterion '{s.text[:80]}' is not testable",
            f"第 {s.number} 行：验收标准“{s.text[:80]}”不可测试")
        for s in criteria
        if not testable(s.text)
    ]  # fmt: skip


def _completeness_check(final_doc: RequirementDocument, statements: list[Statement], language: str) -> list[str]:
    """No undecided requirement, no term the engine finds undefined (seed 002 §6.7 业务完整性)."""
    findings = [
        say(language, f"line {s.number}: undecided ('{m.group(0)}')", f"第 {s.number} 行：悬而未决（“{m.group(0)}”）")
        for s in statements
        if (m := UNDECIDED.search(PROPOSED.sub("", s.text)))
    ]
    return findings + [
        say(language, f"line {f.line}: {f.message}", f"第 {f.line} 行：{f.message}")
        for f in check_document(final_doc, categories=("undefined_term",))
    ]


def _unresolved(final_doc: RequirementDocument, open_titles: set[str], language: str) -> list[str]:
    """Every proposal awaiting confirmation (one item with every line it is on) and every
    open point, without the review's marker."""
    proposals: dict[str, list[int]] = {}
    for s in final_doc.statements:
        for m in PROPOSED.finditer(s.text):
            numbers = proposals.setdefault(m.group(0).strip(), [])
            if s.number not in numbers:
                numbers.append(s.number)
    unresolved = [
        say(language, f"{_lines_of(numbers, language)}: proposed, not confirmed: {text}",
            f"{_lines_of(numbers, language)}：建议值未确认：{text}")
        for text, numbers in proposals.items()
    ]  # fmt: skip
    mark = added_by_review(language).strip()
    points = dict.fromkeys(s.text.replace(mark, "").strip() for s in final_doc.statements if s.section in open_titles)
    return unresolved + [say(language, f"open point: {text}", f"待确认：{text}") for text in points]


def quality_check(final: str, original: str) -> dict[str, Any]:
    """The §6.7 review_report checks on ``final``: structure, objectivity, clarity (the
    engine's findings on wording and contradictions), consistency, closure (testable
    acceptance criteria), completeness and ``unresolved``; ``passed`` only when all pass.
    Returns ``{"passed", "checks": [{"name", "passed", "findings"}], "unresolved": [str]}``:
    ``unresolved`` lists what stays open for the owner (proposals awaiting confirmation, open
    points, and the clarity findings left in the document), in the document's language."""
    language = document_language(original or final)
    final_doc, original_doc = parse_document(final), parse_document(original)
    open_titles = _open_section(final_doc.section_titles())
    aside = set_aside_lines(final_doc)  # the interview's clarifications log is no requirement
    statements = [s for s in final_doc.statements if s.section not in open_titles and s.number not in aside]
    clarity = _clarity_check(final_doc, statements, language)
    unresolved = _unresolved(final_doc, open_titles, language)
    consistency = _consistency_check(final_doc, statements, language)
    unresolved += [f for f in clarity["findings"] + consistency if f not in unresolved]
    found = {
        "structure": _structure_check(final_doc, original_doc, language),
        "objectivity": _objectivity_check(statements, language),
        "clarity": clarity["findings"],
        "consistency": consistency,
        "closure": _closure_check(final_doc, statements, language),
        "completeness": _completeness_check(final_doc, statements, language),
        "unresolved": unresolved,
    }
    checks = [{"name": name, "passed": not findings, "findings": findings} for name, findings in found.items()]
    return {"passed": all(c["passed"] for c in checks), "checks": checks, "unresolved": unresolved}
