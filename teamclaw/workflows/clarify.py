"""The interview's clarify step (issue 27 item 5; seed 002 phase 3 req_interviewer, after
GitHub Spec Kit's ``/clarify``): a coverage map, ranked rounds of at most 5 questions, each
with options and a recommended one, and follow-ups on answers the requirement-quality engine
flags.

Data, not code: the coverage categories, limits, follow-up options and the draft's titles are
``interview_files/coverage.yaml`` and ``interview_files/follow_ups.yaml``; a follow-up's
question is the flagged rule's own ``change.question`` (``rule_files/*.yaml``); a project
type's questions carry their ``category``, ``impact``, ``options`` and ``recommended`` key.

Shapes (plain dicts, kept in ``interview_result.json``):

- a **question** asked: ``{id: "r<round>-<question_id>", question_id, kind: "question" |
  "follow_up", text, section, category, impact, topic, options: [{key, text, none?,
  withdraws?}], recommended, reason, follows?, quote?, rule?}``; a follow-up's
  ``question_id`` is ``<root>-f<n>``, ``follows`` the id of the answer it follows up and
  ``quote`` the clause the engine flagged (replaced by the follow-up's answer).
- a **round**: ``{round, style, questions, answers: {id: text}, answered_by}``.
- an **entry** (``entries``): a question with its round and its ``answer``:
  ``{text, choice, open, none}`` (``resolve_answer``).
- the **coverage map**: ``[{category, label, status: clear | partial | missing, answered,
  asked}]`` in the taxonomy's order.

Errors: a data file that is incomplete raises ``InterviewFileError`` naming the file and the
entry (at first use; ``load_clarify_rules`` is called at start-up by the workflow's checks).
"""

from __future__ import annotations

import functools
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from teamclaw.workflows.document import parse_document
from teamclaw.workflows.ears_grammar import (
    INTERVIEW_FILES,
    InterviewFileError,
    clauses,
    load_grammar,
    numbered_clauses,
    relation,
)
from teamclaw.workflows.quality_engine import QualityFinding, check_document, default_rules
from teamclaw.workflows.quality_rules import CATEGORIES as FINDING_CATEGORIES

LANGUAGES = ("en", "zh")
STATUSES = ("clear", "partial", "missing")
RECOMMENDED_WORDS = ("recommended", "yes", "ok", "推荐", "是", "好", "同意")
"""An answer that takes the recommended option (Spec Kit: "yes" / "recommended")."""


@dataclass(frozen=True)
class ClarifyRules:
    """``coverage.yaml`` and ``follow_ups.yaml`` validated: the ``categories`` (``[{id,
    label: {en, zh}}]``), ``uncertainty`` by status, the limits, the finding categories that
    draw a follow-up, the ``open_option``, the draft's ``titles`` and the ``follow_ups`` rows."""

    categories: tuple[dict[str, Any], ...]
    uncertainty: dict[str, int]
    max_questions: int
    max_rounds: int
    max_follow_ups: int
    follow_up_categories: frozenset[str]
    open_option: dict[str, str]
    titles: dict[str, dict[str, str]]
    follow_ups: tuple[dict[str, Any], ...]
    settled_by_any_answer: frozenset[str] = frozenset()
    """Finding categories whose follow-up another answer may settle (``settled_elsewhere``)."""

    def label(self, category: str, language: str) -> str:
        return next((c["label"][language] for c in self.categories if c["id"] == category), category)


def _texts(path: Path, entry: str, value: Any, what: str) -> dict[str, str]:
    if not isinstance(value, dict) or any(not isinstance(value.get(lang), str) for lang in LANGUAGES):
        raise InterviewFileError(path, entry, f"{what} needs a text for each of {', '.join(LANGUAGES)}")
    return {lang: value[lang] for lang in LANGUAGES}


