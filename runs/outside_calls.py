"""Invokes and hooks from outside any agent (the API's ``/capabilities/invoke`` and ``/hooks``)
as plain JSON in, JSON out, so that any runtime worker can run one for any web process
(``runs.commands.call_anywhere``; docs/architecture.md §3).

Each function takes the runtime and the call's payload and returns ``(body, None)`` or
``(None, error)`` where ``error`` is ``{status, detail, errors, extra}`` (the API's error
shape and HTTP status).
"""

from __future__ import annotations

from typing import Any

from teamclaw.runtime import AgentFailure, HookEvent, InvokeRequest, Priority, RoutingStrategy, Runtime, TaskNotRunning

CallOutcome = tuple[dict[str, Any] | None, dict[str, Any] | None]


def not_running(exc: TaskNotRunning) -> dict[str, Any]:
    return {"status": 400, "detail": str(exc), "errors": {"task_id": [str(exc)]}, "extra": {}}


async def run_invoke(runtime: Runtime, payload: dict[str, Any]) -> CallOutcome:
    """Invoke ``payload["capability"]`` (an id or a ``cap://`` address) as
    ``payload["from_role"]`` with ``params``, ``target_role``, ``target_instance_id``,
    ``routing``, ``timeout`` (s), ``priority``, ``project``, ``task_id``, ``description`` (the
    title of the short task it runs in without ``task_id``; default "invoke <capability>"). The body is the PRD
    §4.4 ``InvokeResult`` plus seed 003's ``result``; a task that is not running is a 400."""
    request = InvokeRequest(
        payload["capability"],
        payload.get("params") or {},
        target_role=payload.get("target_role"),
        target_instance_id=payload.get("target_instance_id"),
        routing=RoutingStrategy(payload["routing"]) if payload.get("routing") else None,
        timeout=payload.get("timeout"),
        priority=Priority.parse(payload.get("priority")),
    )
    try:
        result = await runtime.invoke(
            request,
            from_role=payload["from_role"],
            project_id=payload.get("project"),
            task_id=payload.get("task_id"),
            description=payload.get("description") or "",
        )
    except TaskNotRunning as exc:
        return None, not_running(exc)
    body = result.as_dict()
    body["result"] = body["data"]
    return body, None


async def run_hook(runtime: Runtime, payload: dict[str, Any]) -> CallOutcome:
    """Fire hook ``payload["event_type"]`` as ``from_role`` with ``payload``, ``broadcast``,
    ``target_roles``, ``capability_id``, ``project``, ``task_id``: ``{"acks": [...]}``."""
    event = HookEvent(
        payload["event_type"],
        payload.get("payload") or {},
        payload.get("broadcast", False),
        payload.get("target_roles"),
        payload.get("capability_id"),
    )
    try:
        acks = await runtime.hook(
            event, from_role=payload["from_role"], project_id=payload.get("project"), task_id=payload.get("task_id")
        )
    except AgentFailure as failure:
        return None, {
            "status": 400,
            "detail": failure.error.message,
            "errors": {},
            "extra": {"error": failure.error.as_dict()},
        }
    except TaskNotRunning as exc:
        return None, not_running(exc)
    return {"acks": [ack.as_dict() for ack in acks]}, None


CALLS = {"invoke": run_invoke, "hook": run_hook}
"""The outside calls a worker runs, by command kind."""
