"""The agent message of PRD §4.3: ``AgentMessage``, its ten ``MessageType``s and priorities.

Units: ``timestamp`` is epoch milliseconds, ``ttl`` is milliseconds; a message is expired
when ``now_ms > timestamp + ttl`` and is then never delivered (docs/architecture.md §6, Mailbox).
"""

from __future__ import annotations

import itertools
import os
import threading
import time
from dataclasses import dataclass, field
from enum import IntEnum, StrEnum
from typing import Any


class MessageType(StrEnum):
    """The ten message types of PRD §4.3."""

    INVOKE_REQUEST = "invoke_request"
    INVOKE_RESPONSE = "invoke_response"
    INVOKE_ERROR = "invoke_error"
    HOOK_EVENT = "hook_event"
    HOOK_ACK = "hook_ack"
    STATUS_UPDATE = "status_update"
    PROGRESS_REPORT = "progress_report"
    QUESTION_BROADCAST = "question_broadcast"
    ARTIFACT_SHARE = "artifact_share"
    CONTEXT_SYNC = "context_sync"


class Priority(IntEnum):
    """Mailbox priority, higher value delivered first: urgent > high > normal > low."""

    LOW = 0
    NORMAL = 1
    HIGH = 2
    URGENT = 3

    @classmethod
    def parse(cls, value: str | int | Priority | None) -> Priority:
        """Accept ``'low'|'normal'|'high'|'urgent'`` (or a Priority); None means normal.

        Raises ValueError naming the accepted values for anything else.
        """
        if value is None:
            return cls.NORMAL
        if isinstance(value, Priority):
            return value
        if isinstance(value, str):
            try:
                return cls[value.upper()]
            except KeyError:
                pass
        raise ValueError(f"priority must be one of low, normal, high, urgent; got {value!r}")

    @property
    def label(self) -> str:
        """The PRD spelling: ``'low'``, ``'normal'``, ``'high'`` or ``'urgent'``."""
        return self.name.lower()


class DeliveryStatus(StrEnum):
    """What became of a message; the recorder stores the latest one per message."""

    QUEUED = "queued"
    DELIVERED = "delivered"
    DROPPED = "dropped"
    EXPIRED = "expired"
    DENIED = "denied"


@dataclass(frozen=True, slots=True)
class Party:
    """A message end: ``{instance_id?, role?}`` (PRD §4.3 ``from``/``to``)."""

    role: str | None = None
    instance_id: str | None = None

    def as_dict(self) -> dict[str, str | None]:
        return {"instance_id": self.instance_id, "role": self.role}


@dataclass(frozen=True, slots=True)
class MessageContext:
    """``context.{task_id, conversation_id, correlation_id}`` of PRD §4.3."""

    task_id: str
    conversation_id: str
    correlation_id: str | None = None

    def as_dict(self) -> dict[str, str | None]:
        return {
            "task_id": self.task_id,
            "conversation_id": self.conversation_id,
            "correlation_id": self.correlation_id,
        }


class SendOrder:
    """Messages' ``seq``: strictly increasing within a process and, across processes (several
    runtime workers, a task resumed by another worker after a crash), in wall-clock order:
    each value is ``max(previous + 1, microseconds since the epoch)``. So the message log
    sorted by ``seq`` is the order messages were sent in, attempts of a resumed task
    included (to the clocks' agreement between hosts). Thread-safe; about 1.6e15 today, well
    inside a JSON number's exact range (2**53)."""

    def __init__(self) -> None:
        self._last = 0
        self._lock = threading.Lock()

    def next(self) -> int:
        """The next ``seq`` (int, µs since the epoch or just past the previous value)."""
        now_us = time.time_ns() // 1000
        with self._lock:
            self._last = now_us if now_us > self._last else self._last + 1
            return self._last


_send_order = SendOrder()


_ID_PREFIX = os.urandom(8).hex()
_id_counter = itertools.count(int.from_bytes(os.urandom(4), "big"))


def new_id() -> str:
    """A unique 32-hex-digit id: 64 random bits fixed per process, then a 64-bit counter.

    Unique across processes (the random prefix) and within one (the counter), and cheap:
    ids are minted several times per message, so no system call per id.
    """
    return f"{_ID_PREFIX}{next(_id_counter) & 0xFFFFFFFFFFFFFFFF:016x}"


DEFAULT_TTL_MS = 60_000


@dataclass(slots=True)
class AgentMessage:
    """One message between agents (PRD §4.3).

    ``seq`` is the send order messages are recorded and listed in (``SendOrder``: increasing,
    and in wall-clock order across processes).
    """

    type: MessageType
    sender: Party
    recipient: Party
    payload: dict[str, Any]
    context: MessageContext
    timestamp: int
    priority: Priority = Priority.NORMAL
    ttl: int = DEFAULT_TTL_MS
    id: str = field(default_factory=new_id)
    seq: int = field(default_factory=_send_order.next)

    def expired(self, now_ms: int) -> bool:
        """True when ``now_ms`` is past ``timestamp + ttl``."""
        return now_ms > self.timestamp + self.ttl

    def as_dict(self) -> dict[str, Any]:
        """The PRD JSON shape (``from``/``to`` keys, priority as its label)."""
        return {
            "id": self.id,
            "from": self.sender.as_dict(),
            "to": self.recipient.as_dict(),
            "type": str(self.type),
            "payload": self.payload,
            "context": self.context.as_dict(),
            "timestamp": self.timestamp,
            "priority": self.priority.label,
            "ttl": self.ttl,
            "seq": self.seq,
        }