def check_options(path: Path, entry: str, options: Any, recommended: Any) -> list[dict[str, Any]]:
    """Validated ``options`` (``[{key, en, zh, none?, withdraws?}]``) with ``recommended`` one
    of their keys or empty. Raises InterviewFileError naming ``entry``."""
    if not isinstance(options, list):
        raise InterviewFileError(path, entry, "options must be a list")
    keys = []
    for option in options:
        if not isinstance(option, dict) or not isinstance(option.get("key"), str):
            raise InterviewFileError(path, entry, "each option needs a key")
        _texts(path, f"{entry} option {option['key']}", option, "an option")
        keys.append(option["key"])
    if len(set(keys)) != len(keys):
        raise InterviewFileError(path, entry, "option keys must be unique")
    if recommended not in ("", None, *keys):
        raise InterviewFileError(path, entry, f"recommended {recommended!r} is not one of its options")
    return options


def _follow_up(path: Path, row: Any, categories: set[str]) -> dict[str, Any]:
    if not isinstance(row, dict) or not isinstance(row.get("id"), str):
        raise InterviewFileError(path, "?", "each follow-up row needs an id")
    entry = f"follow-up {row['id']}"
    if row.get("category") not in categories:
        raise InterviewFileError(path, entry, f"unknown coverage category {row.get('category')!r}")
    unknown = set(row.get("categories") or ()) - set(FINDING_CATEGORIES)
    if unknown:
        raise InterviewFileError(path, entry, f"unknown finding category {', '.join(sorted(unknown))}")
    check_options(path, entry, row.get("options", []), row.get("recommended", ""))
    _texts(path, entry, row.get("reason"), "reason")
    if "question" in row:
        _texts(path, entry, row["question"], "question")
    matches = row.get("matches") or {}
    return {**row, "matches": {lang: [str(w).lower() for w in matches.get(lang, [])] for lang in LANGUAGES}}


def _int(path: Path, data: dict[str, Any], key: str) -> int:
    value = data.get(key)
    if not isinstance(value, int) or value < 1:
        raise InterviewFileError(path, key, "must be a whole number of at least 1")
    return value


@functools.cache
def load_clarify_rules(folder: Path = INTERVIEW_FILES) -> ClarifyRules:
    """The interview's data files in ``folder`` (``yaml.safe_load``), validated. Raises
    InterviewFileError naming the file and the entry."""
    coverage_path, follow_path = folder / "coverage.yaml", folder / "follow_ups.yaml"
    data = yaml.safe_load(coverage_path.read_text(encoding="utf-8")) or {}
    categories = tuple(data.get("categories") or ())
    for category in categories:
        if not isinstance(category, dict) or not isinstance(category.get("id"), str):
            raise InterviewFileError(coverage_path, "categories", "each category needs an id")
        _texts(coverage_path, f"category {category['id']}", category.get("label"), "label")
    ids = {c["id"] for c in categories}
    unknown = set(data.get("follow_up_categories") or ()) - set(FINDING_CATEGORIES)
    if unknown:
        raise InterviewFileError(coverage_path, "follow_up_categories", f"unknown {', '.join(sorted(unknown))}")
    titles = data.get("titles") or {}
    rows = (yaml.safe_load(follow_path.read_text(encoding="utf-8")) or {}).get("follow_ups") or []
    return ClarifyRules(
        categories=categories,
        uncertainty={status: int((data.get("uncertainty") or {}).get(status, 0)) for status in STATUSES},
        max_questions=_int(coverage_path, data, "max_questions"),
        max_rounds=_int(coverage_path, data, "max_rounds"),
        max_follow_ups=_int(coverage_path, data, "max_follow_ups"),
        follow_up_categories=frozenset(data.get("follow_up_categories") or ()),
        open_option={"key": str((data.get("open_option") or {}).get("key", "")),
                     **_texts(coverage_path, "open_option", data.get("open_option"), "open_option")},
        titles={key: _texts(coverage_path, f"titles.{key}", value, "a title") for key, value in titles.items()},
        follow_ups=tuple(_follow_up(follow_path, row, ids) for row in rows),
        settled_by_any_answer=frozenset(data.get("settled_by_any_answer") or ()) & set(FINDING_CATEGORIES),
    )  # fmt: skip


