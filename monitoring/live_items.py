"""The live things of the execution viewer as plain dicts (PRD §4.6, US-04/05).

Each live thing (a context card, a message row, a confirmation, a snapshot, an alert, a
config change, a task status, an artifact) is shown by one fragment template. The template
always gets the same dict, whether the page renders it from a database row on first load or
the live sink builds it from a runtime event the moment the recorder committed it, so the
first render, htmx swaps and websocket pushes are one and the same HTML.

Times are aware UTC datetimes; token counts are tokens.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import Any

from django.utils.translation import gettext, gettext_noop

from monitoring.file_write_preview import file_write_preview
from monitoring.models import Alert, Artifact, ExecutionContext, Message, Snapshot, Task, ToolConfirmation

FINAL_CONTEXT_STATUSES = frozenset({"completed", "failed", "terminated"})
"""AgentStatus values after which a context never changes again (PRD §4.6)."""

SUMMARY_CHARS = 160
ARTIFACT_PREVIEW_CHARS = 20_000


def from_epoch(seconds: float | None) -> datetime | None:
    """Epoch seconds (runtime clock) -> aware UTC datetime."""
    return datetime.fromtimestamp(seconds, tz=UTC) if seconds is not None else None


def _clip(text: str, limit: int = SUMMARY_CHARS) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _compact(value: Any, limit: int = SUMMARY_CHARS) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False, default=str, separators=(",", ":"))
    except (TypeError, ValueError):
        text = repr(value)
    return _clip(text, limit)


VALUE_CHARS = 48
"""Longest a single value is shown inline in a summary (``key: value``) before it is cut."""
DETAIL_CHARS = 4000
"""Longest the folded full payload of a message row is (JSON text, characters)."""


def _inline(value: Any) -> str:
    """One value of a payload as shown inline: a string as it is, anything else as JSON with
    a space after each comma and colon (so a narrow cell wraps between items, never inside
    one), cut at VALUE_CHARS characters."""
    if isinstance(value, str):
        return _clip(value, VALUE_CHARS)
    try:
        text = json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        text = repr(value)
    return _clip(text, VALUE_CHARS)


def _pairs(mapping: dict[str, Any]) -> str:
    """``key: value, ...`` of a payload object, keys sorted, each value ``_inline``."""
    return ", ".join(f"{key}: {_inline(mapping[key])}" for key in sorted(mapping, key=str))


def payload_detail(payload: Any) -> str:
    """The whole payload as indented JSON, cut at DETAIL_CHARS characters: what a message
    row unfolds when its summary line had to cut something."""
    try:
        text = json.dumps(payload, ensure_ascii=False, default=str, indent=2, sort_keys=True)
    except (TypeError, ValueError):
        text = repr(payload)
    return text if len(text) <= DETAIL_CHARS else text[: DETAIL_CHARS - 1] + "…"


SUMMARY_FORMATS = {
    "params": gettext_noop("params {%(keys)s}"),
    "retry": gettext_noop("params {%(keys)s} (attempt %(attempt)s)"),
    "refused": gettext_noop("refused: %(code)s: %(message)s"),
    "result": gettext_noop("result {%(keys)s}"),
    "instruction": gettext_noop("instruction from %(author)s: %(instruction)s"),
}
"""The worded message summaries (translated when shown, ``summary_text``); every other
summary is the payload's own identifiers and values, shown as they are."""


