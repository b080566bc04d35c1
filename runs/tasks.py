"""Starting tasks: document checks and handing a task to the runtime (US-02, seed 002 demo).

``start_task`` records the task ``queued`` with its ``run_spec`` and hands it to a runtime
worker (``runs.dispatch``); the recorder fills in contexts, messages, snapshots and artifacts
as the agents work.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from capabilities.executors import workflow_executors
from capabilities.models import AgentRole, Project
from capabilities.snapshot import effective_constraints
from monitoring import live_items
from monitoring.access import can_operate_task, can_use_project, can_view_task
from monitoring.live_events import LiveItem
from monitoring.live_sink import get_live_sink
from monitoring.models import Task
from runs.commands import CommandRefused, send_command
from runs.dispatch import publish_wake
from runs.fork_overrides import FORK_OVERRIDES, overlay_document
from runs.fork_policy import audit_override, authorise, check_reason, rejected_tools, widenings
from runs.host import get_host
from runs.resume import recorded_steps
from team.snapshot import build_snapshot
from teamclaw.errors import DomainError, InvalidField
from teamclaw.labels import label_lazy, worded
from teamclaw.plain_text import hidden_character_problem
from teamclaw.runtime.executors.offline import estimate_tokens
from teamclaw.runtime.messages import new_id
from teamclaw.workflows import WORKFLOW_CAPABILITIES
from teamclaw.workflows.document import document_language, nothing_to_review
from teamclaw.workflows.interview import load_project_types
from teamclaw.workflows.review_text import say

SAMPLE_REQUIREMENT = Path(__file__).resolve().parent / "samples" / "online_bookstore.md"


class DocumentError(InvalidField, ValueError):
    """A requirement document (or task description) that cannot be used; ``reason`` says
    why, for the operator (400)."""

    def __init__(self, reason: str, field: str = "input_markdown") -> None:
        super().__init__(reason, field)


def max_document_bytes() -> int:
    return int(settings.TEAMCLAW["MAX_DOCUMENT_BYTES"])


def validate_document(raw: bytes | str | None) -> str:
    """Return the document as text, or raise DocumentError: empty, larger than the limit
    (1 MB by default, TEAMCLAW_MAX_DOCUMENT_BYTES), binary (NUL bytes, not UTF-8, mostly
    control characters)."""
    if raw is None:
        raise DocumentError("a Markdown document is required")
    limit = max_document_bytes()
    if isinstance(raw, bytes):
        if len(raw) > limit:
            raise DocumentError(f"the document is {len(raw):,} bytes; the limit is {limit:,} bytes")
        if b"\x00" in raw:
            raise DocumentError("the document is binary, not Markdown text")
        try:
            text = raw.decode("utf-8-sig")
        except UnicodeDecodeError:
            raise DocumentError("the document is not UTF-8 text") from None
    elif isinstance(raw, str):
        text = raw
        size = len(text.encode("utf-8", errors="replace"))
        if size > limit:
            raise DocumentError(f"the document is {size:,} bytes; the limit is {limit:,} bytes")
        if "\x00" in text:
            raise DocumentError("the document is binary, not Markdown text")
    else:
        raise DocumentError("the document must be a string of Markdown")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise DocumentError("the document holds characters that are not valid Unicode (unpaired surrogates)") from None
    if not text.strip():
        raise DocumentError("the document is empty")
    control = sum(1 for ch in text if ord(ch) < 32 and ch not in "\n\r\t\f")
    if control > max(8, len(text) // 100):
        raise DocumentError("the document is binary, not Markdown text")
    return text


def check_budget(text: str, project: Project | None) -> None:
    """Refuse a document the task's token budget (main's ``token_budget``, PRD §4.7) cannot
    even read once, instead of starting a task that fails at its first step."""

    main = AgentRole.objects.filter(role="main").prefetch_related("constraints").first()
    if main is None:
        return
    budget = effective_constraints(main, project).token_budget
    tokens = estimate_tokens(text)
    if tokens >= budget:
        raise DocumentError(
            f"the document is about {tokens:,} tokens but a task's token budget is {budget:,} "
            "(main's token_budget constraint); shorten the document or raise the budget"
        )


def sample_requirement(language: str = "en") -> str:
    """The demo requirement shipped with TeamClaw (an online bookstore), in ``language``
    (a ``LANGUAGES`` code: ``online_bookstore.<language>.md`` beside the English one; the
    English for a language without one)."""
    localised = SAMPLE_REQUIREMENT.with_name(f"{SAMPLE_REQUIREMENT.stem}.{language}.md")
    return (localised if language != "en" and localised.is_file() else SAMPLE_REQUIREMENT).read_text(encoding="utf-8")


START_POINTS = ("interview", "draft", "review")
DECISION_MODES = ("auto", "confirm")
MAX_TITLE_CHARS = 300


def check_plain_text(value: str, field: str) -> str:
    """``value`` unchanged, or DocumentError (400) naming ``field`` when it holds a control
    character or a bidirectional control (``teamclaw.plain_text``: which character, and where)."""
    if reason := hidden_character_problem(value):
        raise DocumentError(reason, field)
    return value


def _review_params(
    input_markdown: bytes | str | None,
    description: str,
    start_at: str,
    decision_mode: str,
    project_type: str,
    think_time_ms: int,
    title: str,
    project: Project | None,
) -> tuple[dict[str, Any], str, str]:
    """``(params, document text, title)`` of a requirement_review task (seed 002): with a
    document it starts at ``review`` (phase 6) or ``draft`` (phase 5); without one at
    ``interview`` from the one-line ``description``. Raises DocumentError naming the field."""
    if decision_mode not in DECISION_MODES:
        raise DocumentError(f"must be one of {', '.join(DECISION_MODES)}", "decision_mode")
    if start_at and start_at not in START_POINTS:
        raise DocumentError(f"must be one of {', '.join(START_POINTS)}", "start_at")
    has_document = input_markdown is not None
    if len(title) > MAX_TITLE_CHARS:
        raise DocumentError(f"is longer than {MAX_TITLE_CHARS} characters", "title")
    check_plain_text(title, "title")
    if start_at in ("draft", "review") and not has_document:
        raise DocumentError(f"starting at {start_at} needs a document (input_markdown)", "input_markdown")
    start_at = start_at or ("review" if has_document else "interview")
    params: dict[str, Any] = {"workflow": "requirement_review", "decision_mode": decision_mode, "start_at": start_at}
    if think_time_ms:
        params["think_time_ms"] = think_time_ms
    if start_at == "interview":
        if has_document:
            raise DocumentError(
                "an interview starts from a description, not a document; drop input_markdown "
                "or start at draft or review",
                "start_at",
            )
        idea = check_plain_text(description.strip(), "description")
        if not idea:
            raise DocumentError("a one-line idea is required to start the interview", "description")
        if len(idea) > 2000:
            raise DocumentError("the idea is longer than 2,000 characters", "description")
        if project_type and project_type not in project_types():
            raise DocumentError(f"must be one of {', '.join(project_types())}", "project_type")
        if project_type:
            params["project_type"] = project_type
        title = title or idea.splitlines()[0][:200]
        what = say(
            document_language(idea), f"Requirement from the idea '{title[:120]}'", f"根据想法“{title[:120]}”编写需求"
        )
        params.update(description=idea, task_description=what)
        return params, "", title
    if description.strip():
        raise DocumentError("give either a description (interview) or input_markdown (a document)", "description")
    if project_type:
        raise DocumentError("a project type only applies to an interview", "project_type")
    text = validate_document(input_markdown)
    if start_at == "review" and (reason := nothing_to_review(text)):
        raise DocumentError(f"the document {reason}")
    check_budget(text, project)
    first_heading = next((line.lstrip("# ").strip() for line in text.splitlines() if line.startswith("#")), "")
    title = title or first_heading[:200] or "Requirement review"
    what = say(document_language(text), f"Review the requirement '{title}'", f"评审需求“{title}”")
    params.update(input_markdown=text, document_name="requirement.md", task_description=what)
    return params, text, title


def start_task(
    *,
    workflow: str,
    input_markdown: bytes | str | None = None,
    task_description: str = "",
    title: str = "",
    project: Project | None = None,
    user: Any = None,
    prompt_enhancement: str = "",
    description: str = "",
    start_at: str = "",
    decision_mode: str = "auto",
    project_type: str = "",
    think_time_ms: int = 0,
    task_id: str = "",
) -> Task:
    """Record a task and hand it to a runtime worker (``enqueue``; returns at once, status
    ``running`` on the embedded runtime, ``queued`` until a worker claims it otherwise).

    ``requirement_review`` (seed 002): ``input_markdown`` (a document: ``start_at`` ``review``,
    the default, or ``draft``) or ``description`` (a one-line idea: the interview, optionally
    with the ``project_type``); ``decision_mode`` ``auto`` or ``confirm``; ``think_time_ms``
    paces the offline agents (the demo). ``generic``: ``task_description``. ``task_id`` is the
    new task's id when the caller chose one (A2A: the id its request handler gave the A2A task,
    made by ``teamclaw.runtime.messages.new_id``); otherwise a new one.

    Raises DocumentError (400, naming the field) for a bad document, a missing description or
    a value outside its choices, and for a ``project`` the user may not use (answered as not
    existing: ``monitoring.access.can_use_project``).
    """
    check_project(user, project)
    if workflow == "requirement_review":
        params, text, title = _review_params(
            input_markdown, description, start_at, decision_mode, project_type, think_time_ms, title, project
        )
    else:
        params = {"workflow": workflow}
        if not task_description.strip():
            raise DocumentError("a task description is required", "task_description")
        if len(task_description) > 2000:
            raise DocumentError("the task description is longer than 2,000 characters", "task_description")
        text = ""
        params["task_description"] = task_description.strip()
        title = title or task_description.strip()[:200]
    task = Task.objects.create(
        id=task_id or new_id(),
        kind="task",
        workflow=workflow,
        title=title[:300],
        description=params.get("description") or params["task_description"],
        input_markdown=text,
        project=project,
        status="queued",
        created_by=user if getattr(user, "pk", None) else None,
        executor=workflow_executors(build_snapshot(project.slug if project else None), WORKFLOW_CAPABILITIES[workflow]),
        prompt_enhancement=prompt_enhancement,
        run_spec=run_spec("task_orchestration", params, params["task_description"], prompt_enhancement),
    )
    return enqueue(task)


def not_a_member(project: Project) -> str:
    """Why a user may not use ``project`` (projects are listed to every signed-in user, so
    the message says what to do rather than pretend it does not exist)."""
    return f"you are not a member of project '{project.slug}': a staff user can add you to its members"


def check_project(user: Any, project: Project | None) -> None:
    """DocumentError (400 on ``project``) unless ``user`` may use ``project`` (its members,
    staff, the see-every-task group; issue 31), saying how to get access."""
    if not can_use_project(user, project):
        assert project is not None
        raise DocumentError(not_a_member(project), "project")


def project_types() -> list[str]:
    """The project types an interview can start with (``teamclaw/workflows/project_types``)."""
    return list(load_project_types())


def project_type_labels(language: str = "en") -> list[tuple[str, str]]:
    """``(type, label)`` of every project type for the new-task form, in ``language`` (a
    Django language code such as ``en`` or ``zh-hans``: its first part picks the label,
    English when the type has none in that language)."""
    short = (language or "en").split("-")[0].lower()
    return [(t.type, t.label.get(short) or t.label["en"]) for t in load_project_types().values()]


def run_spec(
    capability_id: str, params: dict[str, Any], description: str, prompt_enhancement: str = ""
) -> dict[str, Any]:
    """``Task.run_spec``: what any worker needs to start (or resume) a task at main."""
    return {
        "capability_id": capability_id,
        "params": params,
        "description": description,
        "entry_role": "main",
        "prompt_enhancement": prompt_enhancement,
    }


def enqueue(task: Task) -> Task:
    """Hand the ``queued`` ``task`` to a runtime worker (docs/architecture.md §3) and return it
    as it is now: with the embedded runtime (the default) this process claims it at once
    (``running``); otherwise, or when this process has no free slot, it waits ``queued`` and
    the workers are woken (Redis) or find it on their next poll (at most 250 ms)."""
    if settings.TEAMCLAW["RUNTIME"] == "embedded":
        dispatcher = get_host().dispatcher
        if dispatcher is not None and dispatcher.hand_over(task.id):
            task.refresh_from_db()
            return task
    publish_wake("task", task.id)
    return task


def cancel_task(user: Any, task_id: str, reason: Any = "") -> Task:
    """Cancel a queued or running task (PRD §4.6 ``terminated``), wherever it runs: what waits
    in it ends with ``cancelled``, its confirmations expire. Returns the task as recorded.

    Raises InvalidField 400 (``reason`` not text or over 300 characters), TaskActionError
    404 (not visible), 403 (not staff nor the user who started it), 409 (already ended);
    CommandRefused 503 when its worker did not answer.
    """
    if reason is None:
        reason = ""
    if not isinstance(reason, str) or len(reason) > 300:
        raise InvalidField("must be text of at most 300 characters", "reason")
    if "\x00" in reason:
        raise InvalidField("may not contain NUL characters", "reason")
    task = Task.objects.filter(pk=task_id).first()
    if task is None or not can_view_task(user, task):
        raise TaskActionError(worded(_("there is no task %(task)s"), task=task_id), 404)
    if not can_operate_task(user, task):
        raise TaskActionError(worded(_("only staff or the user who started this task may cancel it")), 403)
    return terminate_task(task, reason.strip() or f"cancelled by {user.get_username()}")


def _already_ended(task: Task) -> TaskActionError:
    """409: ``task`` has already ended, its status worded in the reader's language."""
    return TaskActionError(
        worded(
            _("task %(task)s has already ended (%(status)s)"), task=task.id, status=label_lazy(task.status, "status")
        ),
        409,
    )


