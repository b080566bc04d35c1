"""The product's tasks as A2A tasks (issue 16): starting one from an A2A message, what state
it is in, its artifacts, answering what it waits for, cancelling it. Synchronous Django code;
``interop.a2a`` calls it from the event loop through ``database_sync_to_async``.

**States.** A product task's status (``monitoring.Task.status``) and the PRD §4.6 states of its
contexts map onto A2A task states (``A2A_STATES``): ``queued`` -> ``submitted``, ``running`` ->
``working``, ``waiting_user`` (a context waits for an operator: a pending
``ToolConfirmation``) -> ``input-required``, ``completed`` -> ``completed``, ``failed`` ->
``failed``, ``terminated`` -> ``canceled``. A run that completed with findings is
``completed`` with a status message that says so, never a clean success.

**Messages.** A message without a task id starts seed 002's ``requirement_review`` at main
(``runs.tasks.start_task``): its text is a one-line idea (the interview) or, when it has
several lines and a Markdown heading, a document to review; a data part may instead give the
fields of ``POST /api/v1/tasks`` (``START_FIELDS``). A message to a task that is
``input-required`` answers the pending operator input (``runs.operator_inputs.answer_input``)
with a data part ``{"answers": {...}}``, ``{"decisions": {...}}`` or ``{"action", "markdown"?}``,
or plain text where one answer is obvious (a single question, or ``modify``/``review``/``end``).
A tool confirmation (PRD §4.7 ⚠️) is an operator's decision on the task page and is refused.

Refusals raise the SDK's JSON-RPC errors (``refused``): ``-32602`` invalid params naming the
field, ``-32600`` a role the invoke matrix does not let ask main (PRD §4.7), ``-32001`` a task
that is not the caller's, ``-32002`` one that has ended, ``-32004`` a message the task cannot
take now. Nothing is recorded when a message is refused.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from a2a.types.a2a_pb2 import Artifact as A2AArtifact
from a2a.types.a2a_pb2 import Message, Part, Role, TaskState
from a2a.types.a2a_pb2 import Task as A2ATaskMessage
from a2a.utils.errors import (
    A2AError,
    InvalidParamsError,
    InvalidRequestError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)
from django.contrib.auth import get_user_model
from django.db.models.functions import Length
from django.utils import translation
from django.utils.translation import gettext as _
from google.protobuf.json_format import MessageToDict, ParseDict
from google.protobuf.struct_pb2 import Value

from capabilities.models import Project
from capabilities.snapshot import governance_snapshot
from interop.models import A2ATask, RoleToken
from monitoring.access import can_use_project
from monitoring.models import Artifact, Task, ToolConfirmation
from monitoring.outcome import task_outcome, task_phase
from runs.commands import CommandRefused
from runs.operator_inputs import SECTIONS, answer_input, input_view
from runs.tasks import TaskActionError, start_task, terminate_task
from teamclaw.errors import DomainError
from teamclaw.runtime.messages import new_id
from teamclaw.workflows.document import document_language

A2A_STATES: dict[str, int] = {
    "queued": TaskState.TASK_STATE_SUBMITTED,
    "running": TaskState.TASK_STATE_WORKING,
    "waiting_user": TaskState.TASK_STATE_INPUT_REQUIRED,
    "completed": TaskState.TASK_STATE_COMPLETED,
    "failed": TaskState.TASK_STATE_FAILED,
    "terminated": TaskState.TASK_STATE_CANCELED,
}
"""PRD task and context states (§4.6) -> A2A task states."""
ENDED = frozenset({"completed", "failed", "terminated"})
START_FIELDS = frozenset(
    {"input_markdown", "description", "decision_mode", "start_at", "project_type", "title", "project"}
)
"""What a data part that starts a task may hold: the fields of ``POST /api/v1/tasks``."""
NEXT_ACTIONS = ("modify", "review", "end")
UI_LANGUAGES = {"en": "en", "zh": "zh-hans"}
"""Django language codes of the languages ``document_language`` tells apart."""


@dataclass(frozen=True)
class Caller:
    """Who calls through A2A: the role token (``interop.role_tokens.authenticate``)."""

    token_id: int
    role: str
    name: str

    @classmethod
    def of(cls, token: RoleToken) -> Caller:
        return cls(token_id=token.pk, role=token.role.role, name=token.name)

    @property
    def decided_by(self) -> str:
        """How answers given with this token are signed (``ToolConfirmation.decided_by``)."""
        return f"a2a:{self.role}:{self.name}"[:150]


@dataclass
class TaskView:
    """A product task as A2A sees it now: ``state`` (an A2A ``TaskState``), the PRD state it
    comes from (``prd_state``), the status message's text and data, and its artifacts."""

    task_id: str
    prd_state: str
    state: int
    text: str
    data: dict[str, Any]
    answerable: bool = False
    """Waits for an input a message can give (not only for a tool confirmation on the task page)."""
    marks: dict[str, str] = field(default_factory=dict)
    """``{artifact name: mark}``; the mark changes when the artifact is rewritten."""
    artifacts: list[A2AArtifact] = field(default_factory=list)
    """The artifacts themselves (``task_view(..., with_artifacts=True)``)."""

    @property
    def signature(self) -> tuple[Any, ...]:
        """What changes when a new status update is due (not every poll's progress)."""
        return (self.state, self.text)

    def status_message(self, context_id: str) -> Message:
        """The agent's status message: the text, and the data as a data part."""
        parts = [Part(text=self.text)]
        if self.data:
            parts.append(Part(data=_value(self.data), media_type="application/json"))
        return Message(
            message_id=new_id(), role=Role.ROLE_AGENT, task_id=self.task_id, context_id=context_id, parts=parts
        )


