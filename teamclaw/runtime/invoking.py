"""The invoke path: request, route, deliver, wait, retry; and the callee's side (PRD §4.4).

Caller side (``Invoker.invoke``), per attempt: the capability exists -> the target role owns
it -> the effective invoke matrix allows caller -> target -> role, card and skill enabled ->
INTERNAL only from inside its skill -> params match ``input_schema`` (``policy``) -> a healthy
instance is routed (no deadlock cycle) -> the mailbox takes it -> a response arrives within
the timeout. A refused request is recorded ``denied`` and never reaches a mailbox.
``timeout``, ``unavailable`` and executor crashes are retried (``max_retries`` of the target
role, 3 by default) with exponential backoff from ``backoff_base_s``, unless the failure
says it may not be (``AgentError.retryable``): a call that timed out while it ran is repeated
only for a card that is idempotent (``CardSpec.is_idempotent``; http plugins are not unless
they say so, and their executor marks what failed after the request was sent the same way).

Callee side (``Invoker.serve``): the instance's worker runs the executor inline and answers
with ``invoke_response`` or ``invoke_error``; a caller that times out cancels the worker,
which takes the cancellation back and reports the timeout.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any

from teamclaw.runtime.articles import with_article
from teamclaw.runtime.clock import Clock
from teamclaw.runtime.config import CardSpec, ConfigSnapshot
from teamclaw.runtime.context import (
    FINAL_STATUSES,
    ContextStatus,
    ExecutionContext,
    SnapshotType,
    TaskState,
    message_reference,
)
from teamclaw.runtime.delivery import EXPIRED_IN_QUEUE, Delivery
from teamclaw.runtime.emission import Emitter
from teamclaw.runtime.errors import AgentError, AgentFailure, ErrorCode
from teamclaw.runtime.execution import ExecutionCall
from teamclaw.runtime.executors import ExecutorRegistry
from teamclaw.runtime.instance import AgentInstance
from teamclaw.runtime.invocation import DEFAULT_TIMEOUT_S, InvokeRequest, InvokeResult, RoutingStrategy, call_round
from teamclaw.runtime.messages import AgentMessage, DeliveryStatus, MessageContext, MessageType, Party, new_id
from teamclaw.runtime.pending import PendingCall, PendingCalls, TimedOut
from teamclaw.runtime.policy import check_params, check_policy, resolve_target
from teamclaw.runtime.schemas import SchemaValidators
from teamclaw.runtime.tasks import TaskBook
from teamclaw.runtime.worker import InstanceWorkers, absorb_cancel, run_capability

if TYPE_CHECKING:
    from teamclaw.runtime.contract import AgentPort

CANCELLED_BY_TIMEOUT = "cancelled: the caller stopped waiting"


def check_healthy(instance: AgentInstance) -> None:
    """Raise AgentFailure(unavailable, reason ``heartbeat_lost``) when ``instance`` missed its
    heartbeats (PRD §4.2)."""
    if not instance.healthy:
        raise AgentFailure(
            ErrorCode.UNAVAILABLE,
            f"instance {instance.instance_id} missed its heartbeats",
            {"target_instance_id": instance.instance_id, "reason": "heartbeat_lost"},
        )


class Invoker:
    """Both sides of invoke for one runtime (see module docstring)."""

    def __init__(
        self,
        *,
        port: AgentPort,
        clock: Clock,
        emitter: Emitter,
        pending: PendingCalls,
        delivery: Delivery,
        workers: InstanceWorkers,
        book: TaskBook,
        executors: ExecutorRegistry,
        validators: SchemaValidators,
        backoff_base_s: float,
    ) -> None:
        self.port = port
        self.clock = clock
        self.emitter = emitter
        self.pending = pending
        self.delivery = delivery
        self.workers = workers
        self.book = book
        self.executors = executors
        self.validators = validators
        self.backoff_base_s = backoff_base_s

    # -- caller side ----------------------------------------------------------------------
    async def invoke(
        self,
        request: InvokeRequest,
        *,
        caller: Party,
        task: TaskState,
        caller_context: ExecutionContext | None = None,
        caller_instance: AgentInstance | None = None,
        caller_skill: str | None = None,
        enforce_matrix: bool = True,
        timeout_cap: float | None = None,
        retries: int | None = None,
    ) -> InvokeResult:
        """Invoke ``request`` as ``caller`` within ``task``, retrying retryable failures.

        ``timeout_cap`` (s) replaces the card and role timeouts (a whole task's limit);
        ``retries`` overrides the target role's ``max_retries``. Never raises for runtime
        failures: they are the result's ``error``.
        """
        started = time.perf_counter()
        invoke_id = new_id()
        recorded = self._from_journal(request, caller, task)
        if recorded is not None:
            recorded.latency_ms = (time.perf_counter() - started) * 1000
            recorded.invoke_id = invoke_id
            return recorded
        attempt = 0
        while True:
            attempt += 1
            result, allowed_retries = await self._attempt(
                request,
                invoke_id,
                attempt,
                caller=caller,
                task=task,
                caller_context=caller_context,
                caller_instance=caller_instance,
                caller_skill=caller_skill,
                enforce_matrix=enforce_matrix,
                timeout_cap=timeout_cap,
            )
            limit = allowed_retries if retries is None else retries
            if result.success or result.error is None or not result.error.should_retry or attempt > limit:
                break
            await self.clock.sleep(self.backoff_base_s * (2 ** (attempt - 1)))
        result.latency_ms = (time.perf_counter() - started) * 1000
        result.attempts = attempt
        result.invoke_id = invoke_id
        result.task_id = task.task_id
        return result

    @staticmethod
    def _from_journal(request: InvokeRequest, caller: Party, task: TaskState) -> InvokeResult | None:
        """For a resumed task: the recorded answer of this step, when its earlier attempt
        completed it (``teamclaw.runtime.resume``); None when it runs live. Nothing is sent
        and nothing executes again, so no second request is recorded for the step."""
        if task.journal is None or task.cancelled is not None or caller.role is None:
            return None
        try:
            card, defaults = task.snapshot.resolve(request.capability_id)
        except AgentFailure:
            return None
        params = {**defaults, **request.params} if defaults else request.params
        data = task.journal.answer(caller.role, card.capability_id, params)
        if data is None:
            return None
        return InvokeResult(True, data=data, from_instance=None, attempts=0, task_id=task.task_id)

    async def _attempt(
        self,
        request: InvokeRequest,
        invoke_id: str,
        attempt: int,
        *,
        caller: Party,
        task: TaskState,
        caller_context: ExecutionContext | None,
        caller_instance: AgentInstance | None,
        caller_skill: str | None,
        enforce_matrix: bool,
        timeout_cap: float | None,
    ) -> tuple[InvokeResult, int]:
        """One attempt: ``(result, the target role's max_retries)``."""
        snapshot = task.snapshot
        correlation_id = f"{invoke_id}:{attempt}"
        target_role = request.target_role
        retries = 0
        instance: AgentInstance | None = None
        try:
            if task.cancelled is not None:
                raise AgentFailure(task.cancelled.code, task.cancelled.message, task.cancelled.details, retryable=False)
            card, defaults = snapshot.resolve(request.capability_id)
            params = {**defaults, **request.params} if defaults else request.params
            target_role, instance = resolve_target(snapshot, card, request, caller, self.workers.pool)
            constraints = snapshot.constraints_for(target_role)
            retries = constraints.max_retries
            check_policy(snapshot, card, target_role, caller, caller_skill, enforce_matrix=enforce_matrix)
            check_params(self.validators, card, params)
            timeout = min(request.timeout or DEFAULT_TIMEOUT_S, card.timeout_s, constraints.timeout_s)
            if timeout_cap is not None:
                timeout = min(request.timeout or timeout_cap, timeout_cap)
            routed = self._instance_for(snapshot, target_role, instance, request, caller_instance, task.scope)
            if routed is None:  # a new instance: its slot first (waiting for one counts against the timeout)
                strategy = request.routing or RoutingStrategy.BY_ROLE
                routed, waited = await self.workers.place(
                    snapshot,
                    target_role,
                    strategy,
                    caller_instance,
                    timeout,
                    entry=caller_instance is None,
                    scope=task.scope,
                )
                timeout -= waited
                check_healthy(routed)
                if task.cancelled is not None:  # cancelled while it waited for the slot
                    raise AgentFailure(
                        task.cancelled.code, task.cancelled.message, task.cancelled.details, retryable=False
                    )
            instance = routed
        except AgentFailure as failure:
            self._record_refusal(
                request, invoke_id, correlation_id, attempt, caller, task, target_role, instance, failure.error
            )
            return InvokeResult(False, error=failure.error), retries

        message = AgentMessage(
            type=MessageType.INVOKE_REQUEST,
            sender=caller,
            recipient=Party(role=target_role, instance_id=instance.instance_id),
            payload={"capability_id": card.capability_id, "params": params, "invoke_id": invoke_id, "attempt": attempt},
            context=MessageContext(
                task.task_id, caller_context.conversation_id if caller_context else task.task_id, correlation_id
            ),
            timestamp=self.clock.now_ms(),
            priority=request.priority,
            ttl=int(timeout * 1000),
        )
        pending = PendingCall(
            correlation_id,
            invoke_id,
            asyncio.get_running_loop().create_future(),
            card,
            params,
            task,
            caller,
            message,
            instance,
            self.clock.now() + timeout,
            timeout,
        )
        self.pending.add(pending)
        try:
            what = f"{with_article(message.priority.label)} message"
            if not self.delivery.deliver(instance, message, task.project_id, what):
                full = AgentError(
                    ErrorCode.QUEUE_FULL,
                    f"the mailbox of {instance.instance_id} is full",
                    {"target_instance_id": instance.instance_id, "capacity": instance.mailbox.capacity},
                    retryable=False,
                )
                return InvokeResult(False, error=full), retries
            if caller_context is not None:
                caller_context.add_message(message_reference(message))
            if caller_instance is not None:
                caller_instance.waiting_on.add(instance.instance_id)
            self.pending.arm(pending)
            try:
                outcome = await pending.future
            finally:
                self.pending.disarm(pending)
                if caller_instance is not None:
                    # ...and the instance it went to, if it was moved off a held one.
                    caller_instance.waiting_on.discard(instance.instance_id)
                    caller_instance.waiting_on.discard(pending.instance.instance_id)
        finally:
            self.pending.discard(pending)

        if isinstance(outcome, TimedOut):
            return self._time_out(pending), retries
        data, error, from_instance = outcome
        return InvokeResult(error is None, data=data, error=error, from_instance=from_instance), retries

    def _instance_for(
        self,
        snapshot: ConfigSnapshot,
        target_role: str,
        instance: AgentInstance | None,
        request: InvokeRequest,
        caller_instance: AgentInstance | None,
        scope: str,
    ) -> AgentInstance | None:
        """The healthy instance the attempt goes to: the one named, or one routed by the
        request's strategy among those of the task's counting ``scope``
        (``teamclaw.runtime.scopes``); None when routing wants a new instance
        (``InstanceWorkers.place``).
        Raises AgentFailure(unavailable): deadlock, heartbeat lost, an entry named into its
        role's last slot (``InstanceWorkers.check_named``)."""
        if instance is None:
            strategy = request.routing or RoutingStrategy.BY_ROLE
            instance = self.workers.route(
                snapshot, target_role, strategy, caller_instance, entry=caller_instance is None, scope=scope
            )
            if instance is None:
                return None
        elif self.workers.pool.would_deadlock(caller_instance, instance):
            raise AgentFailure(
                ErrorCode.UNAVAILABLE,
                f"instance {instance.instance_id} is waiting on the caller (deadlock)",
                {"reason": "deadlock"},
                retryable=False,
            )
        else:
            self.workers.check_named(snapshot, instance, entry=caller_instance is None)
        check_healthy(instance)
        return instance

    def _time_out(self, pending: PendingCall) -> InvokeResult:
        """The attempt's deadline passed: take the request back (or stop the callee's
        executor) and record the ``invoke_error`` the caller gets."""
        message, instance = pending.message, pending.instance
        # Never taken from the mailbox: still there, or swept from it as expired at the deadline.
        queued = self.delivery.withdraw(instance, message) or not pending.started
        if not queued and instance.executing == pending.correlation_id and instance.worker:
            pending.cancelled_for_timeout = True
            instance.worker.cancel()
        details: dict[str, Any] = {"timeout_s": pending.timeout_s, "target_instance_id": instance.instance_id}
        if queued:  # it never left the mailbox: the callee is busy, not slow (or gone)
            error = AgentError(
                ErrorCode.TIMEOUT,
                f"the request expired in the queue of {instance.role} ({instance.instance_id}) after "
                f"{pending.timeout_s:g} s: the instance was busy and never started it",
                {**details, "reason": EXPIRED_IN_QUEUE},
            )
        else:  # it ran: repeating it is safe only for an idempotent card
            error = AgentError(
                ErrorCode.TIMEOUT,
                f"no response from {instance.role} ({instance.instance_id}) within {pending.timeout_s:g} s",
                details,
                retryable=pending.card.is_idempotent,
            )
        response = AgentMessage(
            type=MessageType.INVOKE_ERROR,
            sender=Party(role=instance.role, instance_id=instance.instance_id),
            recipient=pending.caller,
            payload={
                "capability_id": pending.card.capability_id,
                "error": error.as_dict(),
                "invoke_id": pending.invoke_id,
            },
            context=MessageContext(
                message.context.task_id, message.context.conversation_id, message.context.correlation_id
            ),
            timestamp=self.clock.now_ms(),
            priority=message.priority,
        )
        self.emitter.message(response, DeliveryStatus.DELIVERED, pending.task.project_id)
        return InvokeResult(False, error=error, from_instance=instance.instance_id)

    def _record_refusal(
        self,
        request: InvokeRequest,
        invoke_id: str,
        correlation_id: str,
        attempt: int,
        caller: Party,
        task: TaskState,
        target_role: str | None,
        instance: AgentInstance | None,
        error: AgentError,
    ) -> None:
        """Record a refused request as a ``denied`` invoke_request carrying its error."""
        message = AgentMessage(
            type=MessageType.INVOKE_REQUEST,
            sender=caller,
            recipient=Party(
                role=target_role, instance_id=instance.instance_id if instance else request.target_instance_id
            ),
            payload={
                "capability_id": request.capability_id,
                "params": request.params,
                "invoke_id": invoke_id,
                "attempt": attempt,
                "error": error.as_dict(),
            },
            context=MessageContext(task.task_id, task.task_id, correlation_id),
            timestamp=self.clock.now_ms(),
            priority=request.priority,
        )
        self.emitter.message(message, DeliveryStatus.DENIED, task.project_id, str(error.code))

    # -- callee side ----------------------------------------------------------------------
    async def serve(self, instance: AgentInstance, message: AgentMessage) -> None:
        """Run the ``invoke_request`` ``message`` on ``instance`` and answer its caller."""
        pending = self.pending.get(message.context.correlation_id)
        if pending is None or pending.future.done():
            return  # the caller already gave up
        pending.started = True
        task, card = pending.task, pending.card
        context = self.book.context_for(instance, task)
        context.status = ContextStatus.EXECUTING
        context.current_step = card.capability_id
        context.add_message(message_reference(message))
        self.emitter.context_changed(context, at_once=True)  # which capability it started is news of its own
        # A snapshot per call (issue 30): what the agent read when it took the call, so a
        # replay step inside the call shows it; its label is the round the input names.
        self.emitter.snapshot(context, SnapshotType.AUTO, f"call {card.capability_id}", call_round(pending.params))
        call = ExecutionCall(self.port, instance, context, task, card, pending.params, message, pending)
        data: dict[str, Any] | None = None
        error: AgentError | None
        # The executor runs inline in the worker (no task per call); a caller that times
        # out cancels the worker, which uncancels itself and reports the timeout.
        instance.executing = pending.correlation_id
        try:
            data, error = await run_capability(call, self.executors, self.validators)
            if pending.cancelled_for_timeout:
                absorb_cancel()
                data, error = None, AgentError(ErrorCode.TIMEOUT, CANCELLED_BY_TIMEOUT)
        except asyncio.CancelledError:
            if not instance.alive or not pending.cancelled_for_timeout:
                raise
            absorb_cancel()
            error = AgentError(ErrorCode.TIMEOUT, CANCELLED_BY_TIMEOUT)
        finally:
            instance.executing = None
        self._answer(instance, context, pending, message, data, error, call)

    def _answer(
        self,
        instance: AgentInstance,
        context: ExecutionContext,
        pending: PendingCall,
        message: AgentMessage,
        data: dict[str, Any] | None,
        error: AgentError | None,
        call: ExecutionCall,
    ) -> None:
        card: CardSpec = pending.card
        response = AgentMessage(
            type=MessageType.INVOKE_ERROR if error else MessageType.INVOKE_RESPONSE,
            sender=Party(role=instance.role, instance_id=instance.instance_id),
            recipient=message.sender,
            payload=(
                {"capability_id": card.capability_id, "error": error.as_dict(), "invoke_id": pending.invoke_id}
                if error
                else {"capability_id": card.capability_id, "result": data, "invoke_id": pending.invoke_id}
            ),
            context=message.context,
            timestamp=self.clock.now_ms(),
            priority=message.priority,
        )
        context.add_message(message_reference(response))
        if error is not None:
            context.errors.append({**error.as_dict(), "capability_id": card.capability_id, "at": self.clock.now()})
            self.emitter.snapshot(context, SnapshotType.ERROR, "error", f"{card.capability_id}: {error.code}")
        elif not call.progress_reported:
            context.progress = 100
        if context.status not in FINAL_STATUSES:
            context.status = ContextStatus.READY
        self.emitter.context_changed(context)
        if error is None:  # its output, as the agent answered (an error has its own snapshot above)
            self.emitter.snapshot(context, SnapshotType.AUTO, f"answered {card.capability_id}", "ok")
        if not pending.future.done():
            self.emitter.message(response, DeliveryStatus.DELIVERED, pending.task.project_id)
            pending.answer((data if error is None else None, error, instance.instance_id))