def terminate_task(task: Task, why: str) -> Task:
    """End ``task`` ``terminated`` (PRD §4.6) with the error ``cancelled`` saying ``why``, once
    the caller has checked it may (``cancel_task`` for users; ``interop.a2a_tasks`` for a role
    token's own A2A tasks). Returns the task as recorded.

    Raises TaskActionError 409 (already ended); CommandRefused 503 when its worker did not answer.
    """
    task_id = task.id
    error = {"code": "cancelled", "message": why, "details": {"task_id": task_id}}
    if Task.objects.filter(pk=task_id, status="queued").update(
        status="terminated", error=error, finished_at=timezone.now()
    ):
        task.refresh_from_db()
        get_live_sink().publish_items([LiveItem("task", f"task:{task_id}", live_items.task_item(task))])
        return task
    if task.status not in ("queued", "running"):
        raise _already_ended(task)
    try:
        send_command(task_id, "cancel", {"reason": why})
    except CommandRefused as refused:
        task.refresh_from_db()
        if refused.status != 409 and task.status in ("queued", "running"):
            raise
        raise _already_ended(task) from None
    task.refresh_from_db()
    return task


class TaskActionError(DomainError):
    """An action on a task refused; ``status`` is the HTTP status (403, 404, 409)."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message, status=status)


def fork_task(user: Any, task_id: str, from_step: Any, overrides: Any = None, reason: Any = None) -> Task:
    """Re-run ended task ``task_id`` as a new task that takes its first ``from_step`` completed
    steps (and the artifacts written by then) from the record and runs live from there
    (``runs.resume.journal_for``), optionally with ``overrides`` (``runs.fork_overrides``: the
    task's prompt layer, PRD §4.5, another prompt version, matrix cells, an executor or model,
    for the fork alone). ``from_step`` equal to the step count is a
    pure replay: nothing runs, no model token is spent, the artifacts are the recorded ones.

    A fork stays inside the permission matrices (``runs.fork_policy``): an override that
    widens them needs the right to change that matrix (or the role, for an executor), a
    ``reason``, and is audited; a tool use the source's operator rejected stays rejected in the
    fork unless a staff user sets ``overrides.reconsider_rejected``. Returns the new task
    (queued or running).

    Raises InvalidField 400 (``from_step`` not an integer in 0..steps, unknown or bad
    overrides, a widening without ``reason``), ForkRefused 403 (a widening the user may not
    make, naming each ``overrides.<section>.<key>``), TaskActionError 404 (not visible), 409
    (still running, or not a workflow run).
    """
    source = _forkable(user, task_id)
    check_project(user, source.project)
    steps = len(recorded_steps(task_id))
    if isinstance(from_step, bool) or not isinstance(from_step, int) or not 0 <= from_step <= steps:
        raise InvalidField(f"must be a whole number from 0 to {steps} (the task's completed steps)", "from_step")
    overrides = _fork_overrides(overrides)
    why = check_reason(reason)
    spec = {key: value for key, value in (source.run_spec or {}).items() if key != "fork"}
    if "prompt_enhancement" in overrides:
        spec["prompt_enhancement"] = _enhancement(overrides["prompt_enhancement"])
    own = overlay_document(overrides, source.project)
    # a fork of a fork keeps its source's overlay, cell by cell, unless it changes that cell
    inherited = spec.get("config_overlay") or {}
    overlay = {section: {**inherited.get(section, {}), **cells} for section, cells in own.items()}
    if any(overlay.values()):
        spec["config_overlay"] = overlay
    found = widenings(overlay, own, source)
    held = rejected_tools(source)
    reconsider = overrides.get("reconsider_rejected", False)
    authorise(user, source, found, reconsider, held, why)
    spec["fork"] = {
        "task_id": source.id,
        "from_step": from_step,
        "steps": steps,
        "overrides": overrides,
        "rejected_tools": [] if reconsider else held,
    }
    with transaction.atomic():
        task = Task.objects.create(
            id=new_id(),
            kind="task",
            workflow=source.workflow,
            title=f"{source.title} (fork at step {from_step})"[:300],
            description=source.description,
            input_markdown=source.input_markdown,
            project=source.project,
            status="queued",
            created_by=user if getattr(user, "pk", None) else None,
            executor=source.executor,
            prompt_enhancement=spec.get("prompt_enhancement", ""),
            run_spec=spec,
        )
        audit_override(user, source, task.id, found, held if reconsider else [], why)
    return enqueue(task)


def _forkable(user: Any, task_id: str) -> Task:
    """Task ``task_id`` if ``user`` sees it and it can be forked; TaskActionError otherwise."""
    source = Task.objects.filter(pk=task_id).first()
    if source is None or not can_view_task(user, source):
        raise TaskActionError(worded(_("there is no task %(task)s"), task=task_id), 404)
    if source.status in ("queued", "running"):
        raise TaskActionError(
            worded(
                _("task %(task)s is still %(status)s; fork it once it has ended"),
                task=task_id,
                status=label_lazy(source.status, "status"),
            ),
            409,
        )
    if not source.run_spec:
        raise TaskActionError(worded(_("task %(task)s is not a workflow run that can be run again"), task=task_id), 409)
    return source


def _fork_overrides(overrides: Any) -> dict[str, Any]:
    """``overrides`` checked for shape: an object of known keys (``FORK_OVERRIDES``), with
    ``reconsider_rejected`` a boolean; InvalidField naming the key otherwise."""
    overrides = {} if overrides is None else overrides
    if not isinstance(overrides, dict):
        raise InvalidField("must be an object", "overrides")
    unknown = sorted(set(overrides) - set(FORK_OVERRIDES))
    if unknown:
        raise InvalidField(
            f"{', '.join(unknown)}: not something a fork can change (only {', '.join(FORK_OVERRIDES)})", "overrides"
        )
    if not isinstance(overrides.get("reconsider_rejected", False), bool):
        raise InvalidField("must be true or false", "overrides.reconsider_rejected")
    return overrides


def _enhancement(value: Any) -> str:
    if not isinstance(value, str) or len(value) > 2000 or "\x00" in value:
        raise InvalidField("must be text of at most 2,000 characters, without NUL", "overrides.prompt_enhancement")
    return value