def summary_parts(message_type: str, payload: dict[str, Any]) -> list[Any]:
    """A message's summary before wording: ``[form, values]`` with ``form`` a key of
    ``SUMMARY_FORMATS`` and ``values`` its placeholders (strings), or ``["", {"text": ...}]``
    for a summary made of the payload's own words (PRD §4.3 message types). JSON-ready, so a
    live item carries it and each socket words it in its operator's language."""
    if not isinstance(payload, dict):
        return ["", {"text": _compact(payload)}]
    if message_type == "invoke_request":
        params = payload.get("params") or {}
        keys = _pairs(params) if isinstance(params, dict) else _inline(params)
        attempt = payload.get("attempt")
        if payload.get("error"):
            error = payload["error"]
            return ["refused", {"code": str(error.get("code")), "message": _clip(str(error.get("message", "")))}]
        if attempt and attempt != 1:
            return ["retry", {"keys": _clip(keys), "attempt": str(attempt)}]
        return ["params", {"keys": _clip(keys)}]
    if message_type == "invoke_response":
        result = payload.get("result")
        if isinstance(result, dict):
            return ["result", {"keys": _clip(_pairs(result))}]
        return ["", {"text": _compact(result)}]
    if message_type == "invoke_error":
        error = payload.get("error") or {}
        return ["", {"text": _clip(f"{error.get('code')}: {error.get('message', '')}")}]
    if message_type == "hook_event":
        return ["", {"text": _clip(f"{payload.get('event_type')} {_compact(payload.get('payload') or {}, 100)}")}]
    if message_type == "hook_ack":
        return ["", {"text": _clip(f"{payload.get('status')} {payload.get('event_type') or ''}")}]
    if message_type == "status_update":
        words = " ".join(str(payload.get(k)) for k in ("status", "event_type", "capability_id") if payload.get(k))
        return ["", {"text": _clip(words)}]
    if message_type == "context_sync" and "user_instruction" in payload:
        author, instruction = str(payload.get("author", "operator")), str(payload["user_instruction"])
        return ["instruction", {"author": _clip(author, 40), "instruction": _clip(instruction)}]
    return ["", {"text": _compact(payload)}]


def summary_text(parts: list[Any], *, translate: bool = True) -> str:
    """The summary line of ``summary_parts`` (at most SUMMARY_CHARS characters), worded in
    the active language, or in English with ``translate`` False. A malformed ``parts``
    gives ''."""
    try:
        form, values = parts
        if not form:
            return str(values["text"])
        wording = SUMMARY_FORMATS[form]
        return _clip((gettext(wording) if translate else wording) % values)
    except (KeyError, TypeError, ValueError):
        return ""


def message_summary(message_type: str, payload: dict[str, Any]) -> str:
    """One readable line about a message's payload (PRD §4.3 message types), worded in the
    active language."""
    return summary_text(summary_parts(message_type, payload))


def _summary(message_type: str, payload: dict[str, Any]) -> dict[str, Any]:
    """A message item's ``summary`` (English, for programs reading the item's data),
    ``summary_parts`` (what its row shows, in the reader's language) and ``detail``: the
    whole payload (``payload_detail``) when the summary line cut something, else ''."""
    parts = summary_parts(message_type, payload)
    summary = summary_text(parts, translate=False)
    cut = "…" in summary
    return {"summary": summary, "summary_parts": parts, "detail": payload_detail(payload) if cut else ""}


# -- execution contexts ---------------------------------------------------------------
def context_item_from_runtime(context: Any) -> dict[str, Any]:
    """A context card from the runtime's live ``ExecutionContext`` (read its fields, not ``state()``)."""
    status = str(context.status)
    return {
        "id": context.id,
        "task_id": context.task_id,
        "project_id": context.project_id,
        "role": context.role,
        "instance_id": context.instance_id,
        "status": status,
        "progress": int(context.progress),
        "current_step": str(context.current_step)[:200],
        "input_tokens": context.input_tokens,
        "output_tokens": context.output_tokens,
        "total_tokens": context.input_tokens + context.output_tokens,
        "api_calls": context.api_calls,
        "tokens_estimated": bool(context.tokens_estimated),
        "pending_questions": len(context.pending_questions),
        "errors": len(context.errors),
        "updated_at": from_epoch(context.updated_at or context.created_at),
        "final": status in FINAL_CONTEXT_STATUSES,
    }


def context_item_from_row(row: ExecutionContext) -> dict[str, Any]:
    """A context card from its database row."""
    output = row.output_state or {}
    return {
        "id": row.id,
        "task_id": row.task_id,
        "project_id": row.project_id,
        "role": row.role,
        "instance_id": row.instance_id,
        "status": row.status,
        "progress": row.progress,
        "current_step": row.current_step,
        "input_tokens": row.input_tokens,
        "output_tokens": row.output_tokens,
        "total_tokens": row.total_tokens,
        "api_calls": row.api_calls,
        "tokens_estimated": row.tokens_estimated,
        "pending_questions": len(output.get("pending_questions") or []),
        "errors": len(output.get("errors") or []),
        "updated_at": row.updated_at,
        "final": row.status in FINAL_CONTEXT_STATUSES,
    }