def _value(data: Any) -> Value:
    value = Value()
    ParseDict(data, value)
    return value


def refused(error: type[A2AError], detail: str, errors: dict[str, list[str]] | None = None) -> A2AError:
    """The SDK's JSON-RPC error ``error`` whose ``data`` (sent as the ``google.rpc.ErrorInfo``
    metadata) is ``{"detail", "errors": [{"field", "message"}]}``: the SDK's shape of field
    errors, which it also turns into a ``google.rpc.BadRequest`` for ``InvalidParamsError``."""
    violations = [{"field": name, "message": reason} for name, reasons in (errors or {}).items() for reason in reasons]
    return error(message=detail, data={"detail": detail, "errors": violations})


def _from_domain(exc: DomainError) -> A2AError:
    kind: type[A2AError] = InvalidParamsError if exc.status == 400 else UnsupportedOperationError
    if exc.status == 404:
        kind = TaskNotFoundError
    return refused(kind, exc.message, exc.errors)


def message_content(message: Message) -> tuple[str, dict[str, Any] | None]:
    """``(text of its text parts, its one data part or None)``.

    Raises InvalidParamsError for file parts, several data parts or a data part that is not
    an object."""
    texts: list[str] = []
    data: list[Any] = []
    for index, part in enumerate(message.parts):
        kind = part.WhichOneof("content")
        if kind == "text":
            texts.append(part.text)
        elif kind == "data":
            data.append(MessageToDict(part.data))
        else:
            raise refused(
                InvalidParamsError,
                _("only text and data parts are understood; send a document as text"),
                {f"message.parts.{index}": [_("a %(kind)s part is not understood") % {"kind": kind or "empty"}]},
            )
    if len(data) > 1:
        raise refused(InvalidParamsError, _("send at most one data part"), {"message.parts": [_("several data parts")]})
    if data and not isinstance(data[0], dict):
        raise refused(InvalidParamsError, _("a data part must be an object"), {"message.parts": [_("not an object")]})
    return "\n".join(texts), (data[0] if data else None)