# -- answers --------------------------------------------------------------------------------
def _option(question: dict[str, Any], key: str) -> dict[str, Any] | None:
    return next((o for o in question.get("options", ()) if o["key"].lower() == key.lower()), None)


OPTION_PREFIX = re.compile(r"^(?:option|选项)\s*[:：]?\s*", re.IGNORECASE)
"""What may precede an option's key in an answer: "option B", "选项 B", "选项：B"."""


def option_key(text: str) -> str:
    """``text`` without the "option" / "选项" before it and the full stop or brackets around
    it, NFKC-normalised first: a Chinese input method types "选项Ｂ" and "选项：Ｂ" with a
    full-width letter and colon, which must read as "B" as the half-width ones do. The
    validator of the answers (``runs.operator_inputs``) and ``resolve_answer`` read keys with
    it alike."""
    normal = unicodedata.normalize("NFKC", text or "").strip()
    return OPTION_PREFIX.sub("", normal.rstrip(".。)）").strip()).lstrip("(（").strip()


def resolve_answer(question: dict[str, Any], raw: str, rules: ClarifyRules | None = None) -> dict[str, Any]:
    """What an answer means: ``{text, choice, open, none}``. Empty, or the open option's key
    or text: ``open`` (the question stays an open point). An option's key, or a word that
    takes the recommendation ("recommended", "yes", "推荐"): that option's ``text`` and
    ``choice`` (``none`` when the option adds no requirement). Anything else: the operator's
    own words, as typed."""
    rules = rules or load_clarify_rules()
    text = (raw or "").strip()
    key = option_key(text)
    if key.lower() in (w.lower() for w in RECOMMENDED_WORDS) and question.get("recommended"):
        key = question["recommended"]
    open_key = rules.open_option["key"]
    if not text or key.lower() == open_key.lower() or text in rules.open_option.values():
        return {"text": "", "choice": open_key if text else "", "open": True, "none": False}
    option = _option(question, key) or next((o for o in question.get("options", ()) if o["text"] == text), None)
    if option is None:
        return {"text": text, "choice": "", "open": False, "none": False}
    return {"text": option["text"], "choice": option["key"], "open": False, "none": bool(option.get("none"))}


def entries_of(rounds: list[dict[str, Any]], rules: ClarifyRules | None = None) -> list[dict[str, Any]]:
    """Every question asked in ``rounds`` with its ``round`` and resolved ``answer``, in the
    order asked."""
    out = []
    for round_ in rounds:
        for question in round_["questions"]:
            raw = (round_.get("answers") or {}).get(question["id"], "")
            out.append(
                {**question, "round": round_["round"], "raw": raw, "answer": resolve_answer(question, raw, rules)}
            )
    return out


def answered(entry: dict[str, Any]) -> bool:
    return not entry["answer"]["open"]


@functools.cache
def _served_people() -> dict[str, dict[str, list[str]]]:
    data = yaml.safe_load((INTERVIEW_FILES / "served_people.yaml").read_text(encoding="utf-8")) or {}
    return {lang: {k: [str(w) for w in (data.get(lang) or {}).get(k) or ()] for k in ("placeholders", "words")}
            for lang in LANGUAGES}  # fmt: skip


def served_word(entries: list[dict[str, Any]], language: str, idea: str = "") -> str:
    """The operator's own word for the people the system serves: the first word of
    ``served_people.yaml`` found in the idea or in an answer the operator typed (in the order
    asked; English as a whole word), "" when none names them."""
    words = _served_people()[language]["words"]
    typed = [idea, *(e["answer"]["text"] for e in entries if answered(e) and not e["answer"]["choice"])]
    for text in typed:
        found = [(m.start(), w) for w in words if (m := _word_in(w, text, language))]
        if found:
            return min(found)[1]
    return ""


