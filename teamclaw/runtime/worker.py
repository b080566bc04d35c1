"""Agent instances at work: spawning, the per-instance worker loop, terminating (PRD §2.1, §4.3).

Each instance has one worker: an asyncio task that takes the next message from the
instance's mailbox (highest priority first) and hands it to the handler of its type (an
``invoke_request`` to the invoke path, a ``hook_event`` to the hook path, anything else is
noted in the receiver's context). ``run_capability`` is the one "run the executor, check its
output" step both the invoke and the hook path use. A routed spawn first takes one of the
role's instance slots in the call's counting scope (``teamclaw.runtime.scopes``: a task's own
instances by default, counted here; a shared scope's across runtime workers,
``teamclaw.runtime.slots``; PRD §4.7 max instances) and the instance gives it back when it is
terminated.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable, Collection, Coroutine, Mapping
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
from teamclaw.runtime.routing import InstancePool, in_helpers_slot, is_entry
from teamclaw.runtime.schemas import SchemaValidators, schema_errors
from teamclaw.runtime.scopes import own_task, slot_key
from teamclaw.runtime.slots import InstanceSlots, LocalSlots, SlotUse

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
    ``contexts_of(instance_id)`` lists the instance's contexts in running tasks. ``slots``
    is where an instance's slot is taken before it is spawned (``teamclaw.runtime.slots``;
    ``LocalSlots`` by default: the limit counts this runtime's instances only).
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
        slots: InstanceSlots | None = None,
    ) -> None:
        self.pool = pool
        self.slots: InstanceSlots = slots or LocalSlots()
        self.spawning: Counter[tuple[str, str]] = Counter()
        """Spawns in flight per (scope, role): slots being taken (they count against the limit)."""
        self._local = LocalSlots()
        self._spawns_for_held: set[tuple[str, str]] = set()
        self._ended_scopes: set[str] = set()
        """Task scopes whose task ended while some of their instances were busy (``end_scope``)."""
        self._reclaiming: set[str] = set()
        self._background: set[asyncio.Task[None]] = set()
        self.emitter = emitter
        self.delivery = delivery
        self.clock = clock
        self.mailbox_capacity = mailbox_capacity
        self._contexts_of = contexts_of
        self.handlers: dict[MessageType, MessageHandler] = {}
        self.other: MessageHandler | None = None

    def route(
        self,
        snapshot: ConfigSnapshot,
        role: str,
        strategy: RoutingStrategy,
        caller_instance: AgentInstance | None,
        *,
        entry: bool = False,
        scope: str = "",
    ) -> AgentInstance | None:
        """Pick the instance of ``role`` in counting scope ``scope`` (the call's task's,
        ``teamclaw.runtime.scopes``; ``InstancePool.choose``, PRD §4.4), or None when one
        should be spawned (the role is under its ``max_concurrent_instances`` in the scope):
        then ``place`` takes a slot and spawns it. ``entry``: an invoke from outside the team
        (an operator, the API). To a role that may invoke itself, entries and the calls inside
        tasks keep apart (``InstancePool.choose``'s ``self_invoking``). Raises AgentFailure."""
        limit = snapshot.constraints_for(role).max_concurrent_instances
        return self.pool.choose(
            role,
            strategy,
            limit,
            caller_instance,
            self.spawning[scope, role],
            self_invoking=self._self_invoking(snapshot, role, strategy, caller_instance, entry),
            scope=scope,
        )

    def _slots(self, scope: str) -> InstanceSlots:
        """Where an instance of ``scope`` takes its slot: a task's own scope is counted here
        (the task runs on this runtime alone), a shared one in ``slots``."""
        return self._local if own_task(scope) else self.slots

    def check_named(self, snapshot: ConfigSnapshot, instance: AgentInstance, entry: bool) -> None:
        """Refuse an entry (``entry``: an invoke from outside the team) sent ``by_instance``
        into the last instance slot of a role that may invoke itself: that slot is kept for
        the calls its tasks make to the role (``routing.in_helpers_slot``), and an entry
        would hold it for a whole task. Only shared slots have such an instance.

        Raises AgentFailure(unavailable, reason ``helpers_slot``, not retryable)."""
        limit = snapshot.constraints_for(instance.role).max_concurrent_instances
        if not entry or not snapshot.can_invoke(instance.role, instance.role) or limit < 2:
            return
        if in_helpers_slot(instance, limit):
            raise AgentFailure(
                ErrorCode.UNAVAILABLE,
                f"instance {instance.instance_id} holds {instance.role}'s last instance slot (limit {limit}), "
                f"kept for the calls {instance.role}'s tasks make to {instance.role}: send the call by_role "
                "or to another instance",
                {"target_instance_id": instance.instance_id, "limit": limit, "reason": "helpers_slot"},
                retryable=False,
            )

    @staticmethod
    def _self_invoking(
        snapshot: ConfigSnapshot,
        role: str,
        strategy: RoutingStrategy,
        caller_instance: AgentInstance | None,
        entry: bool,
    ) -> bool:
        return (
            strategy in (RoutingStrategy.BY_ROLE, RoutingStrategy.LEAST_BUSY)
            and (entry or caller_instance is not None)
            and snapshot.can_invoke(role, role)
        )

    async def place(
        self,
        snapshot: ConfigSnapshot,
        role: str,
        strategy: RoutingStrategy,
        caller_instance: AgentInstance | None,
        wait_s: float,
        *,
        entry: bool = False,
        scope: str = "",
    ) -> tuple[AgentInstance, float]:
        """The instance for a call ``route`` wants a new instance for: ``(instance, seconds
        waited)``. It takes one of the role's slots and spawns an instance in it; when every
        slot is held (by other runtime workers) the call goes to the least loaded instance of
        the role here, as when the local limit is reached, or, with none here, waits for a
        slot (polling every ``slots.retry_s``) for at most ``wait_s`` seconds, saying so to the
        other runtimes at each retry (``slots.want``; ``slots.stop_wanting`` once it got an
        instance or gave up). With ``LocalSlots``, and in a task's own scope (``scope``,
        ``teamclaw.runtime.scopes``), the slot is granted at once and nothing waits.

        Raises AgentFailure: ``timeout`` (reason ``no_instance_slot``, not retried: the call
        waited its whole timeout) when no slot came free in time; ``unavailable`` as
        ``InstancePool.choose``."""
        limit = snapshot.constraints_for(role).max_concurrent_instances
        self_invoking = self._self_invoking(snapshot, role, strategy, caller_instance, entry)
        slots, key = self._slots(scope), slot_key(role, scope)
        started = self.clock.now()
        use = SlotUse.ANY if not self_invoking else SlotUse.ENTRY if caller_instance is None else SlotUse.HELPER
        wanted = False  # this call told the other runtimes it waits (``slots.want``)
        try:
            while True:
                # An entry to a role that may invoke itself spawns only below the entries' cap;
                # at it, it waits for the spawns in flight and queues behind one of them.
                held_back = (
                    self_invoking
                    and caller_instance is None
                    and limit > 1
                    and self.pool.entries_at_cap(role, limit, self.spawning[scope, role], scope)
                )
                instance = None if held_back else await self.spawn_in_slot(role, limit, use=use, scope=scope)
                waited = self.clock.now() - started
                if instance is not None:
                    return instance, waited
                instance = self.pool.nearest(
                    role, strategy, limit, caller_instance, self_invoking=self_invoking, scope=scope
                )
                if instance is not None:
                    return instance, waited
                if waited >= wait_s:
                    raise AgentFailure(
                        ErrorCode.TIMEOUT,
                        f"no instance of {role} came free within {wait_s:g} s: its {limit} instance(s) run on "
                        "other runtime workers or serve tasks that wait on this call",
                        {"target_role": role, "limit": limit, "timeout_s": wait_s, "reason": "no_instance_slot"},
                        retryable=False,
                    )
                if not held_back and slots.shared:  # it waits for a slot held elsewhere
                    await slots.want(key, limit, use=use)
                    wanted = True
                await self.clock.sleep(min(slots.retry_s, wait_s - waited))
                instance = self.route(snapshot, role, strategy, caller_instance, entry=entry, scope=scope)
                if instance is not None:
                    return instance, self.clock.now() - started
        finally:
            if wanted:
                slots.stop_wanting(key)

    async def spawn_in_slot(
        self, role: str, limit: int, *, use: SlotUse = SlotUse.ANY, scope: str = ""
    ) -> AgentInstance | None:
        """Take one of ``role``'s ``limit`` slots in counting scope ``scope``
        (``teamclaw.runtime.scopes``) and spawn an instance of that scope in it; None when no
        slot ``use`` may take is free (``teamclaw.runtime.slots.SlotUse``: an entry to a role that
        may invoke itself may not take the role's last slot, a helper of it tries that first).
        Instances of the role an operator holds give their slots up first (they are not
        counted against the limit, PRD §4.6)."""
        slots = self._slots(scope)
        if slots.shared:
            self._give_up_held_slots(role, scope)
        elif self.pool.counted(role, scope) + self.spawning[scope, role] >= limit:
            return None  # alone, the runtime's own count is the limit
        instance_id = new_instance_id(role)
        self.spawning[scope, role] += 1
        try:
            slot = await slots.acquire(slot_key(role, scope), limit, instance_id, use=use)
        finally:
            self.spawning[scope, role] -= 1
        if slot is None:
            return None
        return self.spawn(role, instance_id=instance_id, slot=slot, scope=scope)

    def _give_up_held_slots(self, role: str | None = None, scope: str = "") -> None:
        """Free the shared slots of the instances an operator holds (of ``role`` in ``scope``,
        or of every role and shared scope)."""
        instances = self.pool.alive(role, scope) if role is not None else [i for i in self.pool if i.alive]
        for instance in instances:
            if own_task(instance.scope):
                continue  # counted here, and never counted while held (``InstancePool.counted``)
            if instance.slot is not None and self.pool.operator_held(instance):
                self._release_slot(instance)
                instance.slot_given_up = True

    def reclaim_slots(self, limits: Mapping[str, int], self_invoking: Collection[str]) -> None:
        """Instances back from their operator that gave their slot up while held (PRD §4.6:
        not counted then) take a free slot of their role back, in the background, so they
        count against its limit again on every worker (``limits``: role ->
        ``max_concurrent_instances``; ``self_invoking``: the roles that may invoke
        themselves, whose entries may not take the last slot, ``SlotUse``). One that finds
        none free runs on without a slot and is retired once idle (``settle_slots``).
        No-op with ``LocalSlots``."""
        if not self.slots.shared:
            return
        for instance in list(self.pool):
            if (
                not instance.alive
                or not instance.slot_given_up
                or instance.slot is not None
                or instance.role not in limits
                or instance.instance_id in self._reclaiming
                or self.pool.operator_held(instance)
                or own_task(instance.scope)
            ):
                continue
            if instance.role not in self_invoking:
                use = SlotUse.ANY
            else:
                use = SlotUse.ENTRY if instance.serving_entry else SlotUse.HELPER
            # Marked before the task starts: two releases in one loop step reclaim once.
            self._reclaiming.add(instance.instance_id)
            self._in_background(self._reclaim(instance, limits[instance.role], use), f"reclaim-{instance.instance_id}")

    async def _reclaim(self, instance: AgentInstance, limit: int, use: SlotUse) -> None:
        try:
            key = slot_key(instance.role, instance.scope)
            slot = await self.slots.acquire(key, limit, instance.instance_id, use=use)
            if slot is None:
                return
            if not instance.alive or self.pool.operator_held(instance):
                self.slots.release(instance.instance_id)  # gone, or held again meanwhile
                return
            instance.slot = slot
            instance.slot_given_up = False
            self.emitter.instance_changed(instance)
        finally:
            self._reclaiming.discard(instance.instance_id)

    def _in_background(self, coroutine: Coroutine[Any, Any, None], name: str) -> None:
        task = asyncio.get_running_loop().create_task(coroutine, name=name)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def _release_slot(self, instance: AgentInstance) -> None:
        if instance.slot is not None:
            instance.slot = None
            self.slots.release(instance.instance_id)

    def retirable(self, instance: AgentInstance) -> bool:
        """True when ``instance`` may be retired without anyone noticing: alive, idle, not
        held by an operator, and no context of it is open in a running task (its memory of
        the task lives there)."""
        if not instance.idle or self.pool.operator_held(instance):
            return False
        return all(context.status in FINAL_STATUSES for context in self._contexts_of(instance.instance_id))

    def _only_ready_in_tasks(self, instance: AgentInstance) -> bool:
        """True when each context of ``instance`` open in a running task is ``ready``
        (waits for nothing: not for a response, not for an operator)."""
        return all(
            context.status in FINAL_STATUSES or context.status == ContextStatus.READY
            for context in self._contexts_of(instance.instance_id)
        )

    def hand_over(self, instance: AgentInstance) -> None:
        """Give the slot of an idle ``instance`` that still has contexts open in running tasks
        to the runtime that waits for it (``settle_slots``): those contexts end ``completed``
        (PRD §4.6: it finished every call it was given; each gets its final snapshot), then
        the instance is terminated and its slot freed. A later call of such a task to the
        role gets another instance, with a new context and an empty memory. Without this a
        task's helper that answered kept its slot until its task ended, and a call from a
        task on another runtime waited out its timeout (``no_instance_slot``) while the slot
        sat idle."""
        for context in self._contexts_of(instance.instance_id):
            if context.status not in FINAL_STATUSES:
                context.status = ContextStatus.COMPLETED
                context.progress = 100  # as a task's end completes its contexts (TaskBook.end)
                self.emitter.final_snapshot(context)
                self.emitter.context_changed(context)
        self.terminate(instance.instance_id, "idle, and another runtime worker waits for its slot")

    def settle_slots(self, lost: list[str], wanted: list[str], limits: Mapping[str, int] | None = None) -> list[str]:
        """Apply what the shared slot store said on a renewal (``runs.dispatch``): the
        instances in ``lost`` lost their slot (this runtime was paused past its lease and
        another took it) and are terminated; those in ``wanted`` hold a slot another runtime
        waits for, and are retired when ``retirable`` (one an operator holds gives its slot
        up instead). When none of a role's wanted instances could go that way, one that is
        idle with its contexts open in running tasks all ``ready`` is handed over
        (``hand_over``): at most one per role and renewal (the store reports each stamp of a
        waiting call once, and a call still waiting stamps again at its next retry). Instances
        that gave their slot up while held are retired once retirable. ``limits`` (role ->
        ``max_concurrent_instances`` now, PRD §4.7): an instance in a slot at or past its
        role's limit (an operator lowered it) is retired once retirable, so the role shrinks
        to the new limit on every worker as its instances finish what they do; a busy one is
        never stopped for it. Returns the ids terminated."""
        ended = []
        for past in list(self.pool):
            limit = (limits or {}).get(past.role)
            if past.alive and past.slot is not None and limit is not None and past.slot >= limit:
                if self.retirable(past):
                    self.terminate(past.instance_id, f"idle, and its role's limit was lowered to {limit}")
                    ended.append(past.instance_id)
        for instance_id in lost:
            instance = self.pool.get(instance_id)
            # One that gave its slot up (an operator holds it) did not lose it: it keeps running.
            if instance is not None and instance.alive and instance.slot is not None:
                instance.slot = None  # no longer ours to give back
                self.terminate(instance_id, "its instance slot was taken over by another runtime worker")
                ended.append(instance_id)
        freed_roles: set[str] = set()
        in_tasks: list[AgentInstance] = []  # idle, but with a context open in a running task
        for instance_id in wanted:
            instance = self.pool.get(instance_id)
            if instance is None or not instance.alive or instance.slot is None:
                continue
            if self.pool.operator_held(instance):
                self._release_slot(instance)
                instance.slot_given_up = True
                freed_roles.add(instance.role)
            elif self.retirable(instance):
                self.terminate(instance_id, "idle, and another runtime worker waits for its slot")
                ended.append(instance_id)
                freed_roles.add(instance.role)
            elif instance.idle and self._only_ready_in_tasks(instance):
                in_tasks.append(instance)
        for instance in in_tasks:
            if instance.role not in freed_roles:  # one hand-over per role and renewal
                self.hand_over(instance)
                ended.append(instance.instance_id)
                freed_roles.add(instance.role)
        for instance in list(self.pool):
            if instance.alive and instance.slot_given_up and instance.slot is None and self.retirable(instance):
                self.terminate(instance.instance_id, "idle again after an operator held it, without a slot")
                ended.append(instance.instance_id)
        return ended

    def reroute_held(self) -> int:
        """Move invoke requests queued behind instances held by an operator (PRD §4.6
        ``waiting_user``; ``InstancePool.operator_held``) to another instance of the role, so
        a request that arrived while its instance was still busy does not wait a day for an
        operator it has nothing to do with. Each moved request is recorded ``expired`` with
        the reason and sent again to the new instance as a new message (same invoke, same
        correlation id). Returns how many were moved.

        With shared slots the held instances give their slots up first, at once: another
        instance may then be spawned in it while the operator thinks (the held one is not
        counted, PRD §4.6), so when it goes on its task's calls to its own role still find a
        slot for a helper (``InstancePool._choose_self_invoking``)."""
        if self.slots.shared:
            self._give_up_held_slots()
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
                scope = pending.task.scope
                try:
                    target = self.route(
                        pending.task.snapshot,
                        instance.role,
                        RoutingStrategy.BY_ROLE,
                        caller,
                        entry=caller is None,
                        scope=scope,
                    )
                except AgentFailure:
                    kept.append(message)
                    continue
                if target is None:  # a new instance is wanted
                    if self._slots(scope).shared:  # take its slot first (a database write), then move again
                        self._spawn_for_held(pending.task.snapshot, instance.role, caller, scope)
                        kept.append(message)
                        continue
                    target = self.spawn(instance.role, slot=0, scope=scope)
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

    def _spawn_for_held(
        self, snapshot: ConfigSnapshot, role: str, caller: AgentInstance | None = None, scope: str = ""
    ) -> None:
        """Spawn an instance of ``role`` in a free slot in the background, then move what
        waits behind held instances again (``reroute_held``). The slot is the kind the moved
        call may take (``SlotUse``: an entry to a role that may invoke itself never takes the
        helpers' slot, where no entry is routed). With none free it says so to the other
        runtimes (``slots.want``: their held instances then give their slots up) and tries
        again every ``slots.retry_s`` while a request still waits behind a held instance.
        Only a shared ``scope`` (``teamclaw.runtime.scopes``) needs it: a task's own scope
        is counted here, where a held instance is not counted."""
        if (scope, role) in self._spawns_for_held:
            return
        self._spawns_for_held.add((scope, role))
        key = slot_key(role, scope)
        limit = snapshot.constraints_for(role).max_concurrent_instances
        self_invoking = self._self_invoking(snapshot, role, RoutingStrategy.BY_ROLE, caller, caller is None)
        use = SlotUse.ANY if not self_invoking else SlotUse.ENTRY if caller is None else SlotUse.HELPER

        async def spawn_then_move() -> None:
            wanted = False
            try:
                while await self.spawn_in_slot(role, limit, use=use, scope=scope) is None:
                    if not self.slots.shared or not self._waits_behind_held(role, scope):
                        return
                    await self.slots.want(key, limit, use=use)
                    wanted = True
                    await self.clock.sleep(self.slots.retry_s)
                self.reroute_held()
            finally:
                if wanted:
                    self.slots.stop_wanting(key)
                self._spawns_for_held.discard((scope, role))

        self._in_background(spawn_then_move(), f"spawn-for-held-{role}")

    def _waits_behind_held(self, role: str, scope: str) -> bool:
        """True while a message is queued at an instance of ``role`` in ``scope`` an operator holds."""
        return any(
            instance.alive and len(instance.mailbox) and self.pool.operator_held(instance)
            for instance in self.pool.alive(role, scope)
        )

    def end_scope(self, scope: str) -> None:
        """A task whose own scope is ``scope`` ended (``teamclaw.runtime.scopes``): its idle
        instances are terminated and forgotten at once (its contexts are final already), busy
        ones once they are idle (what they run ends as it would have, e.g. a tool use of a
        cancelled task is denied). A shared scope keeps its instances."""
        if not own_task(scope):
            return
        self._ended_scopes.add(scope)
        self._retire_ended(scope)

    def _retire_ended(self, scope: str) -> None:
        """Retire the idle instances of ended task scope ``scope``; forget the scope once none is left."""
        if scope not in self._ended_scopes:
            return
        left = 0
        for instance in self.pool.in_scope(scope):
            if instance.idle:
                self.terminate(instance.instance_id, "its task ended")
                self.pool.forget(instance)
            else:
                left += 1
        if not left:
            self._ended_scopes.discard(scope)

    def cancel_background(self) -> None:
        """Cancel the background spawns and reclaims still taking a slot (the runtime stops)."""
        for task in list(self._background):
            task.cancel()

    def spawn(
        self, role: str, *, instance_id: str | None = None, slot: int | None = None, scope: str = ""
    ) -> AgentInstance:
        """Create an instance of ``role`` in counting scope ``scope`` (``teamclaw.runtime.scopes``)
        with its mailbox and worker; it beats at once. ``slot`` is the instance slot it holds
        (``spawn_in_slot``); without one it runs outside the limit (an operator's or an alert
        rule's explicit spawn)."""
        instance_id = instance_id or new_instance_id(role)
        now = self.clock.now()
        mailbox = Mailbox(self.mailbox_capacity, now_ms=self.clock.now_ms, on_expired=self.delivery.expired)
        instance = AgentInstance(instance_id, role, mailbox, created_at=now, last_heartbeat=now, slot=slot, scope=scope)
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
                self.emitter.final_snapshot(context)
                self.emitter.context_changed(context)
        if instance.worker is not None:
            instance.worker.cancel()
        self._release_slot(instance)
        self.pool.retire(instance)
        self.emitter.instance_changed(instance)
        return instance

    async def _work(self, instance: AgentInstance) -> None:
        while instance.alive:
            message = await instance.mailbox.get()
            instance.busy_with = message.id
            instance.serving_entry = is_entry(message)
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
                instance.serving_entry = False
                instance.processed += 1
                if instance.alive:
                    instance.status = InstanceStatus.IDLE
                if instance.scope in self._ended_scopes:  # not from inside its own worker
                    asyncio.get_running_loop().call_soon(self._retire_ended, instance.scope)


def new_instance_id(role: str) -> str:
    """A new instance id: ``<role>-<12 hex digits>`` (spawning is rare: random is fine)."""
    return f"{role}-{uuid.uuid4().hex[:12]}"


def absorb_cancel() -> None:
    """Take back a cancellation requested of the current task (the worker survives the
    timeout of the call it was running)."""
    current = asyncio.current_task()
    if current is not None and current.cancelling():
        current.uncancel()
