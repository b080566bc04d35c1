"""The closed set of runtime error codes and the ``AgentError`` shape (PRD §4.4 ``AgentError``).

Every failure an invoke can return carries one of ``ErrorCode``; nothing else is ever put in
``InvokeResult.error.code``. ``RETRYABLE`` lists the codes the runtime retries with backoff
(timeout, unavailable, executor crash; docs/architecture.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class ErrorCode(StrEnum):
    """Why an invoke, hook or tool use failed.

    - ``permission_denied``: the effective invoke matrix (PRD §4.7) forbids caller -> target.
    - ``capability_not_found``: no card with that id/address, or the target role does not own it.
    - ``capability_disabled``: the card, the target role or its skill is disabled (US-06).
    - ``invalid_params``: params fail the card's ``input_schema``; details list JSON pointers.
    - ``output_invalid``: the executor's result fails ``output_schema``; details list pointers.
    - ``timeout``: no response within the effective timeout (s).
    - ``unavailable``: no healthy instance can take the call (heartbeat lost, §4.2).
    - ``queue_full``: the target mailbox is full and nothing of lower priority can be evicted.
    - ``budget_exceeded``: the task's token budget (PRD §4.7, 50,000 default) is spent.
    - ``tool_denied``: the tool permission matrix denies the tool, or an operator rejected it.
    - ``executor_error``: the executor raised or returned something unusable.
    - ``cancelled``: the task was cancelled; its waiting and later invokes end with this.
    """

    PERMISSION_DENIED = "permission_denied"
    CAPABILITY_NOT_FOUND = "capability_not_found"
    CAPABILITY_DISABLED = "capability_disabled"
    INVALID_PARAMS = "invalid_params"
    OUTPUT_INVALID = "output_invalid"
    TIMEOUT = "timeout"
    UNAVAILABLE = "unavailable"
    QUEUE_FULL = "queue_full"
    BUDGET_EXCEEDED = "budget_exceeded"
    TOOL_DENIED = "tool_denied"
    EXECUTOR_ERROR = "executor_error"
    CANCELLED = "cancelled"


RETRYABLE: frozenset[ErrorCode] = frozenset({ErrorCode.TIMEOUT, ErrorCode.UNAVAILABLE, ErrorCode.EXECUTOR_ERROR})


@dataclass(frozen=True, slots=True)
class AgentError:
    """``{code, message, details}`` as returned in ``InvokeResult.error``.

    ``retryable`` is False for failures that a retry cannot fix even when their code is
    otherwise retryable (an unknown ``target_instance_id`` is ``unavailable`` for good).
    """

    code: ErrorCode
    message: str
    details: dict[str, Any] = field(default_factory=dict)
    retryable: bool = True

    def as_dict(self) -> dict[str, Any]:
        """JSON shape: ``{"code": str, "message": str, "details": {...}}``."""
        return {"code": str(self.code), "message": self.message, "details": self.details}

    @property
    def should_retry(self) -> bool:
        """True when the runtime may retry this failure (code in RETRYABLE and retryable)."""
        return self.retryable and self.code in RETRYABLE


class AgentFailure(Exception):
    """Raised inside the runtime (and by executors) to fail an invoke with an ``AgentError``."""

    def __init__(
        self, code: ErrorCode, message: str, details: dict[str, Any] | None = None, *, retryable: bool = True
    ) -> None:
        super().__init__(f"{code}: {message}")
        self.error = AgentError(code, message, details or {}, retryable)
