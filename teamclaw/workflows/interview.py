"""Seed 002 phases 1-4: from a one-line idea to ``requirement.md``.

- **Project type matching** (project_type_matcher): the idea's words against each type's
  keywords (``project_types/*.yaml``, data files an operator can extend: seed 002 扩展指南 添加新项目类型);
  a confidence level; when it is low the operator picks the type.
- **Interview** (req_interviewer, ``clarify``): rounds of at most 5 questions ranked by
  impact, each with options and a recommended one, and a coverage map by category (clear /
  partial / missing); a follow-up when the requirement-quality engine flags an answer (vague,
  unmeasurable, personal data without a basis) or two answers contradict each other. Round 1
  is worded for business, later rounds technically when the answers show depth (seed 002
  principle 1, 动态适应用户能力).
- **Writing** (req_writer, ``ears``): ``requirement.md`` with numbered requirements
  (FR-001...) in EARS form, one thought each, from the operator's words only, under the
  type's template sections (the ``unknown`` type: the topics answered, custom_sections);
  questions left unanswered are open points, never invented answers; a Clarifications log.

Plain functions on plain data: the handlers in ``requirement_review`` call them, and the
interview's answers become ``interview_result.json``, the user's baseline (seed 002 principle 4).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from teamclaw.workflows.clarify import answered, check_options, entries_of, load_clarify_rules, plan_round
from teamclaw.workflows.document import OPEN_POINT_SECTIONS
from teamclaw.workflows.ears import clarifications, draft, plan
from teamclaw.workflows.review_text import say

PROJECT_TYPES_DIR = Path(__file__).resolve().parent / "project_types"
UNKNOWN = "unknown"
LANGUAGES = ("en", "zh")


@dataclass(frozen=True, slots=True)
class ProjectType:
    """One project type configuration: ``type`` (its id), ``priority`` (ties: higher first),
    ``label`` and ``keywords`` per language, the core ``questions`` (``{id, section,
    category, impact, business: {en, zh}, technical: {en, zh}, topic?, options?,
    recommended?, reason?}``) and the template's ``sections``
    (``{id, title: {en, zh}}``; empty for the unknown type)."""

    type: str
    priority: int
    label: dict[str, str]
    keywords: dict[str, list[str]]
    questions: list[dict[str, Any]]
    sections: list[dict[str, Any]]


def _check_question(question: Any, source: Path, categories: set[str]) -> None:
    """Raise ValueError naming the file and the question when it lacks its id, a wording, a
    known coverage ``category``, an ``impact`` of 1-5 or well-formed ``options`` (with options:
    a ``recommended`` key among them and a ``reason`` in each language)."""
    qid = question.get("id", "?") if isinstance(question, dict) else "?"
    try:
        str(question["id"])
        for wording in ("business", "technical"):
            for lang in LANGUAGES:
                str(question[wording][lang])
    except (KeyError, TypeError) as exc:
        raise ValueError(f"{source.name}: question {qid!r}: wording is incomplete ({exc!r})") from None
    if question.get("category") not in categories:
        raise ValueError(f"{source.name}: question {qid!r}: unknown category {question.get('category')!r}")
    impact = question.get("impact")
    if not isinstance(impact, int) or not 1 <= impact <= 5:
        raise ValueError(f"{source.name}: question {qid!r}: impact must be a whole number from 1 to 5")
    options = check_options(source, f"question {qid}", question.get("options", []), question.get("recommended", ""))
    if options and not question.get("recommended"):
        raise ValueError(f"{source.name}: question {qid!r}: options need a recommended one")
    reason = question.get("reason") if options else {}
    if options and (not isinstance(reason, dict) or not all(str(reason.get(lang) or "").strip() for lang in LANGUAGES)):
        raise ValueError(f"{source.name}: question {qid!r}: options need a reason in each of {', '.join(LANGUAGES)}")


def _project_type(data: dict[str, Any], source: Path) -> ProjectType:
    """A ``ProjectType`` from a parsed file. Raises ValueError naming the file and the key."""
    try:
        project_type = ProjectType(
            type=str(data["type"]),
            priority=int(data.get("priority", 0)),
            label={lang: str(data["label"][lang]) for lang in LANGUAGES},
            keywords={lang: [str(k).lower() for k in data.get("keywords", {}).get(lang, [])] for lang in LANGUAGES},
            questions=list(data["questions"]),
            sections=list(data.get("template", {}).get("sections", [])),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"{source.name}: project type configuration is incomplete ({exc!r})") from None
    categories = {c["id"] for c in load_clarify_rules().categories}
    for question in project_type.questions:
        _check_question(question, source, categories)
    return project_type


@functools.cache
def load_project_types(folder: Path = PROJECT_TYPES_DIR) -> dict[str, ProjectType]:
    """Every ``*.yaml`` in ``folder`` (safe-loaded), by type id; always holds ``unknown``.
    Raises ValueError for a file that is not a complete configuration."""
    types = {}
    for path in sorted(folder.glob("*.yaml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        project_type = _project_type(data if isinstance(data, dict) else {}, path)
        types[project_type.type] = project_type
    if UNKNOWN not in types:
        raise ValueError(f"{folder}: the '{UNKNOWN}' project type is missing")
    return types


def _hits(text: str, keywords: list[str]) -> list[str]:
    found = []
    for keyword in keywords:
        if keyword.isascii():
            if re.search(r"(?<![a-z0-9])" + re.escape(keyword) + r"(?![a-z0-9])", text):
                found.append(keyword)
        elif keyword in text:
            found.append(keyword)
    return found


def match_project_type(description: str, types: dict[str, ProjectType] | None = None) -> dict[str, Any]:
    """Seed 002 phase 2 (project_type_matcher): ``{"project_type", "confidence": "high" |
    "medium" | "low", "matched_keywords", "candidates": [{"type", "label", "score"}]}``.

    The score is the number of distinct keywords of either language found in the idea.
    ``high``: at least 2 and 2 more than the runner-up; ``medium``: the best alone at the top;
    ``low``: no keyword, or a tie (then ``project_type`` is ``unknown`` and the operator picks).
    """
    types = types or load_project_types()
    text = description.lower()
    scored = []
    for project_type in types.values():
        if project_type.type == UNKNOWN:
            continue
        hits = _hits(text, project_type.keywords["en"] + project_type.keywords["zh"])
        scored.append((len(hits), project_type.priority, project_type, hits))
    scored.sort(key=lambda item: (-item[0], -item[1], item[2].type))
    best_score, _, best, hits = scored[0] if scored else (0, 0, types[UNKNOWN], [])
    runner_up = scored[1][0] if len(scored) > 1 else 0
    if best_score >= 2 and best_score - runner_up >= 2:
        confidence = "high"
    elif best_score >= 1 and best_score > runner_up:
        confidence = "medium"
    else:
        confidence = "low"
    language = "zh" if re.search(r"[\u4e00-\u9fff]", description) else "en"
    candidates = [{"type": t.type, "label": t.label[language], "score": score} for score, _, t, _ in scored]
    candidates.append({"type": UNKNOWN, "label": types[UNKNOWN].label[language], "score": 0})
    return {
        "project_type": best.type if confidence != "low" else UNKNOWN,
        "confidence": confidence,
        "matched_keywords": hits if confidence != "low" else [],
        "candidates": candidates,
    }


TECHNICAL_SIGNALS = re.compile(
    r"\b(?:api|apis|rest|grpc|json|sql|database|schema|latency|throughput|p9[59]|ms|qps|rps|oauth|sso|jwt|"
    r"webhook|cache|queue|kafka|redis|postgres|docker|kubernetes|ci|sdk|endpoint|timeout|retry|idempotent|"
    r"concurren\w*|architecture|microservice\w*|embedding\w*|vector|rag|fine-tun\w*|token\w*)\b"
    r"|接口|数据库|并发|延迟|吞吐|架构|缓存|队列|微服务|鉴权|超时|重试|向量|嵌入|部署|索引|字段|协议"
    r"|\d[\d,.]*\s*(?:ms|s\b|sec|seconds?|minutes?|%|毫秒|秒|分钟|小时|qps|rps|mb|gb|次|条|个)",
    re.IGNORECASE,
)


def answer_depth(answers: list[str]) -> str:
    """``"technical"`` when the answers use at least 2 technical terms or measured figures
    (API, latency, 接口, 并发, ``200 ms``, ``30 秒``...), else ``"business"`` (seed 002
    principle 1)."""
    signals = sum(len(TECHNICAL_SIGNALS.findall(answer)) for answer in answers)
    return "technical" if signals >= 2 else "business"


def interview_round(
    project_type: ProjectType, language: str, round_number: int, rounds: list[dict[str, Any]]
) -> dict[str, Any]:
    """Interview round ``round_number`` after ``rounds`` (seed 002 phase 3, req_interviewer;
    ``clarify.plan_round``): ``{"round", "style": "business" | "technical", "questions",
    "coverage", "pending_follow_ups", "last"}``. Round 1 is worded for business; later rounds
    technically when the answers so far show depth (principle 1). No questions: the interview
    is over."""
    earlier = [str(answer) for round_ in rounds for answer in (round_.get("answers") or {}).values()]
    style = "business" if round_number == 1 else answer_depth([a for a in earlier if a.strip()])
    return plan_round(project_type.questions, rounds, round_number, style, language)


SENTENCE_END = re.compile(r"(?<=[.!?。！？；;])\s*")


def answer_lines(answer: str) -> list[str]:
    """The user's answer as document lines: each non-empty line, list markers removed;
    sentences are kept whole and never reworded."""
    lines = []
    for raw in answer.splitlines():
        text = re.sub(r"^\s*(?:[-*+]|\d+[.)])\s+", "", raw).strip()
        if text:
            lines.append(text)
    return lines


def interview_result(
    description: str,
    project_type: ProjectType,
    language: str,
    confidence: str,
    rounds: list[dict[str, Any]],
    final: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """``interview_result.json`` (seed 002 temp/interview_result.json): the idea, the type,
    every question asked with the operator's answer (``answers``: ``{id, question, kind,
    section, category, round, style, answer, choice, open}``), the final ``coverage`` map and
    the follow-ups there was no room to ask (from ``final``, the plan after the last round),
    ``unanswered`` (the open points), the numbered ``requirements`` of the draft, its
    ``plan`` (rollout statements, not requirements: ``ears.plan``) and
    ``baseline_statements``: the idea and every answer line, the highest authority when
    consolidating (principle 4)."""
    final = final or {}
    entries = entries_of(rounds)
    styles = {r["round"]: r["style"] for r in rounds}
    sections = [s["id"] for s in project_type.sections] or [
        (q.get("topic") or {}).get(language, q["section"]) for q in project_type.questions
    ]
    numbered, unanswered = draft(entries, final.get("pending_follow_ups", []), sections, language)
    baseline = [description.strip()]
    for entry in entries:
        if answered(entry) and not entry["answer"]["none"]:
            baseline += answer_lines(entry["answer"]["text"])
    return {
        "source": "interview",
        "description": description.strip(),
        "project_type": project_type.type,
        "project_type_confidence": confidence,
        "language": language,
        "entries": entries,
        "answers": [
            {"id": e["id"], "question": e["text"], "kind": e.get("kind", "question"), "section": e["section"],
             "category": e.get("category", ""), "topic": e.get("topic", ""), "round": e["round"],
             "style": styles.get(e["round"], ""), "answer": e["answer"]["text"], "choice": e["answer"]["choice"],
             "open": e["answer"]["open"]}
            for e in entries
        ],
        "coverage": final.get("coverage", []),
        "unanswered": unanswered,
        "requirements": numbered,
        "plan": plan(entries, final.get("pending_follow_ups", []), language),
        "answered_by": [r.get("answered_by", "") for r in rounds],
        "baseline_statements": list(dict.fromkeys(baseline)),
        "note": say(
            language,
            "The user's own words: the highest authority when consolidating.",
            "用户的原话：汇总时的最高准则。",
        ),
    }  # fmt: skip


OPEN_POINTS_TITLE = dict(zip(LANGUAGES, OPEN_POINT_SECTIONS, strict=True))
IDEA_TITLE = {"en": "Idea", "zh": "需求概述"}
PLAN_TITLE = {"en": "Rollout plan", "zh": "实施计划"}
"""The section of the operator's rollout statements (a pilot, going live): not requirements."""