def looks_like_document(text: str) -> bool:
    """A text of several lines with a Markdown heading is a document to review; anything else
    is a one-line idea for the interview."""
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return len(lines) > 1 and any(line.lstrip().startswith("#") for line in lines)


def start_arguments(message: Message) -> dict[str, Any]:
    """The ``runs.tasks.start_task`` arguments a starting message asks for (``requirement_review``).

    Raises InvalidParamsError (unknown data fields, nothing to work on, an unknown project)."""
    text, data = message_content(message)
    if data is not None:
        unknown = sorted(set(data) - START_FIELDS)
        if unknown:
            raise refused(
                InvalidParamsError,
                _("unknown fields in the data part: %(fields)s") % {"fields": ", ".join(unknown)},
                {name: [_("not a field a task starts with")] for name in unknown},
            )
        wrong = sorted(name for name, value in data.items() if not isinstance(value, str))
        if wrong:
            raise refused(
                InvalidParamsError,
                _("the data part's fields are text"),
                {name: [_("must be a string")] for name in wrong},
            )
        arguments: dict[str, Any] = dict(data)
        if text.strip() and "description" not in arguments and "input_markdown" not in arguments:
            arguments["input_markdown" if looks_like_document(text) else "description"] = text
    elif not text.strip():
        raise refused(
            InvalidParamsError,
            _("the message is empty: send a one-line idea or a Markdown document"),
            {"message.parts": [_("no text")]},
        )
    else:
        arguments = {"input_markdown": text} if looks_like_document(text) else {"description": text.strip()}
    slug = arguments.pop("project", "")
    project = Project.objects.filter(slug=slug).first() if slug else None
    if slug and project is None:
        raise refused(
            InvalidParamsError,
            _("project '%(slug)s' does not exist") % {"slug": slug},
            {"project": [_("no such project")]},
        )
    arguments["project"] = project
    return arguments


def may_start(caller: Caller) -> None:
    """A task starts at main's ``task_orchestration``, so the caller's role must be one the
    effective invoke matrix lets invoke main (PRD §4.7; in the built-in team only main itself).

    Raises InvalidRequestError naming the role."""
    if (caller.role, "main") not in governance_snapshot(None).invoke_allowed:
        raise refused(
            InvalidRequestError,
            _(
                "role %(role)s may not invoke main (invoke permission matrix), so its token cannot start a task; "
                "use a token of a role that may, e.g. main"
            )
            % {"role": caller.role},
            {"role": [_("may not invoke main")]},
        )


def may_use_project(caller: Caller, project: Project | None) -> None:
    """A role token acts with the authority of the user who issued it: a task in a project
    needs that user to be able to use it now (``monitoring.access.can_use_project``; a token
    whose issuer is gone may start none). Raises InvalidParamsError naming ``project``."""
    if project is None:
        return
    issuer = RoleToken.objects.filter(pk=caller.token_id).values_list("created_by", flat=True).first()
    user = get_user_model().objects.filter(pk=issuer).first() if issuer else None
    if user is None or not can_use_project(user, project):
        raise refused(
            InvalidParamsError,
            _("the user who issued this token may not use project '%(slug)s'") % {"slug": project.slug},
            {"project": [_("not a member")]},
        )


def start(task_id: str, message: Message, caller: Caller) -> Task:
    """Start the product task ``task_id`` for ``message`` (``start_arguments``) as ``caller``;
    the SDK's first save of the A2A task records it as the caller's (``save_document``).
    Raises InvalidRequestError (the role may not invoke main), InvalidParamsError (bad
    input); nothing is recorded then."""
    may_start(caller)
    arguments = start_arguments(message)
    may_use_project(caller, arguments["project"])
    try:
        task = start_task(workflow="requirement_review", task_id=task_id, **arguments)
    except DomainError as exc:
        raise _from_domain(exc) from None
    return task


def owned(task_id: str, caller: Caller) -> A2ATask | None:
    """The A2A task ``task_id`` if ``caller``'s role started it (otherwise it does not exist for them)."""
    return A2ATask.objects.select_related("task").filter(task_id=task_id, role=caller.role).first()


