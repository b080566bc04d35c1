"""Operators answering what a running workflow asks them (PRD §4.6 ``waiting_user``), from
any process: seed 002's interview questions and project type, the confirm-mode decisions
(§6.5) and the phase 5 choice (modify / review / end).

The waiting agent lives in the runtime of whichever worker runs the task
(``ExecutionCall.ask_operator``); what it asks is a ``ToolConfirmation`` row of kind
``input`` whose ``args`` hold the request and the JSON Schema of its answer
(``answer_schema``). ``give`` checks a part of the answer against that request, merges it
into what was given before (decisions can be taken one by one), and once the answer is
complete writes it (a compare-and-swap from ``pending`` to ``answered``) and hands it to the
runtime the way a tool confirmation's decision is (``runs.confirmations.deliver``).
"""

from __future__ import annotations

import re
from typing import Any

from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy as _lazy

from monitoring.access import can_operate_task, visible_tasks
from monitoring.models import Task, ToolConfirmation
from runs.confirmations import ConfirmationError, deliver
from runs.tasks import DocumentError, check_budget, validate_document
from teamclaw.errors import DomainError, InvalidField, NotFound
from teamclaw.labels import label_lazy, worded
from teamclaw.plain_text import hidden_character_problem
from teamclaw.runtime.schemas import compile_schema, schema_errors
from teamclaw.workflows.clarify import option_key
from teamclaw.workflows.document import parse_document

SECTIONS = {"answers": ("project_type", "interview"), "decisions": ("decisions",), "next": ("next_action",)}
"""Which requests each part of the API answers: ``/answers``, ``/decisions``, ``/next``."""
MAX_ANSWER_CHARS = 4000
WORD = re.compile(r"\w")
"""A statement with a letter, digit or CJK character in it (``#`` alone is no requirement)."""
WHAT = {
    "project_type": "for the project type",
    "interview": "the interview's questions",
    "decisions": "for decisions on the review",
    "next_action": "what to do with the draft",
}
"""How the messages name what a task asks."""
OPTION_KEY = re.compile(r"^[A-Za-z]$")
"""An interview answer that names an option by its key ("B", "b.", "option B", "选项 B",
"选项：Ｂ"), once read by ``clarify.option_key``."""
BLANK_KEYWORDS = ("pattern", "minLength")
"""Schema refusals that mean "may not be blank" for a text answer."""


def pending_inputs(task_id: str) -> list[ToolConfirmation]:
    """What the task's agents wait for an operator to answer, oldest first."""
    return list(
        ToolConfirmation.objects.filter(task_id=task_id, kind="input", status="pending").order_by("created_at", "id")
    )


def input_view(row: ToolConfirmation) -> dict[str, Any]:
    """A pending input as the API and the page show it: ``{id, what, role, request, given,
    expires_at}``; ``given`` is the part of the answer already taken (decisions one by one)."""
    request = {k: v for k, v in (row.args or {}).items() if k != "answer_schema"}
    return {
        "id": row.id,
        "what": row.tool,
        "role": row.role,
        "request": request,
        "given": row.answer or {},
        "created_at": row.created_at.timestamp(),
        "expires_at": row.expires_at.timestamp(),
    }


def _merge(given: dict[str, Any], part: dict[str, Any]) -> dict[str, Any]:
    merged = dict(given)
    for key, value in part.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = {**merged[key], **value}
        else:
            merged[key] = value
    return merged


def _known_ids(row: ToolConfirmation, section: str) -> dict[str, list[str]]:
    """The ids an answer may name, by answer key, in the order asked: ``answers`` ->
    question ids, ``decisions`` -> item ids."""
    request = row.args or {}
    if section == "answers":
        return {"answers": [q["id"] for q in request.get("questions", [])]}
    if section == "decisions":
        return {"decisions": [i["id"] for i in request.get("items", [])]}
    return {}


def _check_part(row: ToolConfirmation, section: str, part: dict[str, Any]) -> None:
    """Refuse ids the request does not hold and over-long or binary texts, with the field."""
    for key, ids in _known_ids(row, section).items():
        values = part.get(key)
        if not isinstance(values, dict):
            continue
        for item_id, value in values.items():
            field = f"{key}.{item_id}"
            if item_id not in ids:
                raise InvalidField(
                    f"is not waiting for an answer; the pending ones are {', '.join(sorted(ids))}", field
                )
            if isinstance(value, str) and (len(value) > MAX_ANSWER_CHARS or "\x00" in value):
                raise InvalidField(f"must be text of at most {MAX_ANSWER_CHARS:,} characters", field)
            if key == "answers" and isinstance(value, str):
                _check_interview_answer(row, item_id, value, field)


