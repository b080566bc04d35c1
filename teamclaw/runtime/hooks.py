"""The hook path: ``hook_event`` out, ``hook_ack`` back, ``status_update`` later (PRD §4.3, §4.4).

Sender side (``Hooks.fire``): with ``broadcast`` the event goes to every live instance with a
matching ``EventSubscription``; otherwise to one instance per named target role (routed
``by_role``). A plain event is not governed by the invoke matrix (docs/architecture.md,
"Runtime semantics"); a hook that names a ``capability_id`` asks the receiver to run it, so
it is an invoke in all but name: the receiver must own the capability, the matrix must allow
caller -> receiver and INTERNAL capabilities stay inside their skill, else that receiver
acks ``rejected`` (the event never reaches its mailbox). A receiver acks ``received`` when
the event is queued, or ``rejected`` with the reason when its mailbox refuses it.

Receiver side (``Hooks.serve``): the event is noted in the receiver's context; a named
capability runs (``run_capability``, bounded by the card's and the role's timeout) and the
receiver answers the sender with a ``status_update``: ``processed``, ``completed`` with the
result, or ``failed`` with the error.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from teamclaw.runtime.clock import Clock
from teamclaw.runtime.config import ConfigSnapshot
from teamclaw.runtime.context import ContextStatus, ExecutionContext, TaskState, message_reference
from teamclaw.runtime.delivery import Delivery
from teamclaw.runtime.emission import Emitter
from teamclaw.runtime.errors import AgentError, AgentFailure, ErrorCode
from teamclaw.runtime.execution import ExecutionCall
from teamclaw.runtime.executors import ExecutorRegistry
from teamclaw.runtime.instance import AgentInstance
from teamclaw.runtime.invocation import DEFAULT_TIMEOUT_S, EventSubscription, HookAck, HookEvent, RoutingStrategy
from teamclaw.runtime.messages import AgentMessage, DeliveryStatus, MessageContext, MessageType, Party, Priority, new_id
from teamclaw.runtime.policy import check_params, check_policy, check_target_role
from teamclaw.runtime.schemas import SchemaValidators
from teamclaw.runtime.tasks import TaskBook
from teamclaw.runtime.worker import InstanceWorkers, run_capability

if TYPE_CHECKING:
    from teamclaw.runtime.contract import AgentPort


HOOK_PAYLOAD_INVALID = "hook payload does not match the input schema"
"""The ``invalid_params`` message of a hook whose ``payload`` fails the card's input schema."""
HOOK_RESULT_INVALID = "hook result does not match the output schema"
"""The ``output_invalid`` message of a hooked capability's result."""


