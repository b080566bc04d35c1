"""Seed 002 phases 1-4: from a one-line idea to ``requirement.md``.

- **Project type matching** (project_type_matcher): the idea's words against each type's
  keywords (``project_types/*.yaml``, data files an operator can extend: seed 002 扩展指南 添加新项目类型);
  a confidence level; when it is low the operator picks the type.
- **Interview** (req_interviewer): the type's core questions in two rounds. Round 1 asks the
  first half in business wording; round 2 asks the rest in business wording, or in technical
  wording when the round 1 answers show technical depth (seed 002 principle 1, 动态适应用户能力).
- **Writing** (req_writer): ``requirement.md`` from the type's template, every line the
  user's own answer; the ``unknown`` type builds its sections from the topics answered
  (custom_sections). Questions left unanswered are open points, never invented answers.

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

from teamclaw.workflows.document import OPEN_POINT_SECTIONS
from teamclaw.workflows.review_text import say

PROJECT_TYPES_DIR = Path(__file__).resolve().parent / "project_types"
UNKNOWN = "unknown"
LANGUAGES = ("en", "zh")


@dataclass(frozen=True, slots=True)
class ProjectType:
    """One project type configuration: ``type`` (its id), ``priority`` (ties: higher first),
    ``label`` and ``keywords`` per language, the core ``questions`` (``{id, section,
    business: {en, zh}, technical: {en, zh}, topic?}``) and the template's ``sections``
    (``{id, title: {en, zh}}``; empty for the unknown type)."""

    type: str
    priority: int
    label: dict[str, str]
    keywords: dict[str, list[str]]
    questions: list[dict[str, Any]]
    sections: list[dict[str, Any]]


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
        for question in project_type.questions:
            for wording in ("business", "technical"):
                for lang in LANGUAGES:
                    str(question[wording][lang])
            str(question["id"])
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"{source.name}: project type configuration is incomplete ({exc!r})") from None
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
    project_type: ProjectType, language: str, round_number: int, earlier_answers: list[str]
) -> dict[str, Any]:
    """The questions of interview round 1 or 2 (seed 002 phase 3, req_interviewer):
    ``{"round", "style": "business" | "technical", "questions": [{"id": "r<N>-<qid>",
    "question_id", "text", "section", "topic"}], "last": bool}``. Round 1 asks the first half
    of the type's questions in business wording; round 2 the rest, technical when
    ``earlier_answers`` show depth. Raises ValueError for any other round."""
    half = (len(project_type.questions) + 1) // 2
    if round_number == 1:
        chosen, style = project_type.questions[:half], "business"
    elif round_number == 2:
        chosen, style = project_type.questions[half:], answer_depth(earlier_answers)
    else:
        raise ValueError(f"the interview has rounds 1 and 2, not {round_number}")
    questions = [
        {
            "id": f"r{round_number}-{q['id']}",
            "question_id": q["id"],
            "text": q[style][language],
            "section": q["section"],
            "topic": (q.get("topic") or {}).get(language, ""),
        }
        for q in chosen
    ]
    return {"round": round_number, "style": style, "questions": questions, "last": round_number == 2}


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
    description: str, project_type: ProjectType, language: str, confidence: str, rounds: list[dict[str, Any]]
) -> dict[str, Any]:
    """``interview_result.json`` (seed 002 temp/interview_result.json): the idea, the type, and
    every question with the user's answer (``rounds`` are ``{round, style, questions,
    answers: {id: text}, answered_by}``). ``baseline_statements`` are the user's own lines:
    the idea and every answer line, the highest authority when consolidating (principle 4);
    ``unanswered`` lists what the user left open."""
    entries, unanswered = [], []
    baseline = [description.strip()]
    for round_ in rounds:
        for question in round_["questions"]:
            answer = (round_["answers"].get(question["id"]) or "").strip()
            entries.append(
                {
                    "id": question["id"],
                    "question": question["text"],
                    "section": question["section"],
                    "topic": question.get("topic", ""),
                    "round": round_["round"],
                    "style": round_["style"],
                    "answer": answer,
                }
            )
            if answer:
                baseline += answer_lines(answer)
            else:
                unanswered.append(question["text"])
    return {
        "source": "interview",
        "description": description.strip(),
        "project_type": project_type.type,
        "project_type_confidence": confidence,
        "language": language,
        "answers": entries,
        "unanswered": unanswered,
        "answered_by": [r.get("answered_by", "") for r in rounds],
        "baseline_statements": baseline,
        "note": say(
            language,
            "The user's own words: the highest authority when consolidating.",
            "用户的原话：汇总时的最高准则。",
        ),
    }


OPEN_POINTS_TITLE = dict(zip(LANGUAGES, OPEN_POINT_SECTIONS, strict=True))
IDEA_TITLE = {"en": "Idea", "zh": "需求概述"}


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
    ``interview_result``. Sections follow the type's template in the document's language
    (the unknown type: one section per topic answered); each holds the user's answer lines;
    an empty section is left out, and every unanswered question is listed under the open
    points. Nothing is added that the user did not say."""
    language = result["language"]
    lines = [f"# {_title(result['description'])}", "", f"## {IDEA_TITLE[language]}", "", result["description"]]
    if project_type.sections:
        sections = [(s["id"], s["title"][language]) for s in project_type.sections]
    else:  # custom_sections: the topics the answers cover, in the order asked
        sections = []
        for entry in result["answers"]:
            key = entry.get("topic") or entry["section"]
            if entry["answer"] and key not in [s for s, _ in sections]:
                sections.append((key, key))
    titles = [IDEA_TITLE[language]]
    templated = bool(project_type.sections)
    for section_id, title in sections:
        answers = [
            line
            for entry in result["answers"]
            if entry["answer"]
            and (entry["section"] if templated else entry.get("topic") or entry["section"]) == section_id
            for line in answer_lines(entry["answer"])
        ]
        if not answers:
            continue
        lines += ["", f"## {title}", "", *[f"- {line}" for line in dict.fromkeys(answers)]]
        titles.append(title)
    if result["unanswered"]:
        lines += ["", f"## {OPEN_POINTS_TITLE[language]}", "", *[f"- {q}" for q in result["unanswered"]]]
        titles.append(OPEN_POINTS_TITLE[language])
    return "\n".join(lines).rstrip() + "\n", titles