# -- messages ---------------------------------------------------------------------------
def message_item_from_runtime(message: Any, status: str, reason: str | None, project_id: str | None) -> dict[str, Any]:
    """A message-log row from an ``AgentMessage`` and its delivery status (PRD §4.3)."""
    payload = message.payload
    message_type = str(message.type)
    return {
        "id": message.id,
        "seq": message.seq,
        "type": message_type,
        "from_role": message.sender.role or "",
        "from_instance": message.sender.instance_id or "",
        "to_role": message.recipient.role or "",
        "to_instance": message.recipient.instance_id or "",
        "capability_id": str(payload.get("capability_id") or payload.get("event_type") or "")[:300],
        "task_id": message.context.task_id,
        "project_id": project_id,
        "priority": message.priority.label,
        "status": str(status),
        "reason": (reason or "")[:300],
        "at": from_epoch(message.timestamp / 1000),
        **_summary(message_type, payload),
    }


def message_item_from_row(row: Message) -> dict[str, Any]:
    """A message-log row from its database row."""
    return {
        "id": row.id,
        "seq": row.seq,
        "type": row.type,
        "from_role": row.from_role,
        "from_instance": row.from_instance,
        "to_role": row.to_role,
        "to_instance": row.to_instance,
        "capability_id": row.capability_id,
        "task_id": row.task_id,
        "project_id": row.project_id,
        "priority": row.priority,
        "status": row.status,
        "reason": row.reason,
        "at": from_epoch(row.timestamp_ms / 1000),
        **_summary(row.type, row.payload),
    }


# -- tool confirmations -------------------------------------------------------------------
def confirmation_item(source: dict[str, Any] | ToolConfirmation) -> dict[str, Any]:
    """A pending (or decided) confirmation from the runtime's dict or a row: a tool use
    (PRD §4.7 ⚠️; ``args`` shortened) or an operator input (``kind`` ``input``: the whole
    ``request`` without its answer schema, and the part of the answer ``given`` so far)."""
    if isinstance(source, ToolConfirmation):
        data: dict[str, Any] = {
            "id": source.id,
            "context_id": source.context_id,
            "instance_id": source.instance_id,
            "role": source.role,
            "task_id": source.task_id,
            "project_id": source.project_id,
            "kind": source.kind,
            "tool": source.tool,
            "args": source.args,
            "given": source.answer or {},
            "status": source.status,
            "decided_by": source.decided_by,
            "created_at": source.created_at,
            "expires_at": source.expires_at,
        }
    else:
        data = {
            "id": source["id"],
            "context_id": source["context_id"],
            "instance_id": source["instance_id"],
            "role": source["role"],
            "task_id": source["task_id"],
            "project_id": source.get("project_id"),
            "kind": source.get("kind") or "tool",
            "tool": source["tool"],
            "args": source.get("args") or {},
            "given": source.get("answer") or {},
            "status": source["status"],
            "decided_by": source.get("decided_by") or "",
            "created_at": from_epoch(source.get("created_at")),
            "expires_at": from_epoch(source.get("expires_at")),
        }
    if data["kind"] == "input":
        data["request"] = {k: v for k, v in dict(data["args"]).items() if k != "answer_schema"}
        data["args"] = {}
    else:
        if data["tool"] == "file_write" and isinstance(data["args"], dict):
            data["file_write"] = _write_card(source, data)
        data["args"] = _compact(data["args"], 400)
    return data


def _write_card(source: dict[str, Any] | ToolConfirmation, data: dict[str, Any]) -> dict[str, Any]:
    """A ``file_write`` card's preview: while it waits, against the file as it is now; once
    decided, the preview taken when it was asked (``ToolConfirmation.preview``), so the card
    keeps showing what was approved or rejected rather than the file after the write."""
    if data["status"] != "pending":
        stored = (
            source.preview
            if isinstance(source, ToolConfirmation)
            else ToolConfirmation.objects.filter(pk=data["id"]).values_list("preview", flat=True).first()
        )
        if stored:
            return dict(stored)
    return file_write_preview(data["role"], data["project_id"], data["args"])