def _word_in(word: str, text: str, language: str) -> re.Match[str] | None:
    if language == "zh":
        return re.search(re.escape(word), text)
    return re.search(rf"(?<![A-Za-z]){re.escape(word)}(?![A-Za-z])", text, re.IGNORECASE)


def answer_clauses(entry: dict[str, Any], served: str, language: str) -> list[str]:
    """The thoughts of ``entry``'s answer for the draft: a typed answer split into clauses; a
    picked option's text split only into its sentences (a clause cut at its comma loses its
    subject: "权限不同"), its generic "people served" replaced by ``served`` (``served_word``)."""
    return [clause for _, clause in answer_steps(entry, served, language)]


def answer_steps(entry: dict[str, Any], served: str, language: str) -> list[tuple[str, str]]:
    """``answer_clauses`` with the operator's step number of each (``ears_grammar.numbered_clauses``)."""
    return numbered_clauses(
        answer_text(entry, served, language), load_grammar()[language], whole=bool(entry["answer"]["choice"])
    )


def answer_text(entry: dict[str, Any], served: str, language: str) -> str:
    """``entry``'s answer, a picked option's generic "people served" replaced by ``served``."""
    text = str(entry["answer"]["text"])
    if entry["answer"]["choice"] and served:
        for placeholder in _served_people()[language]["placeholders"]:
            word = served[:1].upper() + served[1:] if placeholder[:1].isupper() else served
            text = text.replace(placeholder, word)
    return text


# -- the engine on the answers -------------------------------------------------------------------
REQUIREMENTS_HEADING = {"en": "Requirements", "zh": "需求"}


def _answers_document(entries: list[dict[str, Any]], language: str) -> tuple[str, dict[int, str]]:
    """The answers as one Markdown document (one bullet per answer line) and which entry id
    each line number holds."""
    lines = ["# Interview", "", f"## {REQUIREMENTS_HEADING[language]}", ""]
    owner: dict[int, str] = {}
    aside = {_bare(statement) for statement in set_aside(entries)}
    grammar = load_grammar()[language]
    served = served_word(entries, language)
    for entry in entries:
        if not answered(entry) or entry["answer"]["none"] or _restates_a_side(entry):
            continue
        for line in answer_text(entry, served, language).splitlines():
            line = _without(line, aside, grammar) if aside else line
            if line.strip():
                lines.append(f"- {line.strip()}")
                owner[len(lines)] = entry["id"]
    return "\n".join(lines) + "\n", owner


def _bare(text: str) -> str:
    return re.sub(r"[\s.。,，;；!！?？]", "", text)


def _without(line: str, aside: set[str], grammar: Any) -> str:
    """``line`` without its clauses a settled contradiction set aside (joined again with the
    language's clause separator); unchanged when none is."""
    parts = clauses(line, grammar)
    kept = [c for c in parts if _bare(c) not in aside]
    return line if len(kept) == len(parts) else ("；" if grammar.end == "。" else "; ").join(kept)


def _sides(entry: dict[str, Any]) -> list[str]:
    return [o["withdraws"] for o in entry.get("options", ()) if o.get("withdraws")]


def _chosen_side(entry: dict[str, Any]) -> str:
    chosen: dict[str, Any] = next(
        (o for o in entry.get("options", ()) if o["key"] == entry["answer"].get("choice")), {}
    )
    return str(chosen.get("withdraws") or "")


def _restates_a_side(entry: dict[str, Any]) -> bool:
    """A contradiction follow-up answered by picking one of its two statements: the answer only
    restates what the operator said before, so it is not read again as a new statement."""
    return entry.get("kind") == "follow_up" and bool(_sides(entry)) and bool(_chosen_side(entry))


def set_aside(entries: list[dict[str, Any]]) -> list[str]:
    """The statements answered contradiction follow-ups set aside: the side not picked, or
    both when the operator answered in their own words. The engine no longer reads them, so
    a settled contradiction is never asked again the other way round."""
    out: list[str] = []
    for entry in entries:
        if entry.get("kind") != "follow_up" or not answered(entry) or not _sides(entry):
            continue
        withdrawn = _chosen_side(entry)
        out += [withdrawn] if withdrawn else _sides(entry)
    return out


