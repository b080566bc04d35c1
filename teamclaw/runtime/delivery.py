"""Putting routed messages into mailboxes and recording what became of them (PRD §4.3).

``Delivery`` is the one place a message enters a mailbox: through the ``Transport`` it
records ``queued`` or, when the mailbox refuses it, ``dropped`` with a ``queue_full`` alert.
Messages that leave a mailbox without being delivered (expired, evicted by a higher
priority, their instance terminated) are recorded too, and whoever waits on them is
released at once: an invoke caller gets its error, a hook sender stops waiting.
"""

from __future__ import annotations

import asyncio

from teamclaw.runtime.articles import with_article
from teamclaw.runtime.emission import Emitter
from teamclaw.runtime.errors import AgentError, ErrorCode
from teamclaw.runtime.instance import AgentInstance
from teamclaw.runtime.mailbox import PutResult
from teamclaw.runtime.messages import AgentMessage, DeliveryStatus
from teamclaw.runtime.pending import PendingCalls
from teamclaw.runtime.routing import InstancePool
from teamclaw.runtime.transport import Transport

EXPIRED_WHILE_QUEUED = "ttl passed while queued"
EXPIRED_IN_QUEUE = "expired_in_queue"
"""``details.reason`` of the ``timeout`` an invoke caller gets when its request was never
taken from the mailbox (the message expired there, or the deadline passed while queued)."""


class Delivery:
    """Delivers messages to instances and accounts for every one that is not delivered."""

    def __init__(self, transport: Transport, emitter: Emitter, pending: PendingCalls, pool: InstancePool) -> None:
        self.transport = transport
        self.emitter = emitter
        self.pending = pending
        self.pool = pool
        self._hook_waiters: dict[str, asyncio.Future[None]] = {}

    def deliver(self, instance: AgentInstance, message: AgentMessage, project_id: str | None, what: str) -> bool:
        """Queue ``message`` for ``instance``; True when the mailbox took it.

        A refusal is recorded ``dropped`` (``queue_full``) with an alert saying the instance
        refused ``what`` ("a hook", "a normal message"...).
        """
        put = self.transport.deliver(instance, message)
        if not put.accepted:
            self.emitter.message(message, DeliveryStatus.DROPPED, project_id, str(ErrorCode.QUEUE_FULL))
            self.emitter.alert(
                "queue_full",
                "warning",
                f"{instance.instance_id} refused {what}",
                instance_id=instance.instance_id,
                message_id=message.id,
            )
            return False
        self.emitter.message(message, DeliveryStatus.QUEUED, project_id)
        self._account_for(instance, put)
        return True

    def withdraw(self, instance: AgentInstance, message: AgentMessage) -> bool:
        """Take back a queued message whose sender stopped waiting; True when it was still
        queued (it is then recorded ``expired``)."""
        if self.transport.withdraw(instance, message.id) is None:
            return False
        self.emitter.message_status(message, DeliveryStatus.EXPIRED, "the caller timed out before delivery")
        return True

    def send(self, message: AgentMessage, *, project_id: str | None = None) -> None:
        """Send a one-way message (status_update, progress_report, artifact_share, ...).

        To a live instance it goes through that instance's mailbox; to the operator or a gone
        instance it is recorded as delivered.
        """
        target = self.pool.get(message.recipient.instance_id or "")
        if target is None or not target.alive:
            self.emitter.message(message, DeliveryStatus.DELIVERED, project_id)
            return
        self.deliver(target, message, project_id, with_article(message.type))

    # -- hook senders waiting for their receivers -----------------------------------------
    def wait_for_hook(self, message: AgentMessage) -> asyncio.Future[None]:
        """A future that resolves once ``message`` (a queued hook event) was processed or
        left its mailbox undelivered."""
        waiter = asyncio.get_running_loop().create_future()
        self._hook_waiters[message.id] = waiter
        return waiter

    def hook_done(self, message_id: str) -> None:
        """Release whoever waits for the hook event ``message_id`` (no error when nobody does)."""
        waiter = self._hook_waiters.pop(message_id, None)
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    # -- messages that leave a mailbox undelivered -------------------------------------------
    def undeliverable(self, message: AgentMessage, status: DeliveryStatus, reason: str) -> None:
        """A queued message left its mailbox without delivery: record it and release whoever
        waits on it (the invoke caller gets an error at once; a hook counts as processed)."""
        self.emitter.message_status(message, status, reason)
        self.hook_done(message.id)
        pending = self.pending.waiting_for(message)
        if pending is None:
            return
        instance_id = message.recipient.instance_id
        if status == DeliveryStatus.EXPIRED:
            error = AgentError(
                ErrorCode.TIMEOUT,
                f"the request expired in the queue of {instance_id} before it was delivered ({reason})",
                {"target_instance_id": instance_id, "reason": EXPIRED_IN_QUEUE},
            )
        elif reason.startswith("evicted"):
            error = AgentError(
                ErrorCode.QUEUE_FULL,
                f"evicted from the full mailbox of {instance_id}",
                {"target_instance_id": instance_id},
                retryable=False,
            )
        else:
            error = AgentError(
                ErrorCode.UNAVAILABLE,
                f"{instance_id} could not take the request: {reason}",
                {"target_instance_id": instance_id, "reason": reason},
            )
        pending.answer((None, error, instance_id))

    def expired(self, message: AgentMessage) -> None:
        """A mailbox found ``message`` past its ttl (the mailbox's ``on_expired``)."""
        self.undeliverable(message, DeliveryStatus.EXPIRED, EXPIRED_WHILE_QUEUED)

    def _account_for(self, instance: AgentInstance, put: PutResult) -> None:
        """Record the messages a put expired or evicted to make room."""
        for message in put.expired:
            self.expired(message)
        if put.evicted is not None:
            evicted = put.evicted
            self.undeliverable(evicted, DeliveryStatus.DROPPED, "evicted by a higher-priority message (mailbox full)")
            self.emitter.alert(
                "queue_drop",
                "warning",
                f"{instance.instance_id} dropped {with_article(evicted.priority.label)} {evicted.type} to make room",
                instance_id=instance.instance_id,
                message_id=evicted.id,
                reason="evicted",
            )