class Hooks:
    """Both sides of hook for one runtime, and its subscriptions (see module docstring)."""

    def __init__(
        self,
        *,
        port: AgentPort,
        clock: Clock,
        emitter: Emitter,
        delivery: Delivery,
        workers: InstanceWorkers,
        book: TaskBook,
        executors: ExecutorRegistry,
        validators: SchemaValidators,
        task_timeout_s: float,
    ) -> None:
        self.port = port
        self.clock = clock
        self.emitter = emitter
        self.delivery = delivery
        self.workers = workers
        self.book = book
        self.executors = executors
        self.validators = validators
        self.task_timeout_s = task_timeout_s
        self.subscriptions: dict[str, EventSubscription] = {}

    def subscribe(self, subscription: EventSubscription) -> EventSubscription:
        """Add an EventSubscription (PRD §4.3); KeyError for an unknown subscriber."""
        if subscription.subscriber_instance_id not in self.workers.pool.by_id:
            raise KeyError(subscription.subscriber_instance_id)
        self.subscriptions[subscription.id] = subscription
        return subscription

    def unsubscribe(self, subscription_id: str) -> None:
        """Remove a subscription (no error when it is gone already)."""
        self.subscriptions.pop(subscription_id, None)

    # -- sender side ------------------------------------------------------------------------
    async def fire(
        self,
        event: HookEvent,
        *,
        caller: Party,
        task: TaskState,
        caller_context: ExecutionContext | None = None,
        caller_skill: str | None = None,
        waiters: list[asyncio.Future[None]] | None = None,
    ) -> list[HookAck]:
        """Deliver a ``hook_event`` and collect each receiver's ``hook_ack`` (module docstring).

        ``waiters`` collects a future per queued event that resolves once it was processed.
        Raises AgentFailure when a named target role is unknown or disabled.
        """
        snapshot = task.snapshot
        acks: list[HookAck] = []
        for instance in await self._receivers(snapshot, event, caller, task, caller_skill):
            if not instance.alive and not event.broadcast:
                # Retired while a later target role's instance took its slot: route again.
                instance = await self._target(snapshot, event, caller, instance.role, caller_skill, task.scope)
            refusal = self._refusal(snapshot, event, caller, instance.role, caller_skill)
            if refusal is not None:
                refused = AgentMessage(
                    type=MessageType.HOOK_EVENT,
                    sender=caller,
                    recipient=Party(role=instance.role, instance_id=instance.instance_id),
                    payload={
                        "event_type": event.event_type,
                        "capability_id": event.capability_id,
                        "error": refusal.as_dict(),
                    },
                    context=MessageContext(task.task_id, task.task_id, new_id()),
                    timestamp=self.clock.now_ms(),
                )
                self.emitter.message(refused, DeliveryStatus.DENIED, task.project_id, str(refusal.code))
                acks.append(HookAck(instance.instance_id, instance.role, "rejected", str(refusal.code)))
                continue
            message = AgentMessage(
                type=MessageType.HOOK_EVENT,
                sender=caller,
                recipient=Party(role=instance.role, instance_id=instance.instance_id),
                payload={
                    "event_type": event.event_type,
                    "payload": event.payload,
                    "capability_id": event.capability_id,
                    "broadcast": event.broadcast,
                    **({"caller_skill": caller_skill} if caller_skill else {}),
                },
                context=MessageContext(task.task_id, task.task_id, new_id()),
                timestamp=self.clock.now_ms(),
                priority=Priority.NORMAL,
                ttl=int(self.task_timeout_s * 1000),
            )
            if waiters is not None:
                waiters.append(self.delivery.wait_for_hook(message))
            if not self.delivery.deliver(instance, message, task.project_id, "a hook"):
                self.delivery.hook_done(message.id)
                if waiters is not None:
                    waiters.pop()
                acks.append(HookAck(instance.instance_id, instance.role, "rejected", str(ErrorCode.QUEUE_FULL)))
                continue
            ack = AgentMessage(
                type=MessageType.HOOK_ACK,
                sender=Party(role=instance.role, instance_id=instance.instance_id),
                recipient=caller,
                payload={"status": "received", "event_type": event.event_type},
                context=message.context,
                timestamp=self.clock.now_ms(),
                priority=Priority.NORMAL,
            )
            self.emitter.message(ack, DeliveryStatus.DELIVERED, task.project_id)
            if caller_context is not None:
                caller_context.add_message(message_reference(message))
            acks.append(HookAck(instance.instance_id, instance.role, "received"))
        return acks

    async def _receivers(
        self, snapshot: ConfigSnapshot, event: HookEvent, caller: Party, task: TaskState, caller_skill: str | None
    ) -> list[AgentInstance]:
        """The instances ``event`` goes to: matching subscribers, or one per target role (a
        new one takes its instance slot first, waiting for one at most the default invoke
        timeout, ``InstanceWorkers.place``)."""
        pool = self.workers.pool
        if event.broadcast:
            wanted = {
                s.subscriber_instance_id
                for s in self.subscriptions.values()
                if s.matches(event.event_type, caller.role, task.task_id)
            }
            return [i for i in pool if i.instance_id in wanted and i.alive]
        targets = []
        for role in event.target_roles or ():
            check_target_role(snapshot, role)
            targets.append(await self._target(snapshot, event, caller, role, caller_skill, task.scope))
        return targets

    async def _target(
        self,
        snapshot: ConfigSnapshot,
        event: HookEvent,
        caller: Party,
        role: str,
        caller_skill: str | None,
        scope: str,
    ) -> AgentInstance:
        """The instance of ``role`` in the task's counting ``scope`` a targeted hook goes to
        (``InstanceWorkers.route``, else ``place``, ``by_role``). One from outside the team
        that runs a capability ``role`` may run routes as an entry does (``routing.is_entry``:
        to a role that may invoke itself it keeps out of the last instance slot); any other
        hook (one to be refused too: it is rejected at once, it holds nothing) as a call that
        holds no instance.
        Raises AgentFailure as ``place``."""
        entry = (
            not caller.instance_id
            and bool(event.capability_id)
            and self._refusal(snapshot, event, caller, role, caller_skill) is None
        )
        target = self.workers.route(snapshot, role, RoutingStrategy.BY_ROLE, None, entry=entry, scope=scope)
        if target is None:
            target, _ = await self.workers.place(
                snapshot, role, RoutingStrategy.BY_ROLE, None, DEFAULT_TIMEOUT_S, entry=entry, scope=scope
            )
        return target

    @staticmethod
    def _refusal(
        snapshot: ConfigSnapshot, event: HookEvent, caller: Party, role: str, caller_skill: str | None
    ) -> AgentError | None:
        """Why an instance of ``role`` may not run the capability a hook names (None when it may)."""
        if not event.capability_id:
            return None
        try:
            card, _ = snapshot.resolve(event.capability_id)
            check_policy(snapshot, card, role, caller, caller_skill, enforce_matrix=True)
        except AgentFailure as failure:
            return failure.error
        return None

    # -- receiver side ----------------------------------------------------------------------
    async def serve(self, instance: AgentInstance, message: AgentMessage) -> None:
        """Take the ``hook_event`` ``message`` on ``instance`` and answer with a status_update."""
        task = self.book.tasks.get(message.context.task_id)
        status: dict[str, Any] = {"status": "processed", "event_type": message.payload.get("event_type")}
        if task is not None:
            context = self.book.context_for(instance, task)
            context.add_message(message_reference(message))
            capability_id = message.payload.get("capability_id")
            if capability_id:
                status = await self._run(instance, context, task, capability_id, message)
            self.emitter.context_changed(context)
        reply = AgentMessage(
            type=MessageType.STATUS_UPDATE,
            sender=Party(role=instance.role, instance_id=instance.instance_id),
            recipient=message.sender,
            payload=status,
            context=message.context,
            timestamp=self.clock.now_ms(),
            priority=Priority.NORMAL,
        )
        self.delivery.send(reply, project_id=task.project_id if task else None)
        self.delivery.hook_done(message.id)

    async def _run(
        self,
        instance: AgentInstance,
        context: ExecutionContext,
        task: TaskState,
        capability_id: str,
        message: AgentMessage,
    ) -> dict[str, Any]:
        """Run the capability a hook names; the ``status_update`` payload that answers it."""
        outcome = {"event_type": message.payload.get("event_type"), "capability_id": capability_id}
        data: dict[str, Any] | None
        error: AgentError | None
        try:
            card, defaults = task.snapshot.resolve(capability_id)
            caller_skill = message.payload.get("caller_skill")
            check_policy(task.snapshot, card, instance.role, message.sender, caller_skill, enforce_matrix=True)
            params = {**defaults, **(message.payload.get("payload") or {})}
            check_params(self.validators, card, params, HOOK_PAYLOAD_INVALID)
        except AgentFailure as failure:
            data, error = None, failure.error
        else:
            call = ExecutionCall(self.port, instance, context, task, card, params, message, None)
            context.status = ContextStatus.EXECUTING
            timeout = min(card.timeout_s, task.snapshot.constraints_for(instance.role).timeout_s)
            run = asyncio.ensure_future(run_capability(call, self.executors, self.validators, HOOK_RESULT_INVALID))
            await self.clock.wait_any([run], timeout)
            if run.done():
                data, error = run.result()
            else:
                run.cancel()
                data, error = (
                    None,
                    AgentError(
                        ErrorCode.TIMEOUT,
                        f"{capability_id} did not finish within {timeout:g} s",
                        {"timeout_s": timeout},
                        retryable=False,
                    ),
                )
        context.status = ContextStatus.READY
        if error is not None:
            context.errors.append({**error.as_dict(), "capability_id": capability_id})
            return {"status": "failed", **outcome, "error": error.as_dict()}
        return {"status": "completed", **outcome, "result": data}
