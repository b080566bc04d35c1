"""The delivery boundary between routing and mailboxes (docs/architecture.md §5).

The runtime decides *which* instance gets a message; a ``Transport`` puts it there. The
in-process transport appends to the instance's mailbox. A cross-process transport (Redis,
for workers in other processes) implements the same two methods, so invoke/hook semantics
do not change when it is swapped in.
"""

from __future__ import annotations

from typing import Protocol

from teamclaw.runtime.instance import AgentInstance
from teamclaw.runtime.mailbox import PutResult
from teamclaw.runtime.messages import AgentMessage


class Transport(Protocol):
    """Moves a routed message into its target instance's mailbox."""

    def deliver(self, instance: AgentInstance, message: AgentMessage) -> PutResult:
        """Queue ``message`` for ``instance``; the result says accepted/evicted/expired."""

    def withdraw(self, instance: AgentInstance, message_id: str) -> AgentMessage | None:
        """Take back a queued message the sender no longer waits for (None if not queued)."""


class InProcessTransport:
    """Delivery to instances living in this process's event loop."""

    def deliver(self, instance: AgentInstance, message: AgentMessage) -> PutResult:
        return instance.mailbox.put(message)

    def withdraw(self, instance: AgentInstance, message_id: str) -> AgentMessage | None:
        return instance.mailbox.remove(message_id)