def _check_interview_answer(row: ToolConfirmation, question_id: str, value: str, field: str) -> None:
    """An interview answer (issue 27 item 5) is left empty (the question stays open), one of
    the question's option keys, or words: a text of blanks and punctuation only, or a lone
    letter that is none of the question's options, is refused naming the field; so is a
    control or bidirectional control character (``teamclaw.plain_text``), as in every other
    text an operator gives: the draft keeps the operator's words as typed."""
    if reason := hidden_character_problem(value):
        raise InvalidField(reason, field)
    if value and not WORD.search(value):
        raise InvalidField(_("holds no words: write an answer, or leave it empty to keep the question open"), field)
    questions = (row.args or {}).get("questions", [])
    question: dict[str, Any] = next((q for q in questions if q.get("id") == question_id), {})
    keys = [str(o.get("key", "")) for o in question.get("options") or () if o.get("key")]
    letter = OPTION_KEY.match(option_key(value))
    if keys and letter and letter.group(0).lower() not in {k.lower() for k in keys}:
        raise InvalidField(
            _("“%(given)s” is not one of the options (%(keys)s)") % {"given": value.strip(), "keys": ", ".join(keys)},
            field,
        )


def _check_edit(task: Task, part: dict[str, Any]) -> None:
    """Phase 5: ``markdown`` comes only with ``modify``, and an edited draft passes the checks
    a document gets at the start (size in bytes, binary, the token budget)."""
    if part.get("action") != "modify":
        if "markdown" in part:
            raise InvalidField("is only taken with the action modify; nothing was saved", "markdown")
        return
    markdown = part.get("markdown")
    if isinstance(markdown, str) and markdown.strip():
        try:
            check_budget(validate_document(markdown), task.project)
        except DocumentError as exc:
            raise InvalidField(exc.reason, "markdown") from None
        if not any(WORD.search(statement.text) for statement in parse_document(markdown).statements):
            raise InvalidField("has no requirement left, only headings; nothing was saved", "markdown")


REQUIRED_MESSAGE = re.compile(r"""^['"]([^'"]+)['"] is a required property$""")
"""The message of a missing property (keyword ``required``, ``schema_errors``)."""


def _schema_errors(schema: dict[str, Any], answer: dict[str, Any]) -> list[dict[str, str]]:
    return schema_errors(compile_schema(schema), answer)


def give(user: Any, task_id: str, section: str, part: dict[str, Any], *, input_id: str | None = None) -> dict[str, Any]:
    """Give (part of) the answer the task waits for: ``section`` is ``answers``
    (``{"answers": {question id: text}}``), ``decisions`` (``{"decisions": {id: "accept" |
    "reject"}}``) or ``next`` (``{"action": "modify" | "review" | "end", "markdown"?}``).
    Returns ``{"status": "answered" | "pending", "input": input_view, "missing": [ids]}``.

    ``input_id`` (the page's forms send it) names the request the answer was written for: an
    answer from a page that went stale (another tab answered, the draft has a newer revision)
    is refused with 409 instead of landing on a request its writer never saw.

    Raises NotFound (404) for a task the user may not see; DomainError 403 when the user may
    not act on it; ConfirmationError 409 when the task waits for no such answer (or it ended,
    or someone answered meanwhile); InvalidField 400 naming the field for an unknown id
    (``input_id`` naming no request of the task, too), a missing field, a
    value outside the request's choices, or text that is too long. Nothing is stored when
    any part is refused.
    """
    task = visible_tasks(user).filter(pk=task_id).first()
    if task is None:
        raise NotFound(f"task {task_id} does not exist")
    if not can_operate_task(user, task):
        raise DomainError(worded(_lazy("you may not act on this task's agents")), status=403, code="permission_denied")
    return answer_input(task, section, part, user.get_username(), input_id=input_id)