def flagged(entries: list[dict[str, Any]], language: str, rules: ClarifyRules) -> list[tuple[str, QualityFinding]]:
    """``(entry id, finding)`` for each finding of the requirement-quality engine on the
    answers whose category draws a follow-up (``follow_up_categories``), in line order."""
    text, owner = _answers_document(entries, language)
    if not owner:
        return []
    document = parse_document(text)
    document.language = language
    findings = check_document(document, default_rules(), tuple(sorted(rules.follow_up_categories)))
    found = [(owner[f.line], f) for f in findings if f.line in owner]
    if "contradiction" in rules.follow_up_categories:
        paired = {f.quote for _, f in found if f.pair}
        found += [m for m in disagreements(entries, language) if m[1].quote not in paired]
    return found


DISAGREEMENT_RULE = "answers-disagree"
"""The rule id of two answers' clauses that say the same thing with other figures or the
opposite polarity (``ears.relation``), as a ``contradiction`` finding pair."""


def disagreements(entries: list[dict[str, Any]], language: str) -> list[tuple[str, QualityFinding]]:
    """``(entry id, finding)`` twice for each pair of clauses of two different questions'
    answers that ``ears.relation`` finds in conflict (what the engine's line-by-line rules do
    not see: "at most 3" in one answer, "at most 5" in another)."""
    served = served_word(entries, language)
    seen: list[tuple[str, str]] = []
    out: list[tuple[str, QualityFinding]] = []
    for entry in entries:
        if entry.get("kind", "question") != "question" or not answered(entry) or entry["answer"]["none"]:
            continue
        for clause in answer_clauses(entry, served, language):
            for other_id, other in seen:
                if other_id != entry["id"] and relation(other, clause, language) == "conflict":
                    pair = f"answers:{len(out)}"
                    out += [(other_id, _disagreement(other, pair)), (entry["id"], _disagreement(clause, pair))]
            seen.append((entry["id"], clause))
    return out


def _disagreement(clause: str, pair: str) -> QualityFinding:
    return QualityFinding(rule=DISAGREEMENT_RULE, category="contradiction", severity="major", line=0, section="",
                          quote=clause, message="", suggestion="", pair=pair)  # fmt: skip


# -- follow-ups ------------------------------------------------------------------------------------
def follow_up_row(finding: QualityFinding, language: str, rules: ClarifyRules) -> dict[str, Any]:
    """The first ``follow_ups.yaml`` row that applies to ``finding`` (see that file)."""
    matched = finding.quote.lower()
    for row in rules.follow_ups:
        if row.get("rules") and finding.rule not in row["rules"]:
            continue
        if row.get("categories") and finding.category not in row["categories"]:
            continue
        words = row["matches"][language]
        if words and not any(w in matched for w in words):
            continue
        return row
    return rules.follow_ups[-1]


def _question_text(finding: QualityFinding, language: str) -> str:
    question = finding.change.get("question")
    if isinstance(question, str) and question.strip(" ：:"):
        return question
    return finding.suggestion


def _pairs(found: list[tuple[str, QualityFinding]]) -> dict[str, list[tuple[str, QualityFinding]]]:
    pairs: dict[str, list[tuple[str, QualityFinding]]] = {}
    for entry_id, finding in found:
        if finding.pair:
            pairs.setdefault(finding.pair, []).append((entry_id, finding))
    return pairs


def _options(row: dict[str, Any], language: str, values: dict[str, str]) -> list[dict[str, Any]]:
    out = []
    for option in row.get("options", ()):
        shaped = {"key": option["key"], "text": option[language].format_map(values)}
        if option.get("none"):
            shaped["none"] = True
        if option.get("withdraws"):
            shaped["withdraws"] = values[option["withdraws"]]
        out.append(shaped)
    return out


