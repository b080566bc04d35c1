"""The draft from the interview: numbered requirements in EARS form, one thought each, built
only from the operator's words (issue 27 item 6; seed 002 phase 4 req_writer).

- Each answer splits into sentences and clauses (``ears_grammar``, ``interview_files/
  ears.yaml``: one thought per requirement); each clause becomes ``FR-NNN`` in EARS form
  ("当…时，系统应…" / "When …, the system shall …"). Only the EARS keywords of the templates
  (and the ``refined`` marker) are added; every other word is the operator's.
- A follow-up's answer refines the clause it followed up (``quote``): the clause stays in the
  operator's words and the answer is added after it (``refined``), never put in its place.
- A contradiction answered with one of its two statements withdraws the other; answered in
  the operator's own words, that answer stands instead of both; left open (or never asked),
  neither statement is a requirement and the open point names both.
- Two clauses of different answers that say the same thing (``ears_grammar.relation``) are
  one requirement (the later answer's id in ``also``); two that are alike but differ in a
  figure or in polarity are both set aside as an open point naming both answers.
- What was not answered stays an open point (the question), never an invented answer; an
  option marked ``none`` adds no requirement.
- ``Clarifications`` logs every question and answer by round, as Spec Kit's clarify does.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from teamclaw.workflows.clarify import ClarifyRules, answer_steps, answered, load_clarify_rules, served_word
from teamclaw.workflows.ears_grammar import (
    Grammar,
    ears,
    is_plan,
    load_grammar,
    relation,
)
from teamclaw.workflows.ears_grammar import (
    clauses as clauses,  # re-exported: callers split answers with ears.clauses
)


# -- the draft --------------------------------------------------------------------------------
def _same(a: str, b: str) -> bool:
    strip = re.compile(r"[\s.。,，;；!！?？]")
    a, b = strip.sub("", a), strip.sub("", b)
    return bool(a and b) and (a == b or a in b or b in a)


def _chosen(entry: dict[str, Any]) -> dict[str, Any]:
    return next((o for o in entry.get("options", ()) if o["key"] == entry["answer"]["choice"]), {})


def _statements(question: dict[str, Any]) -> list[str]:
    """A contradiction follow-up's two statements (its options' ``withdraws``), else []."""
    return [o["withdraws"] for o in question.get("options", ()) if o.get("withdraws")]


@dataclass
class Settled:
    """What the follow-ups did to the operator's clauses: ``refined`` (the flagged quote and
    the follow-up's answer, in the order answered), ``withdrawn`` (statements a contradiction's
    answer set aside), ``contested`` (the two statements of each contradiction not settled)
    and ``resolutions`` (ids of follow-ups whose own answer is a requirement of its own)."""

    refined: list[tuple[str, str]]
    withdrawn: list[str]
    contested: list[str]
    resolutions: set[str]


def settle(entries: list[dict[str, Any]], pending: list[dict[str, Any]]) -> Settled:
    """Read the follow-ups: a follow-up answered on a flagged clause refines that clause (the
    operator's words stay, the answer is added); a contradiction answered with one of the two
    statements withdraws the other, answered in the operator's own words withdraws both (the
    answer stands instead); a contradiction left open or not asked keeps both statements out
    of the requirements (an open point names both)."""
    settled = Settled([], [], [], set())
    for entry in (e for e in entries if e.get("kind") == "follow_up"):
        statements = _statements(entry)
        if not answered(entry):
            settled.contested += statements
        elif statements:
            withdraws = _chosen(entry).get("withdraws")
            settled.withdrawn += [withdraws] if withdraws else statements
            settled.resolutions |= set() if withdraws else {entry["id"]}
        elif entry.get("quote"):
            settled.refined.append((entry["quote"], entry["answer"]["text"]))
        else:
            settled.resolutions.add(entry["id"])
    for question in pending:
        settled.contested += _statements(question)
    return settled


def dropped_clauses(entries: list[dict[str, Any]], pending: list[dict[str, Any]] | None = None) -> list[str]:
    """The operator's clauses kept out of the requirements: withdrawn by a contradiction's
    answer, or contested by a contradiction not settled. A refined clause is never dropped."""
    settled = settle(entries, pending or [])
    return settled.withdrawn + settled.contested


def _candidates(
    entries: list[dict[str, Any]], settled: Settled, grammar: Grammar, language: str
) -> list[dict[str, Any]]:
    """Every clause the operator gave or chose, with the refinements its follow-ups added, in
    the order asked; a follow-up's answer only when it stands as a requirement of its own (a
    contradiction resolved in the operator's words, or a refinement whose clause is gone)."""
    out: list[dict[str, Any]] = []
    served = served_word(entries, language)
    for entry in entries:
        if not answered(entry) or entry["answer"]["none"]:
            continue
        if entry.get("kind") == "follow_up" and entry["id"] not in settled.resolutions:
            continue
        actor = ""
        for step, clause in answer_steps(entry, served, language):
            stated, actor = with_actor(clause, actor, grammar)
            if not any(_same(clause, gone) for gone in settled.withdrawn + settled.contested):
                out.append({"entry": entry, "clause": clause, "stated": stated, "refinements": [], "also": [],
                            "step": step, "plan": is_plan(clause, grammar)})  # fmt: skip
    for quote, refinement in settled.refined:
        target = next((c for c in out if _same(c["clause"], quote)), None)
        if target is not None:
            target["refinements"].append(refinement)
    return out


