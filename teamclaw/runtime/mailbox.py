"""Per-instance priority mailbox (PRD §4.3 消息队列管理; docs/architecture.md §6, Mailbox).

- Delivery order: urgent > high > normal > low, FIFO within one priority.
- Capacity (1000 by default): when full, expired messages are cleared first; then the
  oldest message of the lowest priority *below* the arrival's is evicted for it; when there
  is none the arrival is refused (``queue_full``). The caller records every drop.
- A message past ``timestamp + ttl`` is never returned by ``get``/``pop``: it is handed to
  the ``on_expired`` callback instead, wherever it sat in the queue.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from teamclaw.runtime.messages import AgentMessage, Priority

_LEVELS = tuple(sorted(Priority, reverse=True))  # URGENT first


@dataclass(frozen=True, slots=True)
class PutResult:
    """Outcome of ``Mailbox.put``: accepted or refused, and what was evicted or expired."""

    accepted: bool
    evicted: AgentMessage | None = None
    expired: tuple[AgentMessage, ...] = ()


class Mailbox:
    """Bounded priority queue of ``AgentMessage`` for one agent instance.

    ``now_ms`` is a callable giving the current time in ms (the runtime clock);
    ``on_expired`` receives each message found expired while reading the queue.
    """

    def __init__(
        self,
        capacity: int = 1000,
        *,
        now_ms: Callable[[], int],
        on_expired: Callable[[AgentMessage], None] | None = None,
    ) -> None:
        if capacity < 1:
            raise ValueError("mailbox capacity must be at least 1")
        self.capacity = capacity
        self._now_ms = now_ms
        self._on_expired = on_expired or (lambda message: None)
        self._queues: dict[Priority, deque[AgentMessage]] = {level: deque() for level in Priority}
        self._size = 0
        self._ready = asyncio.Event()

    def __len__(self) -> int:
        return self._size

    def put(self, message: AgentMessage) -> PutResult:
        """Queue ``message`` following the capacity rule above; never blocks."""
        expired: tuple[AgentMessage, ...] = ()
        evicted: AgentMessage | None = None
        if self._size >= self.capacity:
            expired = tuple(self.sweep_expired())
        if self._size >= self.capacity:
            for level in sorted(Priority):  # lowest first
                if level >= message.priority:
                    break
                if self._queues[level]:
                    evicted = self._queues[level].popleft()
                    self._size -= 1
                    break
            if evicted is None:
                return PutResult(False, None, expired)
        self._queues[message.priority].append(message)
        self._size += 1
        self._ready.set()
        return PutResult(True, evicted, expired)

    def pop(self) -> AgentMessage | None:
        """Remove and return the next deliverable message, or None when nothing is left."""
        now = self._now_ms()
        for level in _LEVELS:
            queue = self._queues[level]
            while queue:
                message = queue.popleft()
                self._size -= 1
                if message.expired(now):
                    self._on_expired(message)
                    continue
                if not self._size:
                    self._ready.clear()
                return message
        self._ready.clear()
        return None

    async def get(self) -> AgentMessage:
        """Wait for and return the next deliverable message."""
        while True:
            message = self.pop()
            if message is not None:
                return message
            await self._ready.wait()

    def sweep_expired(self) -> list[AgentMessage]:
        """Remove every expired message now, pass each to ``on_expired`` and return them."""
        now = self._now_ms()
        removed: list[AgentMessage] = []
        for level in Priority:
            queue = self._queues[level]
            if any(m.expired(now) for m in queue):
                keep = deque(m for m in queue if not m.expired(now))
                removed.extend(m for m in queue if m.expired(now))
                self._queues[level] = keep
        self._size -= len(removed)
        for message in removed:
            self._on_expired(message)
        if not self._size:
            self._ready.clear()
        return removed

    def remove(self, message_id: str) -> AgentMessage | None:
        """Take one queued message out by id (a caller gave up on it); None if not queued."""
        for queue in self._queues.values():
            for message in queue:
                if message.id == message_id:
                    queue.remove(message)
                    self._size -= 1
                    if not self._size:
                        self._ready.clear()
                    return message
        return None

    def queued(self) -> Iterator[AgentMessage]:
        """The queued messages, highest priority first (left in place)."""
        for level in _LEVELS:
            yield from self._queues[level]

    def drain(self) -> list[AgentMessage]:
        """Remove and return everything queued, highest priority first (instance shutdown)."""
        out: list[AgentMessage] = []
        for level in _LEVELS:
            out.extend(self._queues[level])
            self._queues[level].clear()
        self._size = 0
        self._ready.clear()
        return out

    def counts(self) -> dict[str, int]:
        """Queued messages per priority label."""
        return {level.label: len(self._queues[level]) for level in _LEVELS}