def _follow_up_question(
    source: dict[str, Any], finding: QualityFinding, language: str, rules: ClarifyRules, values: dict[str, str]
) -> dict[str, Any]:
    row = follow_up_row(finding, language, rules)
    text = row["question"][language].format_map(values) if "question" in row else _question_text(finding, language)
    return {
        "kind": "follow_up",
        "root": source.get("root") or source["question_id"],
        "text": text,
        "section": source["section"],
        "category": row["category"],
        "impact": source.get("impact", 3),
        "topic": source.get("topic", ""),
        "options": _options(row, language, values),
        "recommended": row.get("recommended") or "",
        "reason": row["reason"][language],
        "follows": source["id"],
        "quote": "" if finding.pair else finding.quote,
        "rule": finding.rule,
        "key": f"{finding.rule}:{values.get('earlier', '')}:{finding.quote}",
    }


def needed_follow_ups(entries: list[dict[str, Any]], language: str, rules: ClarifyRules) -> list[dict[str, Any]]:
    """Follow-ups the answers call for and that were not asked yet: one per flagged clause
    (vague, unmeasurable, escape clause, personal data without a basis...) and one per
    contradiction between two answers (asked on the later one). Each is a question without
    its ``id`` / ``question_id`` yet (``plan_round`` numbers them)."""
    by_id = {e["id"]: e for e in entries}
    asked = {e.get("key") for e in entries if e.get("kind") == "follow_up"}
    asked_texts = {e["text"] for e in entries if e.get("kind") == "follow_up"}
    found = flagged(entries, language, rules)
    out: list[dict[str, Any]] = []
    for entry_id, finding in found:
        if finding.pair or (
            finding.category in rules.settled_by_any_answer and settled_elsewhere(finding, entry_id, entries, language)
        ):
            continue
        values = {"quote": finding.quote, "match": finding.quote}
        out.append(_follow_up_question(by_id[entry_id], finding, language, rules, values))
    for members in _pairs(found).values():
        ordered = sorted(members, key=lambda m: entries.index(by_id[m[0]]))
        (first_id, first), (last_id, last) = ordered[0], ordered[-1]
        if first_id == last_id:
            continue
        earlier, later = _whole(first.quote, by_id[first_id], language), _whole(last.quote, by_id[last_id], language)
        values = {"earlier": earlier, "later": later, "quote": later, "match": later}
        out.append(_follow_up_question(by_id[last_id], last, language, rules, values))
    fresh = [q for q in out if q["key"] not in asked and q["text"] not in asked_texts]
    return list({q["text"]: q for q in reversed(fresh)}.values())[::-1]


def _whole(quote: str, entry: dict[str, Any], language: str) -> str:
    """The operator's whole statement that ``quote`` (a clause the engine cut at a comma) comes
    from: the draft's clause of ``entry``'s answer holding it ("被服务的人、工作人员，以及管理
    工作人员账号的管理员", not "被服务的人、工作人员"), so a quote is never cut short and
    withdrawing it removes exactly the draft's clause; ``quote`` when none holds it."""
    bare = _bare(quote)
    grammar = load_grammar()[language]
    return next((c for c in clauses(entry["answer"]["text"], grammar) if bare and bare in _bare(c)), quote)


def settled_elsewhere(finding: QualityFinding, entry_id: str, entries: list[dict[str, Any]], language: str) -> bool:
    """True when another answer (typed, or a picked option's text) settles ``finding``: the
    engine no longer flags the quoted clause once that answer is read beside it (round 1's
    option "注册时取得本人同意，…1 年后删除；只有本人…可以查看" settles the personal-data
    follow-up on "填写姓名和手机号提交"), so the follow-up is not asked."""
    for other in entries:
        if other["id"] == entry_id or not answered(other) or other["answer"]["none"]:
            continue
        text = other["answer"]["text"].replace("\n", "；")
        document = parse_document(f"# Interview\n\n## {REQUIREMENTS_HEADING[language]}\n\n- {finding.quote}；{text}\n")
        document.language = language
        again = check_document(document, default_rules(), (finding.category,))
        if not any(f.rule == finding.rule and f.quote == finding.quote for f in again):
            return True
    return False