def _step_actor(clause: str, grammar: Grammar) -> str:
    """The person whose own step ``clause`` is (a ``responses`` row whose template starts with
    ``{actor}``: "患者到诊所报到" -> 患者), else ""."""
    for pattern, template in grammar.responses:
        found = pattern.match(clause)
        if found and template.startswith("{actor}") and found.groupdict().get("actor"):
            return found.group("actor")
    return ""


def with_actor(clause: str, actor: str, grammar: Grammar) -> tuple[str, str]:
    """``(clause, actor)``: a clause without a subject of its own that would be stated as "系统应
    满足：…" takes the person of the step before it in the same answer ("患者选择医生，…，到诊
    所报到" -> "患者到诊所报到": the patient's step, not the system's); the actor is the
    operator's own word. Returns the clause as kept and the actor for the next clause."""
    own = _step_actor(clause, grammar)
    if own or not actor:
        return clause, own
    fallback = grammar.responses[-1][1].format(what=clause.strip().rstrip(".。")) + grammar.end
    if ears(clause, grammar).lower() != fallback.lower():
        return clause, actor
    candidate = actor + clause
    return (candidate, actor) if _step_actor(candidate, grammar) == actor else (clause, actor)


def _merge(candidates: list[dict[str, Any]], language: str) -> tuple[list[dict[str, Any]], list[tuple[dict, dict]]]:
    """The candidates said once: a clause that says the same as an earlier one is folded
    into it (its source kept in ``also``); two that conflict are both set aside as a pair."""
    kept: list[dict[str, Any]] = []
    conflicts: list[tuple[dict[str, Any], dict[str, Any]]] = []
    for candidate in candidates:
        relations = ((k, relation(k["clause"], candidate["clause"], language)) for k in kept)
        match = next((pair for pair in relations if pair[1] != "different"), None)
        if match is None:
            kept.append(candidate)
        elif match[1] == "same":
            match[0]["also"].append(candidate["entry"]["id"])
            match[0]["refinements"] += [r for r in candidate["refinements"] if r not in match[0]["refinements"]]
        else:
            conflicts.append((match[0], candidate))
    gone = [id(c) for pair in conflicts for c in pair]
    return [k for k in kept if id(k) not in gone], conflicts


def _text(candidate: dict[str, Any], grammar: Grammar) -> str:
    text = ears(candidate.get("stated") or candidate["clause"], grammar, candidate.get("step", ""))
    if not candidate["refinements"]:
        return text
    body = text[: -len(grammar.end)] if grammar.end and text.endswith(grammar.end) else text
    refinement = "; ".join(r.strip().rstrip(".。") for r in candidate["refinements"])
    return grammar.refined.format(requirement=body, refinement=refinement) + grammar.end


