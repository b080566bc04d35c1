"""Request and result shapes of invoke and hook (PRD §4.3 EventSubscription, §4.4).

Units: ``timeout`` is seconds, ``latency_ms`` milliseconds.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from teamclaw.runtime.errors import AgentError
from teamclaw.runtime.messages import Priority

DEFAULT_TIMEOUT_S = 60
"""PRD §4.4: ``timeout?: number // 默认 60 秒``."""


class RoutingStrategy(StrEnum):
    """PRD §4.4 调用路由策略."""

    BY_ROLE = "by_role"
    BY_INSTANCE = "by_instance"
    LEAST_BUSY = "least_busy"


@dataclass(slots=True)
class InvokeRequest:
    """``InvokeRequest`` of PRD §4.4; ``capability_id`` may also be a ``cap://`` address.

    ``routing`` defaults to ``by_instance`` when ``target_instance_id`` is given, else
    ``by_role``. ``timeout`` (s) can only lower the card's and the role's limit.
    """

    capability_id: str
    params: dict[str, Any] = field(default_factory=dict)
    target_role: str | None = None
    target_instance_id: str | None = None
    routing: RoutingStrategy | None = None
    timeout: float | None = None
    priority: Priority = Priority.NORMAL


@dataclass(slots=True)
class InvokeResult:
    """``InvokeResult`` of PRD §4.4 plus ``attempts`` and the ``invoke_id`` tying retries."""

    success: bool
    data: Any = None
    error: AgentError | None = None
    latency_ms: float = 0.0
    from_instance: str | None = None
    attempts: int = 1
    invoke_id: str = ""
    task_id: str = ""

    def as_dict(self) -> dict[str, Any]:
        """``{success, data, error{code,message,details}, latency_ms, from_instance, ...}``."""
        return {
            "success": self.success,
            "data": self.data,
            "error": self.error.as_dict() if self.error else None,
            "latency_ms": round(self.latency_ms, 3),
            "from_instance": self.from_instance,
            "attempts": self.attempts,
            "invoke_id": self.invoke_id,
            "task_id": self.task_id,
        }


@dataclass(slots=True)
class HookEvent:
    """``HookEvent`` of PRD §4.4: to ``target_roles``, or with ``broadcast`` to subscribers."""

    event_type: str
    payload: dict[str, Any] = field(default_factory=dict)
    broadcast: bool = False
    target_roles: list[str] | None = None
    capability_id: str | None = None


@dataclass(frozen=True, slots=True)
class HookAck:
    """One receiver's ``hook_ack``: ``status`` is ``received`` (or ``rejected`` with a reason)."""

    instance_id: str
    role: str
    status: str
    reason: str | None = None

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"instance_id": self.instance_id, "role": self.role, "status": self.status}
        if self.reason:
            out["reason"] = self.reason
        return out


@dataclass(frozen=True, slots=True)
class EventSubscription:
    """``EventSubscription`` of PRD §4.3.

    ``event_types`` may hold message types (``hook_event`` matches every hook) or hook
    ``event_type`` names such as ``code_completed``; empty filters match everything.
    """

    subscriber_instance_id: str
    event_types: tuple[str, ...]
    from_roles: tuple[str, ...] = ()
    task_ids: tuple[str, ...] = ()
    id: str = field(default_factory=lambda: uuid.uuid4().hex)

    def matches(self, event_type: str, from_role: str | None, task_id: str | None) -> bool:
        """True when a hook of ``event_type`` from ``from_role`` in ``task_id`` is wanted."""
        if "hook_event" not in self.event_types and event_type not in self.event_types:
            return False
        if self.from_roles and from_role not in self.from_roles:
            return False
        return not (self.task_ids and task_id not in self.task_ids)


@dataclass(frozen=True, slots=True)
class OperatorAnswer:
    """An operator's answer to ``ask``: the ``values`` (matching the request's
    ``answer_schema``) and the user name of who gave it (``answered_by``)."""

    values: dict[str, Any]
    answered_by: str


ROUND_KEYS = ("mode", "round", "phase")
"""Input fields that name the round a call runs in (the experts' ``mode``: review, evaluate,
respond; seed 002 §6.2-§6.4)."""


def call_round(params: Any) -> str:
    """The round a call's input names (the first of ROUND_KEYS that holds a string or a whole
    number), or ``""`` when it names none (or ``params`` is not an object)."""
    if not isinstance(params, dict):
        return ""
    for name in ROUND_KEYS:
        value = params.get(name)
        if isinstance(value, str | int) and not isinstance(value, bool):
            return str(value)
    return ""