# -- coverage and ranking ---------------------------------------------------------------------------
def _category_status(questions: list[dict[str, Any]], entries: list[dict[str, Any]], pending: set[str]) -> str:
    """``missing``: nothing of the category answered; ``clear``: every question of the
    category answered and no follow-up pending on it; else ``partial``."""
    done = [e for e in entries if answered(e)]
    if not done:
        return "missing"
    answered_ids = {e["question_id"] for e in done}
    left_open = any(e.get("kind") == "follow_up" and not answered(e) for e in entries)
    if pending or left_open or any(q["id"] not in answered_ids for q in questions):
        return "partial"
    return "clear"


def coverage_map(
    project_type_questions: list[dict[str, Any]],
    entries: list[dict[str, Any]],
    follow_ups: list[dict[str, Any]],
    language: str,
    rules: ClarifyRules | None = None,
) -> list[dict[str, Any]]:
    """The coverage map (module docstring): one row per taxonomy category the project type
    asks about, or that an answer or follow-up touches."""
    rules = rules or load_clarify_rules()
    rows = []
    for category in rules.categories:
        cid = category["id"]
        questions = [q for q in project_type_questions if q.get("category") == cid]
        mine = [e for e in entries if e.get("category") == cid]
        pending = {f["key"] for f in follow_ups if f["category"] == cid}
        if not questions and not mine and not pending:
            continue
        rows.append(
            {
                "category": cid,
                "label": category["label"][language],
                "status": _category_status(questions, mine, pending),
                "answered": sum(1 for e in mine if answered(e)),
                "asked": len(mine),
            }
        )
    return rows


def rank(candidates: list[dict[str, Any]], coverage: list[dict[str, Any]], rules: ClarifyRules) -> list[dict[str, Any]]:
    """``candidates`` by priority: impact times the uncertainty of their category (a
    follow-up counts as ``missing``); follow-ups first on a tie, then the order given."""
    status = {row["category"]: row["status"] for row in coverage}

    def priority(item: tuple[int, dict[str, Any]]) -> tuple[int, int, int]:
        index, question = item
        follow_up = question.get("kind") == "follow_up"
        uncertainty = rules.uncertainty["missing" if follow_up else status.get(question["category"], "missing")]
        return (-int(question.get("impact", 1)) * uncertainty, 0 if follow_up else 1, index)

    return [q for _, q in sorted(enumerate(candidates), key=priority)]


def _base_question(question: dict[str, Any], style: str, language: str, rules: ClarifyRules) -> dict[str, Any]:
    return {
        "kind": "question",
        "question_id": question["id"],
        "text": question[style][language],
        "section": question["section"],
        "category": question.get("category", ""),
        "impact": int(question.get("impact", 1)),
        "topic": (question.get("topic") or {}).get(language, ""),
        "options": [{"key": o["key"], "text": o[language], **({"none": True} if o.get("none") else {})}
                    for o in question.get("options", ())],
        "recommended": question.get("recommended") or "",
        "reason": (question.get("reason") or {}).get(language, ""),
    }  # fmt: skip


def contradicts_answers(text: str, entries: list[dict[str, Any]], language: str) -> bool:
    """True when the requirement-quality engine finds ``text`` (an option) in contradiction
    with an answer already given (``contradiction`` findings paired with its line)."""
    document_text, owner = _answers_document(entries, language)
    if not owner:
        return False
    document = parse_document(document_text + f"- {text}\n")
    document.language = language
    last = document_text.count("\n") + 1
    findings = check_document(document, default_rules(), ("contradiction",))
    return any(f.line == last and f.pair for f in findings)


def consistent_recommendation(question: dict[str, Any], entries: list[dict[str, Any]], language: str) -> dict[str, Any]:
    """``question`` as offered, its recommendation dropped (with the reason given for it) when
    the recommended option contradicts what the operator already said: a flow needing text
    messages is never offered "不对接其他系统" as the recommended answer (issue 27)."""
    option = _option(question, question.get("recommended") or "")
    if option is None or not contradicts_answers(option["text"], entries, language):
        return question
    return {**question, "recommended": "", "reason": ""}


