"""Operator actions on an execution context: user instructions and manual snapshots (PRD §4.6).

Both are state changes, so they live here, not in views: the views and the API parse the
request and call these. Each checks access (``monitoring.access``), validates its input and
either does everything or nothing:

- ``send_user_instruction``: only for a running context, in whichever worker runs it
  (``runs.commands``); the runtime
  stores the instruction in ``input_context.user_instructions``, sends a ``context_sync``
  message and takes an ``auto`` snapshot with trigger ``user_instruction`` (PRD §4.6 用户发送
  补充指令). Returns once the recorder has committed it, so a following read sees it.
- ``take_manual_snapshot``: a ``manual`` snapshot with the operator's label. A running
  context is snapshotted by the runtime running it (its exact in-memory state); a context that is
  not live (finished, or from before a restart) is snapshotted from its recorded state in the
  database, and the new snapshot is published to the live pages after the commit.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Max

from monitoring import live_items
from monitoring.access import can_operate_task, can_view_task
from monitoring.live_events import LiveItem
from monitoring.live_sink import get_live_sink
from monitoring.models import ExecutionContext, Snapshot
from runs.commands import CommandRefused, send_command
from teamclaw.errors import DomainError
from teamclaw.plain_text import hidden_character_problem
from teamclaw.runtime.memory import Memory
from teamclaw.runtime.messages import new_id

MAX_INSTRUCTION_CHARS = 2000
MAX_LABEL_CHARS = 300


class ContextActionError(DomainError):
    """An action refused: ``status`` (HTTP: 400, 403, 404, 409), the ``field`` at fault
    (or ``""``) and the ``reason`` for the operator."""

    def __init__(self, status: int, reason: str, field: str = "") -> None:
        self.reason = reason
        self.field = field
        if field:
            super().__init__(f"{field}: {reason}", errors={field: [reason]}, status=status)
        else:
            super().__init__(reason, status=status)


def operable_context(user: Any, context_id: str) -> ExecutionContext:
    """The context, if ``user`` may operate its task; ContextActionError 404/403 otherwise."""
    context = ExecutionContext.objects.select_related("task").filter(pk=context_id).first()
    if context is None or not can_view_task(user, context.task):
        raise ContextActionError(404, f"there is no execution context {context_id}")
    if not can_operate_task(user, context.task):
        raise ContextActionError(403, "only staff or the user who started this task may act on its agents")
    return context


def _live_command(context: ExecutionContext, kind: str, payload: dict[str, Any]) -> dict[str, Any] | None:
    """Apply command ``kind`` to the context's task wherever it runs (``runs.commands``); None
    when no runtime holds the context any more (409 from its worker)."""
    try:
        # The role lets the worker that took the task over find the agent now doing its work.
        return send_command(context.task_id, kind, {"context_id": context.id, "role": context.role, **payload})
    except CommandRefused as refused:
        if refused.status == 409:
            return None
        raise ContextActionError(refused.status, refused.message) from None


def clean_text(value: Any, field: str, limit: int, *, required: bool) -> str:
    """Strip ``value``; ContextActionError 400 naming ``field`` when it is not text, empty
    (when required), longer than ``limit`` characters or contains NUL."""
    if value is None:
        value = ""
    if not isinstance(value, str):
        raise ContextActionError(400, "must be text", field)
    text = value.strip()
    if required and not text:
        raise ContextActionError(400, "may not be empty", field)
    if len(text) > limit:
        raise ContextActionError(400, f"is {len(text):,} characters; the limit is {limit:,}", field)
    if "\x00" in text:
        raise ContextActionError(400, "may not contain NUL characters", field)
    return text


def send_user_instruction(user: Any, context_id: str, text: Any) -> dict[str, Any]:
    """Give a running agent an operator instruction; returns the ``user_instruction`` snapshot
    (``{id, context_id, type, trigger, label, sequence, state, created_at}``, times in epoch s).

    Raises ContextActionError: 400 bad text, 403/404 access, 409 when the context is not
    running, 503 when its worker did not answer.
    """
    text = clean_text(text, "text", MAX_INSTRUCTION_CHARS, required=True)
    context = operable_context(user, context_id)
    if context.status in live_items.FINAL_CONTEXT_STATUSES:
        raise ContextActionError(409, f"this agent's context is {context.status}; instructions go to running agents")
    author = getattr(user, "get_username", lambda: "operator")()
    snapshot = _live_command(context, "instruction", {"text": text, "author": author})
    if snapshot is None:
        raise ContextActionError(409, "this context is no longer running (its task ended or resumed elsewhere)")
    return snapshot


def empty_memory() -> dict[str, Any]:
    """``Memory.state()`` of a context recorded before memory was (an empty memory)."""
    return Memory(budget_tokens=settings.TEAMCLAW["MEMORY_TOKENS"]).state()


def state_from_row(context: ExecutionContext) -> dict[str, Any]:
    """A recorded context in the shape of ``ExecutionContext.state()`` (what snapshots hold)."""
    return {
        "id": context.id,
        "instance_id": context.instance_id,
        "role": context.role,
        "task_id": context.task_id,
        "task_description": context.task_description,
        "conversation_id": context.conversation_id,
        "project_id": context.project_id,
        "config_version": context.config_version,
        "status": context.status,
        "progress": context.progress,
        "current_step": context.current_step,
        "input_context": context.input_context or {"artifacts": [], "messages": [], "user_instructions": []},
        "output_state": context.output_state or {"generated_artifacts": [], "pending_questions": [], "errors": []},
        "resource_usage": context.resource_usage
        or {
            "total_tokens": context.total_tokens,
            "input_tokens": context.input_tokens,
            "output_tokens": context.output_tokens,
            "api_calls": context.api_calls,
            "estimated": context.tokens_estimated,
        },
        "memory": context.memory or empty_memory(),
        "knowledge": context.knowledge or [],
        "created_at": context.created_at.timestamp(),
        "updated_at": context.updated_at.timestamp(),
    }


def take_manual_snapshot(user: Any, context_id: str, label: Any) -> dict[str, Any]:
    """A ``manual`` snapshot labelled ``label`` (optional, up to 300 characters); returns it as
    ``{id, context_id, type, trigger, label, sequence, state, created_at}`` (epoch s).

    Raises ContextActionError: 400 bad label, 403/404 access.
    """
    label = clean_text(label, "label", MAX_LABEL_CHARS, required=False)
    if reason := hidden_character_problem(label):  # a label is shown in the snapshot lists
        raise ContextActionError(400, reason, "label")
    context = operable_context(user, context_id)
    if context.status not in live_items.FINAL_CONTEXT_STATUSES:
        snapshot = _live_command(context, "snapshot", {"label": label})
        if snapshot is not None:
            return snapshot
    return _snapshot_from_database(context, label)


def _snapshot_from_database(context: ExecutionContext, label: str) -> dict[str, Any]:
    now = datetime.now(tz=UTC)
    with transaction.atomic():
        # Lock the context row so two operators' snapshots get distinct sequence numbers.
        locked = ExecutionContext.objects.select_for_update().get(pk=context.pk)
        sequence = (Snapshot.objects.filter(context=locked).aggregate(top=Max("sequence"))["top"] or 0) + 1
        row = Snapshot.objects.create(
            id=new_id(),
            context=locked,
            type="manual",
            trigger="manual",
            label=label,
            sequence=sequence,
            stored_state=state_from_row(locked),
            created_at=now,
        )
        item = {
            **live_items.snapshot_item(row),
            "task_id": locked.task_id,
            "project_id": locked.project_id,
            "role": locked.role,
        }
        transaction.on_commit(lambda: _publish_snapshot(item))
    return {
        "id": row.id,
        "context_id": row.context_id,
        "task_id": locked.task_id,
        "type": row.type,
        "trigger": row.trigger,
        "label": row.label,
        "sequence": row.sequence,
        "state": row.state,
        "created_at": now.timestamp(),
    }


def _publish_snapshot(item: dict[str, Any]) -> None:
    get_live_sink().publish_items([LiveItem("snapshot", f"snapshot:{item['id']}", item)])