def answer_input(
    task: Task, section: str, part: dict[str, Any], decided_by: str, *, input_id: str | None = None
) -> dict[str, Any]:
    """``give`` once the caller has checked it may act on ``task`` (``give`` for users,
    ``interop.a2a_tasks`` for a role token's own A2A tasks): ``decided_by`` is recorded on the
    answer. Same result and refusals as ``give`` (409, 400 naming the field; nothing stored
    when any part is refused)."""
    task_id = task.id
    row = next((r for r in pending_inputs(task_id) if r.tool in SECTIONS[section]), None)
    if row is None:
        waiting = [r.tool for r in pending_inputs(task_id)]
        detail = f"it waits for: {', '.join(waiting)}" if waiting else "it waits for no answer now"
        raise ConfirmationError(
            f"task {task_id} is not waiting for {section} (it may have been answered already); {detail}", 409
        )
    if task.status not in ("queued", "running"):
        raise ConfirmationError(
            worded(
                _lazy("task %(task)s has ended (%(status)s)"), task=task_id, status=label_lazy(task.status, "status")
            ),
            409,
        )
    if input_id is not None and input_id != row.id:
        if not ToolConfirmation.objects.filter(pk=input_id, task_id=task_id, kind="input").exists():
            raise InvalidField(f"is not a request of task {task_id}; nothing was saved", "input_id")
        raise ConfirmationError(
            "this page is out of date: what you answered was already answered (in another tab or by someone "
            f"else) and the task now asks {WHAT[row.tool]}; nothing was saved, reload the task to see it",
            409,
        )
    _check_part(row, section, part)
    if section == "next":
        _check_edit(task, part)
    schema = (row.args or {}).get("answer_schema") or {"type": "object"}
    with transaction.atomic():
        # Lock the row first (a no-op write takes SQLite's write lock, and the row's lock on
        # PostgreSQL), so two operators deciding items one by one never lose one another's.
        if not ToolConfirmation.objects.filter(pk=row.pk, status="pending").update(status="pending"):
            raise ConfirmationError(worded(_lazy("someone else answered this at the same time; reload the task")), 409)
        row.refresh_from_db()
        merged = _merge(row.answer or {}, part)
        errors = _schema_errors(schema, merged)
        # A part that is wrong in itself is refused; answers and decisions that are only
        # missing are waited for (they may come one by one); a phase 5 choice is one whole.
        wrong = [e for e in errors if e["keyword"] != "required" or section == "next"]
        if wrong:
            first = wrong[0]
            reason = "may not be blank" if first["keyword"] in BLANK_KEYWORDS else first["message"]
            field = first["pointer"].strip("/").replace("/", ".")
            absent = REQUIRED_MESSAGE.match(first["message"]) if first["keyword"] == "required" else None
            if absent is not None:  # name the missing field itself, not the object holding it
                field, reason = ".".join(p for p in (field, absent.group(1)) if p), "is required"
            raise InvalidField(reason, field or section)
        complete = not errors
        ToolConfirmation.objects.filter(pk=row.pk).update(
            answer=merged,
            status="answered" if complete else "pending",
            decided_by=decided_by if complete else "",
            decided_at=timezone.now() if complete else None,
        )
    if complete and not deliver(row, "answered", decided_by, merged):
        raise ConfirmationError(worded(_lazy("the task stopped waiting (it expired or was cancelled)")), 409)
    row.refresh_from_db()
    given = row.answer or {}
    missing = [
        item_id
        for key, ids in _known_ids(row, section).items()
        for item_id in ids
        if item_id not in (given.get(key) or {})
    ]
    return {"status": row.status, "input": input_view(row), "missing": missing}


def task_inputs(task: Task) -> dict[str, Any]:
    """What the task's API document adds (seed 002): ``questions`` (pending interview or
    project type questions: ``[{id, text, ...}]``), ``decisions`` (pending confirm-mode items:
    ``[{id, kind, summary, positions, ..., decision}]``), ``next_actions`` (the phase 5
    choices when the task waits for one), ``confirmations`` (pending tool confirmations, PRD
    §4.7 ⚠️: ``[{id, tool, role}]``, decided through ``/confirmations/{id}``), ``coverage``
    (the pending interview round's coverage map: ``[{category, label, status: clear |
    partial | missing, answered, asked}]``, empty otherwise) and
    ``waiting_for`` (what it waits for: the pending inputs, then the pending tool
    confirmations' tools, oldest first)."""
    questions: list[dict[str, Any]] = []
    decisions: list[dict[str, Any]] = []
    next_actions: dict[str, Any] | None = None
    coverage: list[dict[str, Any]] = []
    rows = pending_inputs(task.id)
    for row in rows:
        request, given = row.args or {}, row.answer or {}
        if row.tool in SECTIONS["answers"]:
            questions += [{**q, "input_id": row.id} for q in request.get("questions", [])]
            coverage = request.get("coverage") or coverage
        elif row.tool in SECTIONS["decisions"]:
            taken = given.get("decisions", {})
            decisions += [{**item, "input_id": row.id, "decision": taken.get(item["id"])} for item in request["items"]]
        elif row.tool in SECTIONS["next"]:
            next_actions = {k: v for k, v in request.items() if k not in ("answer_schema", "markdown")}
            next_actions["input_id"] = row.id
    tools = list(
        ToolConfirmation.objects.filter(task_id=task.id, kind="tool", status="pending").order_by("created_at", "id")
    )
    return {
        "waiting_for": [row.tool for row in rows] + [row.tool for row in tools],
        "confirmations": [{"id": row.id, "tool": row.tool, "role": row.role} for row in tools],
        "questions": questions,
        "decisions": decisions,
        "next_actions": next_actions,
        "coverage": coverage,
    }