# -- snapshots ----------------------------------------------------------------------------
def snapshot_item(source: dict[str, Any] | Snapshot) -> dict[str, Any]:
    """A snapshot's timeline entry (PRD §4.6: type auto/error/manual and its trigger), no state."""
    if isinstance(source, Snapshot):
        return {
            "id": source.id,
            "context_id": source.context_id,
            "type": source.type,
            "trigger": source.trigger,
            "label": source.label,
            "sequence": source.sequence,
            "created_at": source.created_at,
        }
    return {
        "id": source["id"],
        "context_id": source["context_id"],
        "type": source["type"],
        "trigger": source["trigger"][:200],
        "label": (source.get("label") or "")[:300],
        "sequence": source["sequence"],
        "created_at": from_epoch(source.get("created_at")),
    }


# -- alerts and config changes --------------------------------------------------------------
def alert_item(source: dict[str, Any] | Alert, key: str) -> dict[str, Any]:
    """An alert (queue drop, health change, budget stop) keyed by ``key`` for the page."""
    if isinstance(source, Alert):
        return {
            "key": key,
            "kind": source.kind,
            "severity": source.severity,
            "message": source.message,
            "task_id": (source.details or {}).get("task_id") or "",
            "created_at": source.created_at,
        }
    return {
        "key": key,
        "kind": source["kind"],
        "severity": source["severity"],
        "message": source["message"],
        "task_id": (source.get("details") or {}).get("task_id") or "",
        "created_at": from_epoch(source.get("at")),
    }


def config_change_item(event: dict[str, Any], at: datetime | None) -> dict[str, Any]:
    """A ConfigChangeEvent (PRD §4.8) as shown in the live feed."""
    return {
        "config_type": event.get("config_type", ""),
        "role": event.get("role") or "",
        "project_id": event.get("project_id") or "",
        "old_version": str(event.get("old_version", "")),
        "new_version": str(event.get("new_version", "")),
        "changed_fields": list(event.get("changed_fields") or [])[:20],
        "at": at,
    }


# -- tasks and artifacts ----------------------------------------------------------------------
def task_item(source: dict[str, Any] | Task) -> dict[str, Any]:
    """A task's status badge (and what the live page lists about running tasks)."""
    if isinstance(source, Task):
        return {
            "id": source.id,
            "title": source.title or source.id,
            "status": source.status,
            "project_id": source.project_id,
            "tokens_used": source.tokens_used,
            "token_budget": source.token_budget,
            "tokens_estimated": source.executor == "offline",
            "error": source.error,
        }
    return {
        "id": source["task_id"],
        "title": (source.get("description") or source["task_id"])[:300],
        "status": source["status"],
        "project_id": source.get("project_id"),
        "tokens_used": source.get("tokens_used"),
        "token_budget": source.get("token_budget"),
        "tokens_estimated": bool(source.get("tokens_estimated")),
        "error": source.get("error"),
    }


def artifact_item(source: dict[str, Any] | Artifact) -> dict[str, Any]:
    """An artifact entry: name, producer, type, size, and at most the first 20,000 characters."""
    if isinstance(source, Artifact):
        content, task_id = source.content, source.task_id
        name, role, content_type = source.name, source.role, source.content_type
    else:
        content, task_id = source["content"], source["task_id"]
        name, role, content_type = source["name"], source.get("role", ""), source["content_type"]
    return {
        "task_id": task_id,
        "name": name,
        "role": role,
        "content_type": content_type,
        "chars": len(content),
        "preview": content[:ARTIFACT_PREVIEW_CHARS],
        "truncated": len(content) > ARTIFACT_PREVIEW_CHARS,
        "previous_revision": previous_revision(name),
    }


def previous_revision(name: str) -> str:
    """``requirement.v1.md`` for ``requirement.v2.md`` (seed 002 phase 5 revisions), else ''."""
    match = re.fullmatch(r"requirement\.v(\d+)\.md", name)
    return f"requirement.v{int(match.group(1)) - 1}.md" if match and int(match.group(1)) > 1 else ""