def _pending(task_id: str) -> list[ToolConfirmation]:
    return list(ToolConfirmation.objects.filter(task_id=task_id, status="pending").order_by("created_at", "id"))


def prd_state(task: Task, pending: list[ToolConfirmation]) -> str:
    """The task's PRD state: its status, or ``waiting_user`` while it runs and something waits
    for an operator (PRD §4.6): a pending confirmation or input, the thing a client can answer.
    A context still recorded ``waiting_user`` without one is a moment between two writes (an
    answer was just taken, or the question is on its way): the task is working, never
    ``input-required`` with nothing to answer."""
    if task.status in ("queued", "running") and pending:
        return "waiting_user"
    return task.status


def _question_line(question: dict[str, Any]) -> str:
    """One question of a pending interview as A2A text: ``- <id>: <text>``, then its options
    (``A) …``) with the recommended one marked; any other text is a free answer."""
    line = f"- {question['id']}: {question.get('text', '')}"
    options = question.get("options") or []
    if options:
        marks = [f"{o['key']}) {o['text']}{' *' if o['key'] == question.get('recommended') else ''}" for o in options]
        line += " [" + "; ".join(marks) + "]"
    return line


def _waiting_text(pending: list[ToolConfirmation]) -> tuple[str, dict[str, Any]]:
    lines: list[str] = []
    inputs = []
    for row in pending:
        if row.kind == "tool":
            lines.append(
                _("%(role)s waits for an operator to confirm the tool %(tool)s on the task page (not through A2A).")
                % {"role": row.role, "tool": row.tool}
            )
            inputs.append({"id": row.id, "what": "tool_confirmation", "tool": row.tool, "role": row.role})
            continue
        view = input_view(row)
        inputs.append(view)
        request = view["request"]
        if row.tool in SECTIONS["answers"]:
            lines.append(_('Answer with a data part {"answers": {"<question id>": "<text>"}}:'))
            lines += [_question_line(q) for q in request.get("questions", [])]
            if request.get("coverage"):
                lines.append(
                    _("Coverage: %(map)s")
                    % {"map": ", ".join(f"{c['label']} {c['status']}" for c in request["coverage"])}
                )
        elif row.tool in SECTIONS["decisions"]:
            lines.append(_('Decide with a data part {"decisions": {"<item id>": "accept" | "reject"}}:'))
            lines += [f"- {item['id']}: {item.get('summary', '')}" for item in request.get("items", [])]
        else:
            lines.append(
                _(
                    "The draft is ready: reply review or end, or modify with a data part "
                    '{"action": "modify", "markdown": ...}.'
                )
            )
    return "\n".join(lines), {"waiting_for": [row.tool for row in pending], "inputs": inputs}


def _ended_text(task: Task) -> tuple[str, dict[str, Any]]:
    if task.status == "completed":
        outcome = task_outcome(task)
        if outcome is None:
            return _("Completed."), {}
        verdict = outcome["verdict"]
        if verdict == "clean":
            text = _("Completed: the quality check passed.")
        elif verdict == "draft_only":
            text = _("Completed at the draft: the document was not reviewed.")
        else:
            text = _("Completed with findings: the quality check lists what is still unresolved (see outcome).")
        return text, {"outcome": outcome}
    error = task.error or {}
    message = str(error.get("message") or task.status)
    if task.status == "terminated":
        return _("Cancelled: %(why)s") % {"why": message}, {"error": error}
    return _("Failed: %(why)s") % {"why": message}, {"error": error}


def a2a_artifact(artifact: Artifact) -> A2AArtifact:
    """A product artifact as an A2A artifact: its name as id and name, its content as one text
    part with its media type, who wrote it in the metadata."""
    metadata = _value({"role": artifact.role, "created_at": artifact.created_at.isoformat()}).struct_value
    return A2AArtifact(
        artifact_id=artifact.name,
        name=artifact.name,
        parts=[Part(text=artifact.content, media_type=artifact.content_type)],
        metadata=metadata,
    )


