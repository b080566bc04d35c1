"""Agent instances at work: spawning, the per-instance worker loop, terminating (PRD §2.1, §4.3).

Each instance has one worker: an asyncio task that takes the next message from the
instance's mailbox (highest priority first) and hands it to the handler of its type (an
``invoke_request`` to the invoke path, a ``hook_event`` to the hook path, anything else is
noted in the receiver's context). ``run_capability`` is the one "run the executor, check its
output" step both the invoke and the hook path use.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from teamclaw.runtime.clock import Clock
from teamclaw.runtime.config import CardSpec, ConfigSnapshot
from teamclaw.runtime.context import FINAL_STATUSES, ContextStatus, ExecutionContext
from teamclaw.runtime.delivery import Delivery
from teamclaw.runtime.emission import Emitter
from teamclaw.runtime.errors import AgentError, AgentFailure, ErrorCode
from teamclaw.runtime.execution import ExecutionCall
from teamclaw.runtime.executors import ExecutorRegistry
from teamclaw.runtime.instance import AgentInstance, InstanceStatus
from teamclaw.runtime.invocation import RoutingStrategy
from teamclaw.runtime.mailbox import Mailbox
from teamclaw.runtime.messages import AgentMessage, DeliveryStatus, MessageType, Party
from teamclaw.runtime.routing import InstancePool
from teamclaw.runtime.schemas import SchemaValidators, schema_errors

log = logging.getLogger(__name__)

MessageHandler = Callable[[AgentInstance, AgentMessage], Awaitable[None] | None]
"""Handles one message an instance took from its mailbox."""


def output_error(
    validators: SchemaValidators, card: CardSpec, data: Any, message: str | None = None
) -> AgentError | None:
    """``output_invalid`` when ``data`` is not an object matching ``card``'s ``output_schema``
    (details list JSON pointers); None when it is fine (PRD §4.2). ``message`` words the
    error for the caller (a hook's "hook result does not match the output schema"); an
    invoke's default names what is wrong."""
    if not isinstance(data, dict):
        return AgentError(
            ErrorCode.OUTPUT_INVALID,
            message or "the executor returned something other than an object",
            {"errors": [{"pointer": "", "message": f"got {type(data).__name__}", "keyword": "type"}]},
            retryable=False,
        )
    _, output_validator = validators.for_card(card)
    errors = schema_errors(output_validator, data)
    if errors:
        return AgentError(
            ErrorCode.OUTPUT_INVALID,
            message or f"the result does not match the output schema of {card.capability_id}",
            {"errors": errors},
            retryable=False,
        )
    return None


async def run_capability(
    call: ExecutionCall,
    executors: ExecutorRegistry,
    validators: SchemaValidators,
    output_message: str | None = None,
) -> tuple[dict[str, Any] | None, AgentError | None]:
    """Run ``call`` on its executor and check the result: ``(data, None)`` or ``(None, error)``
    (``output_message``: see ``output_error``).

    An ``AgentFailure`` the executor raises is its error; any other exception is
    ``executor_error`` naming it. Cancellation passes through to the caller.
    """
    card = call.card
    try:
        executor = executors.resolve(card, call.snapshot.roles.get(call.role))
        data = await executor.execute(call)
    except AgentFailure as failure:
        return None, failure.error
    except Exception as exc:
        log.warning("executor for %s raised %s", card.capability_id, exc, exc_info=True)
        return None, AgentError(
            ErrorCode.EXECUTOR_ERROR,
            f"the executor raised {type(exc).__name__}: {exc}",
            {"exception": type(exc).__name__},
        )
    error = output_error(validators, card, data, output_message)
    return (None, error) if error else (data, None)


class InstanceWorkers:
    """Spawns, routes to and terminates the instances of ``pool``.

    ``handlers`` maps a message type to what runs it; ``other`` handles every other type.
    ``contexts_of(instance_id)`` lists the instance's contexts in running tasks.
    """

    def __init__(
        self,
        *,
        pool: InstancePool,
        emitter: Emitter,
        delivery: Delivery,
        clock: Clock,
        mailbox_capacity: int,
        contexts_of: Callable[[str], list[ExecutionContext]],
    ) -> None:
        self.pool = pool
        self.emitter = emitter
        self.delivery = delivery
        self.clock = clock
        self.mailbox_capacity = mailbox_capacity
        self._contexts_of = contexts_of
        self.handlers: dict[MessageType, MessageHandler] = {}
        self.other: MessageHandler | None = None

    def route(
        self, snapshot: ConfigSnapshot, role: str, strategy: RoutingStrategy, caller_instance: AgentInstance | None
    ) -> AgentInstance:
        """Pick the instance of ``role`` (``InstancePool.choose``, PRD §4.4), spawning one
        while the role is under its ``max_concurrent_instances``. Raises AgentFailure."""
        limit = snapshot.constraints_for(role).max_concurrent_instances
        return self.pool.choose(role, strategy, limit, caller_instance, self.spawn)

    def reroute_held(self) -> int:
        """Move invoke requests queued behind instances held by an operator (PRD §4.6
        ``waiting_user``; ``InstancePool.operator_held``) to another instance of the role, so
        a request that arrived while its instance was still busy does not wait a day for an
        operator it has nothing to do with. Each moved request is recorded ``expired`` with
        the reason and sent again to the new instance as a new message (same invoke, same
        correlation id). Returns how many were moved."""
        moved = 0
        for instance in list(self.pool):
            if not instance.alive or not len(instance.mailbox) or not self.pool.operator_held(instance):
                continue
            kept: list[AgentMessage] = []
            for message in instance.mailbox.drain():
                pending = self.delivery.pending.waiting_for(message)
                if message.type != MessageType.INVOKE_REQUEST or pending is None:
                    kept.append(message)
                    continue
                caller = self.pool.get(message.sender.instance_id or "")
                try:
                    target = self.route(pending.task.snapshot, instance.role, RoutingStrategy.BY_ROLE, caller)
                except AgentFailure:
                    kept.append(message)
                    continue
                if target is instance or self.pool.operator_held(target):
                    kept.append(message)
                    continue
                again = AgentMessage(
                    type=message.type,
                    sender=message.sender,
                    recipient=Party(role=instance.role, instance_id=target.instance_id),
                    payload=message.payload,
                    context=message.context,
                    timestamp=message.timestamp,
                    priority=message.priority,
                    ttl=message.ttl,
                )
                self.emitter.message_status(
                    message,
                    DeliveryStatus.EXPIRED,
                    f"moved to {target.instance_id}: {instance.instance_id} waits for an operator",
                )
                pending.message, pending.instance = again, target
                if caller is not None:
                    caller.waiting_on.discard(instance.instance_id)
                    caller.waiting_on.add(target.instance_id)
                if self.delivery.deliver(
                    target, again, pending.task.project_id, "a request moved from a held instance"
                ):
                    moved += 1
                else:
                    full = AgentError(ErrorCode.QUEUE_FULL, f"the mailbox of {target.instance_id} is full")
                    pending.answer((None, full, None))
            for message in kept:
                instance.mailbox.put(message)
        return moved

    def spawn(self, role: str) -> AgentInstance:
        """Create an instance of ``role`` with its mailbox and worker; it beats at once."""
        instance_id = f"{role}-{uuid.uuid4().hex[:12]}"  # spawning is rare: random is fine
        now = self.clock.now()
        mailbox = Mailbox(self.mailbox_capacity, now_ms=self.clock.now_ms, on_expired=self.delivery.expired)
        instance = AgentInstance(instance_id, role, mailbox, created_at=now, last_heartbeat=now)
        self.pool.add(instance)
        instance.worker = asyncio.get_running_loop().create_task(self._work(instance), name=instance_id)
        self.emitter.instance_changed(instance)
        return instance

    def terminate(self, instance_id: str, reason: str = "terminated by operator") -> AgentInstance:
        """Stop an instance: its queued messages are dropped (callers get ``unavailable``
        and may retry elsewhere), its contexts end as ``terminated``. KeyError if unknown."""
        instance = self.pool.by_id[instance_id]
        if not instance.alive:
            return instance
        instance.status = InstanceStatus.TERMINATED
        for message in instance.mailbox.drain():
            self.delivery.undeliverable(message, DeliveryStatus.DROPPED, f"instance terminated: {reason}")
        for context in self._contexts_of(instance_id):
            if context.status not in FINAL_STATUSES:
                context.status = ContextStatus.TERMINATED
                self.emitter.context_changed(context)
        if instance.worker is not None:
            instance.worker.cancel()
        self.pool.retire(instance)
        self.emitter.instance_changed(instance)
        return instance

    async def _work(self, instance: AgentInstance) -> None:
        while instance.alive:
            message = await instance.mailbox.get()
            instance.busy_with = message.id
            instance.status = InstanceStatus.BUSY
            self.emitter.message_status(message, DeliveryStatus.DELIVERED)
            try:
                handler = self.handlers.get(message.type, self.other)
                if handler is not None:
                    outcome = handler(instance, message)
                    if outcome is not None:
                        await outcome
            except asyncio.CancelledError:
                if not instance.alive:
                    raise
            except Exception:
                log.exception("instance %s failed on message %s", instance.instance_id, message.id)
            finally:
                instance.busy_with = None
                instance.processed += 1
                if instance.alive:
                    instance.status = InstanceStatus.IDLE


def absorb_cancel() -> None:
    """Take back a cancellation requested of the current task (the worker survives the
    timeout of the call it was running)."""
    current = asyncio.current_task()
    if current is not None and current.cancelling():
        current.uncancel()