def _numbered(
    question: dict[str, Any], number: int, entries: list[dict[str, Any]], rules: ClarifyRules, language: str
) -> dict[str, Any]:
    if question["kind"] == "follow_up":
        count = sum(1 for e in entries if e.get("root") == question["root"]) + 1
        question = {**question, "question_id": f"{question['root']}-f{count}"}
    open_option = {"key": rules.open_option["key"], "text": rules.open_option[language], "open": True}
    return {**question, "id": f"r{number}-{question['question_id']}", "options": [*question["options"], open_option]}


def _within_limits(
    follow_ups: list[dict[str, Any]], entries: list[dict[str, Any]], rules: ClarifyRules
) -> list[dict[str, Any]]:
    """Follow-ups kept: at most ``max_follow_ups`` per question answered, counting those asked."""
    counts: dict[str, int] = {}
    for entry in entries:
        if entry.get("kind") == "follow_up":
            counts[entry["root"]] = counts.get(entry["root"], 0) + 1
    kept = []
    for question in follow_ups:
        if counts.get(question["root"], 0) < rules.max_follow_ups:
            counts[question["root"]] = counts.get(question["root"], 0) + 1
            kept.append(question)
    return kept


def _contradictions_over_limits(
    needed: list[dict[str, Any]], kept: list[dict[str, Any]], entries: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Contradiction follow-ups the limits left out (``needed`` not ``kept``) whose statements
    no contradiction asked already names: they stay pending, an open point naming both."""
    asked = [e for e in entries if e.get("kind") == "follow_up"]
    named = {o["withdraws"] for e in asked for o in e["options"] if o.get("withdraws")}
    out = []
    for question in needed:
        statements = {o["withdraws"] for o in question["options"] if o.get("withdraws")}
        if question not in kept and statements and not statements & named:
            out.append(question)
    return out


def plan_round(
    questions: list[dict[str, Any]],
    rounds: list[dict[str, Any]],
    number: int,
    style: str,
    language: str,
    rules: ClarifyRules | None = None,
) -> dict[str, Any]:
    """Round ``number`` of the interview for a project type's ``questions`` after ``rounds``:
    ``{"round", "style", "questions": [at most max_questions, ranked], "coverage",
    "pending_follow_ups": [follow-ups not asked (over the limits)], "last": bool}``. No
    questions when every category is covered, the rounds are used up, or the operator left
    the whole previous round unanswered (the rest stays open points)."""
    rules = rules or load_clarify_rules()
    entries = entries_of(rounds, rules)
    needed = needed_follow_ups(entries, language, rules)
    follow_ups = _within_limits(needed, entries, rules)
    # A contradiction over the limits is never dropped: it stays an open point naming both.
    over = _contradictions_over_limits(needed, follow_ups, entries)
    coverage = coverage_map(questions, entries, follow_ups, language, rules)
    asked = {e["question_id"] for e in entries}
    fresh = [_base_question(q, style, language, rules) for q in questions if q["id"] not in asked]
    fresh = [consistent_recommendation(q, entries, language) for q in fresh]
    stopped = number > rules.max_rounds or bool(rounds and not any(answered(e) for e in entries_of(rounds[-1:], rules)))
    chosen = [] if stopped else rank(follow_ups + fresh, coverage, rules)[: rules.max_questions]
    numbered: list[dict[str, Any]] = []
    for question in chosen:
        numbered.append(_numbered(question, number, entries + numbered, rules, language))
    left = [q for q in follow_ups + fresh if q not in chosen]
    return {
        "round": number,
        "style": style,
        "questions": numbered,
        "coverage": coverage,
        "pending_follow_ups": [q for q in follow_ups if q not in chosen] + over,
        "last": not numbered or not left or number >= rules.max_rounds,
    }
