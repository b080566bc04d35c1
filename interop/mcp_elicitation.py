"""Tool confirmations offered to the MCP client through elicitation (issue 29 item 3; PRD §4.7 ⚠️).

A ``tools/call`` runs its capability as a short task of its own (``interop.mcp_server``). When
the client declared the ``elicitation`` capability (form mode) at ``initialize``, every tool
confirmation that task raises while the call runs (a ``confirm`` cell of the tool matrix:
``ToolConfirmation`` rows of kind ``tool`` and status ``pending``) is also put to the client as
an ``elicitation/create`` request on the call's own stream (``related_request_id``), with a
form of one boolean ``approve`` and an optional ``reason``:

- ``accept`` with ``approve: true`` approves it, ``approve: false`` rejects it (with ``reason``);
- ``decline`` and ``cancel`` reject it, the reason saying the MCP client declined or cancelled.

The answer is the operator's decision through ``runs.confirmations.decide_as`` with
``decided_by`` = ``token:<role token name>``: the same record, event and delivery as a
dashboard decision. The confirmation stays on the dashboard all along: whichever answer comes
first wins (``decide_as`` is a compare-and-swap from ``pending``; the later one is a 409, here
ignored). An elicitation still open when the call ends (the dashboard answered, the
confirmation expired) is cancelled. A client without the capability is never asked: its
confirmations wait on the dashboard only, as before. A client that answers with an error (or
whose answer does not fit the form) leaves the confirmation to the dashboard.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from typing import Any

import mcp_types as types
from channels.db import database_sync_to_async
from django.db import close_old_connections
from django.utils import timezone
from django.utils.translation import gettext as _
from mcp.shared.exceptions import MCPError

from monitoring.models import Task, ToolConfirmation
from runs.confirmations import ConfirmationError, decide_as

log = logging.getLogger(__name__)

POLL_S = 0.25
"""How often (s) a running ``tools/call`` looks for new confirmations of its task."""

MAX_ARGS_SHOWN = 600
"""How many characters of a tool's arguments the elicitation message repeats."""

APPROVAL_FORM: dict[str, Any] = {
    "type": "object",
    "properties": {
        "approve": {
            "type": "boolean",
            "title": "Approve",
            "description": "true runs the tool; false refuses it",
        },
        "reason": {
            "type": "string",
            "title": "Reason",
            "description": "why (kept with the decision)",
            "maxLength": 500,
        },
    },
    "required": ["approve"],
}
"""The ``requestedSchema`` of every confirmation's elicitation (flat primitives, as the MCP spec
requires)."""


def supports_elicitation(session: Any) -> bool:
    """True when the MCP client declared the ``elicitation`` capability with form mode (an empty
    ``elicitation: {}`` means form mode, per the spec)."""
    capabilities = getattr(session, "client_capabilities", None)
    elicitation = getattr(capabilities, "elicitation", None)
    if elicitation is None:
        return False
    return elicitation.form is not None or elicitation.url is None


def elicitation_message(row: ToolConfirmation) -> str:
    """What the client shows its user: which role wants which tool, with its arguments."""
    args = str(row.args)
    if len(args) > MAX_ARGS_SHOWN:
        args = args[: MAX_ARGS_SHOWN - 3] + "..."
    return _(
        "TeamClaw: the %(role)s agent wants to use the tool %(tool)s (confirmation %(id)s). "
        "Arguments: %(args)s. Approve it?"
    ) % {"role": row.role, "tool": row.tool, "id": row.id, "args": args}


def decision_of(result: types.ElicitResult) -> tuple[bool, str | None] | None:
    """``(approve, reason)`` from the client's answer; None when an ``accept`` carries no
    boolean ``approve`` (then nothing is decided)."""
    if result.action == "decline":
        return False, _("declined through the MCP client")
    if result.action == "cancel":
        return False, _("cancelled in the MCP client")
    content = result.content or {}
    approve = content.get("approve")
    if not isinstance(approve, bool):
        return None
    reason = content.get("reason")
    return approve, reason if isinstance(reason, str) and reason.strip() else None


def _task_id(description: str, since: datetime) -> str | None:
    """The id of the task titled ``description`` started at or after ``since`` (the indexed
    ``created_at`` bounds the scan), or None while it is not recorded yet."""
    close_old_connections()
    rows = Task.objects.filter(created_at__gte=since, status__in=["queued", "running"], description=description)
    return rows.values_list("pk", flat=True).first()


def _pending(task_id: str, offered: set[str]) -> list[ToolConfirmation]:
    close_old_connections()
    rows = ToolConfirmation.objects.filter(task_id=task_id, kind="tool", status="pending")
    return list(rows.exclude(pk__in=offered).order_by("created_at"))


def _decide(confirmation_id: str, approve: bool, decided_by: str, reason: str | None) -> None:
    close_old_connections()
    try:
        decide_as(confirmation_id, approve, decided_by, reason)
    except ConfirmationError as exc:  # someone answered first, or the wait is over
        log.info("an MCP elicitation answer for %s came too late: %s", confirmation_id, exc.message)


async def offer(session: Any, row: ToolConfirmation, request_id: Any, decided_by: str) -> None:
    """Put one confirmation to the client and apply its answer (module docstring)."""
    try:
        result = await session.elicit_form(elicitation_message(row), APPROVAL_FORM, related_request_id=request_id)
    except MCPError as exc:
        log.info("the MCP client did not answer the elicitation for %s: %s", row.id, exc)
        return
    decision = decision_of(result)
    if decision is not None:
        await database_sync_to_async(_decide)(row.id, decision[0], decided_by, decision[1])


async def run_offering_confirmations(
    running: Awaitable[Any], description: str, ask: Callable[[ToolConfirmation], Awaitable[None]]
) -> Any:
    """Await ``running`` (a ``tools/call``'s ``call_anywhere``, whose task is titled
    ``description``); meanwhile ``ask`` the client about each new pending confirmation of that
    task, each in a task of its own, cancelled when ``running`` ends. Returns its result."""
    since = timezone.now() - timedelta(seconds=5)  # leeway for the database clock
    call = asyncio.ensure_future(running)
    offered: set[str] = set()
    asking: list[asyncio.Task[None]] = []
    task_id: str | None = None
    try:
        while True:
            done, _ = await asyncio.wait([call], timeout=POLL_S)
            if done:
                return call.result()
            if task_id is None:
                task_id = await database_sync_to_async(_task_id)(description, since)
                if task_id is None:
                    continue
            for row in await database_sync_to_async(_pending)(task_id, offered):
                offered.add(row.id)
                asking.append(asyncio.ensure_future(ask(row)))
    finally:
        if not call.done():
            call.cancel()
        for waiting in asking:
            waiting.cancel()
        for waiting in asking:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await waiting