def draft(
    entries: list[dict[str, Any]], pending: list[dict[str, Any]], sections: list[str], language: str
) -> tuple[list[dict[str, Any]], list[str]]:
    """``(requirements, open points)`` of the draft. Requirements: ``[{id: "FR-001", text,
    section, source: entry id, clause, also: [entry ids saying the same], refinements}]`` by
    section (in ``sections`` order; an entry whose section is not listed goes by its topic, as
    the unknown type's custom sections do), then the order asked. Open points: the questions
    left open, the follow-ups not asked, and each pair of answers that disagree, naming both."""
    grammar = load_grammar()[language]
    settled = settle(entries, pending)
    kept, conflicts = _merge(_candidates(entries, settled, grammar, language), language)
    kept = [c for c in kept if not c["plan"]]
    order = {section: index for index, section in enumerate(sections)}

    def place(candidate: dict[str, Any]) -> int:
        entry = candidate["entry"]
        return order.get(entry["section"], order.get(entry.get("topic", ""), len(order)))

    out = [
        {"id": f"FR-{n:03d}", "text": _text(c, grammar), "section": c["entry"]["section"],
         "source": c["entry"]["id"], "clause": c["clause"], "also": c["also"], "refinements": c["refinements"]}
        for n, c in enumerate(sorted(kept, key=place), start=1)
    ]  # fmt: skip
    return out, open_points(entries, pending) + [_conflict_point(a, b, language) for a, b in conflicts]


def plan(entries: list[dict[str, Any]], pending: list[dict[str, Any]], language: str) -> list[str]:
    """The operator's rollout and plan statements (``ears_grammar.is_plan``: "诊所护士长试用一
    周", "没有问题就上线"), in their own words and in the order given: the draft's plan section
    (实施计划 / Rollout plan), never "系统应满足：…"."""
    grammar = load_grammar()[language]
    kept, _ = _merge(_candidates(entries, settle(entries, pending), grammar, language), language)
    return [c["clause"] + grammar.end for c in kept if c["plan"]]


def _conflict_point(earlier: dict[str, Any], later: dict[str, Any], language: str) -> str:
    return load_clarify_rules().titles["conflict"][language].format(
        earlier=earlier["clause"], earlier_question=earlier["entry"]["text"],
        later=later["clause"], later_question=later["entry"]["text"],
    )  # fmt: skip


def requirements(
    entries: list[dict[str, Any]], sections: list[str], language: str, pending: list[dict[str, Any]] | None = None
) -> list[dict[str, Any]]:
    """The numbered requirements of ``draft``."""
    return draft(entries, pending or [], sections, language)[0]


def open_points(entries: list[dict[str, Any]], pending: list[dict[str, Any]]) -> list[str]:
    """The questions left open: every question not answered (or answered with the open
    option), and every follow-up the interview had no room to ask."""
    texts = [e["text"] for e in entries if not answered(e)]
    texts += [q["text"] for q in pending]
    return list(dict.fromkeys(texts))


def _answer_line(entry: dict[str, Any], rules: ClarifyRules, language: str) -> str:
    titles = rules.titles
    if not answered(entry):
        return titles["open"][language]
    answer = entry["answer"]
    choice = answer["choice"]
    if not choice:
        return entry["raw"].strip().replace("\n", " ")
    which = "recommended" if choice == entry.get("recommended") else "option"
    return (
        f"{answer['text']}（{titles[which][language].format(key=choice)}）"
        if language == "zh"
        else (f"{answer['text']} ({titles[which][language].format(key=choice)})")
    )


def clarifications(entries: list[dict[str, Any]], language: str, rules: ClarifyRules | None = None) -> list[str]:
    """The Clarifications section's lines: a sub-heading per round, then ``- Q: … → A: …``."""
    rules = rules or load_clarify_rules()
    titles = rules.titles
    lines = ["", f"## {titles['clarifications'][language]}"]
    current = None
    for entry in entries:
        if entry["round"] != current:
            current = entry["round"]
            lines += ["", f"### {titles['round'][language].format(number=current)}", ""]
        sep = "：" if language == "zh" else ": "
        lines.append(f"- {titles['question'][language]}{sep}{entry['text']} → "
                     f"{titles['answer'][language]}{sep}{_answer_line(entry, rules, language)}")  # fmt: skip
    return lines