def artifact_marks(task_id: str) -> dict[str, str]:
    """``{name: mark}`` of the task's artifacts without reading their content: the recorder
    rewrites an artifact with a new ``created_at`` (and usually a new length)."""
    rows = Artifact.objects.filter(task_id=task_id).annotate(size=Length("content"))
    return {name: f"{at.isoformat()}/{size}" for name, at, size in rows.values_list("name", "created_at", "size")}


def artifacts_named(task_id: str, names: list[str]) -> list[A2AArtifact]:
    """The task's artifacts ``names`` as A2A artifacts, oldest first."""
    rows = Artifact.objects.filter(task_id=task_id, name__in=names).order_by("created_at", "id")
    return [a2a_artifact(a) for a in rows]


def task_language(task: Task) -> str:
    """The language the task's texts are given in: the user's (``zh-hans`` when the idea or
    document is Chinese, else ``en``; seed 002 §6.2 ``document_language``)."""
    return UI_LANGUAGES[document_language(task.description or task.input_markdown)]


def task_view(task: Task, *, with_artifacts: bool = False) -> TaskView:
    """What the product task ``task`` is now, as A2A sees it, its texts in ``task_language``;
    the artifacts' content only ``with_artifacts`` (their marks always)."""
    with translation.override(task_language(task)):
        view = _task_view(task)
    if with_artifacts:
        view.artifacts = artifacts_named(task.id, list(view.marks))
    return view


def _task_view(task: Task) -> TaskView:
    pending = _pending(task.id)
    state = prd_state(task, pending)
    if state == "waiting_user":
        text, data = _waiting_text(pending)
    elif state in ENDED:
        text, data = _ended_text(task)
    elif state == "queued":
        text, data = _("Queued: waiting for a runtime worker."), {}
    else:
        phase = task_phase(task) if task.workflow == "requirement_review" else ""
        text, data = (_("Working (phase: %(phase)s).") % {"phase": phase} if phase else _("Working.")), {}
    answerable = any(row.kind == "input" for row in pending)
    return TaskView(task.id, state, A2A_STATES[state], text, data, answerable, artifact_marks(task.id))


def view_of(task_id: str) -> TaskView:
    """``task_view`` of the task ``task_id`` (which exists), without the artifacts' content."""
    return task_view(Task.objects.get(pk=task_id))


def a2a_task(row: A2ATask) -> A2ATaskMessage:
    """The A2A task of ``row``: the SDK's last saved document (history, metadata) with the
    product's current state, status message and artifacts."""
    saved = A2ATaskMessage()
    if row.document:
        ParseDict(row.document, saved, ignore_unknown_fields=True)
    saved.id = row.task_id
    saved.context_id = row.context_id
    view = task_view(row.task, with_artifacts=True)
    if saved.status.state != view.state:
        saved.status.state = view.state  # type: ignore[assignment]
        saved.status.message.CopyFrom(view.status_message(row.context_id))
        saved.status.timestamp.GetCurrentTime()
    del saved.artifacts[:]
    saved.artifacts.extend(view.artifacts)
    saved.metadata.update({"teamclaw_task_id": row.task_id, "prd_state": view.prd_state, "title": row.task.title})
    return saved


def save_document(task: A2ATaskMessage, caller: Caller) -> None:
    """Keep the SDK's ``task`` (the history and metadata the product does not hold) on its
    row, which the first save creates as ``caller``'s. A task the product never started (a
    refused first message) is not kept; another role's task is not touched."""
    if not Task.objects.filter(pk=task.id).exists():
        return
    row, created = A2ATask.objects.get_or_create(
        task_id=task.id,
        defaults={
            "role": caller.role,
            "token_id": caller.token_id,
            "context_id": task.context_id,
            "document": _document(task),
        },
    )
    if not created and row.role == caller.role:
        A2ATask.objects.filter(pk=row.pk).update(document=_document(task))