def _title(description: str) -> str:
    first = description.strip().splitlines()[0] if description.strip() else ""
    first = first.rstrip("。.!！")
    if len(first) <= 80:
        return first
    cut = first[:80]
    if first[80].isalnum() and " " in cut:  # English: never cut a word in half
        cut = cut.rsplit(" ", 1)[0]
    return cut.rstrip(" ,;:，、") + "…"


def write_requirement(result: dict[str, Any], project_type: ProjectType) -> tuple[str, list[str]]:
    """Seed 002 phase 4 (req_writer): ``(requirement.md, section titles)`` from
    ``interview_result``: the idea, the numbered EARS requirements (``FR-001``...) under the
    type's sections in the document's language (the unknown type: one section per topic
    answered), the rollout plan (not requirements), the open points, and the Clarifications
    log. Nothing is added that the operator did not say or choose (``ears``)."""
    language = result["language"]
    lines = [f"# {_title(result['description'])}", "", f"## {IDEA_TITLE[language]}", "", result["description"]]
    titles = [IDEA_TITLE[language]]
    for title, items in _sections(result, project_type, language):
        sep = "：" if language == "zh" else ": "
        lines += ["", f"## {title}", "", *[f"- {r['id']}{sep}{r['text']}" for r in items]]
        titles.append(title)
    if result.get("plan"):
        lines += ["", f"## {PLAN_TITLE[language]}", "", *[f"- {item}" for item in result["plan"]]]
        titles.append(PLAN_TITLE[language])
    if result["unanswered"]:
        lines += ["", f"## {OPEN_POINTS_TITLE[language]}", "", *[f"- {q}" for q in result["unanswered"]]]
        titles.append(OPEN_POINTS_TITLE[language])
    lines += clarifications(result.get("entries", []), language)
    titles.append(load_clarify_rules().titles["clarifications"][language])
    return "\n".join(lines).rstrip() + "\n", titles


def _sections(
    result: dict[str, Any], project_type: ProjectType, language: str
) -> list[tuple[str, list[dict[str, Any]]]]:
    """``(title, requirements)`` per section holding any: the type's template sections, or
    (the unknown type, custom_sections) one per topic answered, in the order asked."""
    if project_type.sections:
        named = [(s["id"], s["title"][language]) for s in project_type.sections]
    else:
        topics = {e["id"]: e.get("topic") or e["section"] for e in result.get("entries", [])}
        named = [(t, t) for t in dict.fromkeys(topics.values())]
        result = {**result, "requirements": [{**r, "section": topics.get(r["source"], r["section"])}
                                             for r in result["requirements"]]}  # fmt: skip
    out = []
    for section_id, title in named:
        items = [r for r in result["requirements"] if r["section"] == section_id]
        if items:
            out.append((title, items))
    return out