def _document(task: A2ATaskMessage) -> dict[str, Any]:
    """What ``A2ATask.document`` keeps of an A2A task: all but the artifacts (the product's)."""
    document: dict[str, Any] = json.loads(json.dumps(MessageToDict(task)))
    document.pop("artifacts", None)
    return document


def answer(task_id: str, message: Message, caller: Caller) -> None:
    """Answer what the caller's task ``task_id`` waits for with ``message`` (module docstring).

    Raises TaskNotFoundError (not the caller's), UnsupportedOperationError (it waits for
    nothing the message can answer: running, ended, a tool confirmation), InvalidParamsError
    (the answer is refused; nothing is stored)."""
    row = owned(task_id, caller)
    if row is None:
        raise refused(TaskNotFoundError, _("there is no task %(id)s") % {"id": task_id})
    task = row.task
    if task.status in ENDED:
        raise refused(
            UnsupportedOperationError,
            _("task %(id)s has ended (%(status)s); send a message without a taskId to start a new one")
            % {"id": task_id, "status": task.status},
        )
    pending = _pending(task_id)
    inputs = [r for r in pending if r.kind == "input"]
    if not inputs:
        detail = (
            _("task %(id)s waits for an operator to confirm a tool on the task page; that is not answered through A2A")
            if pending
            else _("task %(id)s is working and waits for no answer now")
        )
        raise refused(UnsupportedOperationError, detail % {"id": task_id})
    row_input = inputs[0]
    section, part = _answer_part(row_input, message)
    try:
        answer_input(task, section, part, caller.decided_by)
    except DomainError as exc:
        raise _from_domain(exc) from None


def _answer_part(row: ToolConfirmation, message: Message) -> tuple[str, dict[str, Any]]:
    """``(section, part)`` of ``runs.operator_inputs.answer_input`` for ``message``."""
    text, data = message_content(message)
    section = next(name for name, whats in SECTIONS.items() if row.tool in whats)
    if data is not None:
        return section, data
    text = text.strip()
    if section == "next" and text.lower() in NEXT_ACTIONS:
        return section, {"action": text.lower()}
    questions = (row.args or {}).get("questions", [])
    if section == "answers" and len(questions) == 1 and text:
        return section, {"answers": {questions[0]["id"]: text}}
    expected = {
        "answers": _('a data part {"answers": {"<question id>": "<text>"}} naming each question'),
        "decisions": _('a data part {"decisions": {"<item id>": "accept" | "reject"}}'),
        "next": _('modify, review or end (modify with a data part {"action": "modify", "markdown": ...})'),
    }[section]
    raise refused(
        InvalidParamsError,
        _("the task waits for %(what)s; answer with %(expected)s") % {"what": row.tool, "expected": expected},
        {"message.parts": [_("not an answer to %(what)s") % {"what": row.tool}]},
    )


def cancel(task_id: str, caller: Caller) -> None:
    """Cancel the caller's task ``task_id`` (PRD §4.6 ``terminated``).

    Raises TaskNotFoundError (not the caller's), TaskNotCancelableError (it has ended),
    UnsupportedOperationError (its worker did not answer)."""
    row = owned(task_id, caller)
    if row is None:
        raise refused(TaskNotFoundError, _("there is no task %(id)s") % {"id": task_id})
    if row.task.status in ENDED:
        raise refused(
            TaskNotCancelableError,
            _("task %(id)s has already ended (%(status)s)") % {"id": task_id, "status": row.task.status},
        )
    try:
        terminate_task(row.task, _("cancelled through A2A by %(who)s") % {"who": caller.decided_by})
    except TaskActionError as exc:
        raise refused(TaskNotCancelableError, exc.message) from None
    except CommandRefused as exc:
        raise refused(UnsupportedOperationError, str(exc)) from None
