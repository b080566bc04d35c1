"""Where a message goes: the instance pool and the routing strategies (PRD §4.4 调用路由策略).

Every strategy but ``by_instance`` chooses among the instances of the call's counting scope
(``teamclaw.runtime.scopes``: its task's own by default), and the limit counts them alone.
``by_role``: an idle healthy instance of the role, else a new one while the role is below
its ``max_concurrent_instances`` (4 by default, PRD §4.7), else the least loaded. "A new
one" is None from ``choose``: the caller takes one of the role's instance slots first
(``teamclaw.runtime.slots``, shared by every runtime worker), and when none is free goes to
``nearest`` (the least loaded here) or waits (``worker.InstanceWorkers.place``).
An instance held by an operator (waiting for an answer or a confirmation, itself or through
the instances it waits on) is neither counted against that limit nor chosen: it could hold
a new message for a day, and four tasks waiting for their operators must not stall the rest.
``by_instance``: that exact instance (resolved by the runtime, error if unknown or gone).
``least_busy``: the healthy instance with the fewest queued + in-flight messages, spawning
only when the role has none. Instances that would close a wait cycle with the caller are
never chosen, so an agent invoking itself or A -> B -> A cannot deadlock the runtime.
A role that may invoke itself (main: every review's main asks main for
``question_aggregation``) keeps its entries (calls from outside the team, each holding an
instance for a whole task) and the calls made inside tasks apart: entries run on at most
limit - 1 instances, and a call from inside a task never queues behind an instance running
or holding an entry (``InstancePool._choose_self_invoking``); otherwise tasks each holding
an instance and queued behind one another could close a ring and fail with "deadlock
avoided". Both rules hold for ``by_role`` and ``least_busy``; a hook from outside the team
that runs a capability counts as an entry (``is_entry``); ``by_instance`` goes where it is
told, except that an entry may not be sent into the role's last slot
(``worker.InstanceWorkers.check_named``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator

from teamclaw.runtime.errors import AgentFailure, ErrorCode
from teamclaw.runtime.instance import AgentInstance
from teamclaw.runtime.invocation import RoutingStrategy
from teamclaw.runtime.messages import AgentMessage, MessageType


class InstancePool:
    """Every agent instance of one runtime, by id and by role (terminated ones stay by id)."""

    def __init__(self) -> None:
        self.by_id: dict[str, AgentInstance] = {}
        self._by_role: dict[str, list[AgentInstance]] = defaultdict(list)
        self._by_scope: dict[str, set[str]] = defaultdict(set)
        """Counting scope (``AgentInstance.scope``) -> the ids of its live instances."""

    def __iter__(self) -> Iterator[AgentInstance]:
        return iter(list(self.by_id.values()))

    def add(self, instance: AgentInstance) -> None:
        self.by_id[instance.instance_id] = instance
        self._by_role[instance.role].append(instance)
        self._by_scope[instance.scope].add(instance.instance_id)

    def retire(self, instance: AgentInstance) -> None:
        """Take a terminated instance out of routing (it stays known by id)."""
        self._by_role[instance.role] = [i for i in self._by_role[instance.role] if i is not instance]
        ids = self._by_scope.get(instance.scope)
        if ids is not None:
            ids.discard(instance.instance_id)
            if not ids:
                del self._by_scope[instance.scope]

    def in_scope(self, scope: str) -> list[AgentInstance]:
        """The live instances of counting scope ``scope`` (``AgentInstance.scope``)."""
        return [self.by_id[i] for i in sorted(self._by_scope.get(scope, ()))]

    def forget(self, instance: AgentInstance) -> None:
        """Drop a terminated instance of a task's own scope once its task ended: nothing
        routes to it or looks it up again (the record keeps it), so a long-running worker
        does not keep every task's instances in memory."""
        if not instance.alive:
            self.by_id.pop(instance.instance_id, None)

    def get(self, instance_id: str) -> AgentInstance | None:
        return self.by_id.get(instance_id)

    def alive(self, role: str, scope: str | None = None) -> list[AgentInstance]:
        """The live instances of ``role``: of counting scope ``scope`` (``AgentInstance.scope``:
        those a call in that scope may be routed to), or of every scope (None)."""
        return [i for i in self._by_role.get(role, ()) if i.alive and (scope is None or i.scope == scope)]

    def load(self, role: str) -> int:
        """Queued + in-flight messages over the role's live instances (every scope)."""
        return sum(i.load for i in self.alive(role))

    def would_deadlock(self, caller: AgentInstance | None, target: AgentInstance) -> bool:
        """True when ``target`` is (transitively) waiting on ``caller``'s current execution."""
        if caller is None:
            return False
        stack, seen = [target], set()
        while stack:
            node = stack.pop()
            if node is caller:
                return node.busy_with is not None
            if node.instance_id in seen or node.busy_with is None:
                continue
            seen.add(node.instance_id)
            stack.extend(self.by_id[i] for i in node.waiting_on if i in self.by_id)
        return False

    def operator_held(self, instance: AgentInstance) -> bool:
        """True when ``instance`` waits for an operator, or waits (transitively) on an
        instance that does."""
        stack, seen = [instance], set()
        while stack:
            node = stack.pop()
            if node.waiting_operator:
                return True
            if node.instance_id in seen or node.busy_with is None:
                continue
            seen.add(node.instance_id)
            stack.extend(self.by_id[i] for i in node.waiting_on if i in self.by_id)
        return False

    def counted(self, role: str, scope: str = "") -> int:
        """The live instances of ``role`` in ``scope`` counted against its limit (not held by an operator)."""
        return sum(1 for i in self.alive(role, scope) if not self.operator_held(i))

    def entries_at_cap(self, role: str, limit: int, spawning: int, scope: str = "") -> bool:
        """True when the counted instances of ``role`` running or holding entries, with the
        ``spawning`` in flight (each may be for one), fill ``limit - 1``: a new entry to a
        role that may invoke itself then queues (``_choose_self_invoking``). An instance in
        the role's last shared slot does not count: it takes no entry through routing (a
        broadcast hook from outside may still reach it), and entries could not queue behind
        it, so counting it would keep them from the slots below."""
        counted = [i for i in self.alive(role, scope) if not self.operator_held(i) and not in_helpers_slot(i, limit)]
        return sum(1 for i in counted if runs_entries(i)) + spawning >= limit - 1

    def choose(
        self,
        role: str,
        strategy: RoutingStrategy,
        limit: int,
        caller: AgentInstance | None,
        spawning: int = 0,
        *,
        self_invoking: bool = False,
        scope: str = "",
    ) -> AgentInstance | None:
        """The instance of ``role`` in counting scope ``scope`` (``AgentInstance.scope``: a
        call is only routed to the instances of its own scope) for the next message (see
        module docstring), or None when
        a new instance should be spawned or the call should wait for one (``worker.place``):
        the role is under ``limit`` (its max concurrent instances) counting ``spawning``, the
        spawns of it in flight here.

        ``self_invoking`` (``by_role`` or ``least_busy`` to a role that may invoke itself, e.g.
        main): entries (calls from outside the team, ``caller`` None) and the calls made
        inside tasks keep apart (``_choose_self_invoking``).

        Raises AgentFailure(unavailable): retryable when no instance is healthy, not
        retryable when every healthy one is waiting on the caller at the limit, or when a
        role limited to one instance calls itself (reason ``limit_too_low``).
        """
        alive = [i for i in self.alive(role, scope) if not self.operator_held(i)]
        healthy = [i for i in alive if i.healthy]
        candidates = [i for i in healthy if not self.would_deadlock(caller, i)]
        # With no instance here to count, spawn (or join the spawns in flight waiting for a slot).
        room = not alive or len(alive) + spawning < limit
        if self_invoking and caller is not None and caller.role == role and limit < 2:
            raise AgentFailure(
                ErrorCode.UNAVAILABLE,
                f"{role}'s max_concurrent_instances is {limit}: a {role} agent cannot ask {role} for help "
                "(the call needs a second instance); raise the limit to 2 or more",
                {"target_role": role, "limit": limit, "reason": "limit_too_low"},
                retryable=False,
            )
        if self_invoking and limit > 1:
            least_busy = strategy == RoutingStrategy.LEAST_BUSY
            return self._choose_self_invoking(
                role, limit, caller, healthy, candidates, spawning, room, least_busy=least_busy, scope=scope
            )
        if strategy == RoutingStrategy.BY_ROLE:
            for instance in candidates:
                if instance.idle:
                    return instance
            if room:
                return None
        elif not candidates and room:
            return None
        if not candidates and len(alive) < limit:
            # Every instance here waits on the caller, but the role is below its limit: the
            # spawns in flight (other calls waiting for a slot) only fill it for a moment, so
            # this call waits for a slot as well rather than fail (``worker.place``).
            return None
        return self._least_loaded(role, limit, candidates, healthy)

    def _choose_self_invoking(
        self,
        role: str,
        limit: int,
        caller: AgentInstance | None,
        healthy: list[AgentInstance],
        candidates: list[AgentInstance],
        spawning: int,
        room: bool,
        *,
        least_busy: bool = False,
        scope: str = "",
    ) -> AgentInstance | None:
        """``by_role`` or ``least_busy`` to a role whose agents ask the role itself for help
        (main's ``question_aggregation`` inside every interview). An entry holds its instance
        for the whole task and may call the role again, so:

        - entries run on at most ``limit - 1`` instances: past that an entry queues behind
          the least loaded instance already running or holding entries (``runs_entries``),
          so one instance always stays for the calls inside tasks. With shared slots the
          instance in the role's last slot takes no entry (``in_helpers_slot``): the slots
          below it bound the entries over every worker (``teamclaw.runtime.slots``);
        - a call from inside a task never queues behind such an instance (it could wait for
          a whole task that waits on it in turn): it takes an idle helper, a new instance, or
          queues behind the least loaded helper, else waits (None) until one is free.

        ``least_busy`` keeps both rules and chooses as that strategy does among what they
        leave: the least loaded instance (an idle one has no load), spawning only when there
        is none.
        """
        if caller is None:
            for_entries = [i for i in candidates if not in_helpers_slot(i, limit)]
            runners = [i for i in for_entries if runs_entries(i)]
            if self.entries_at_cap(role, limit, spawning, scope):
                # None: the spawns in flight become the runners to queue behind (``place`` waits).
                return min(runners, key=lambda i: i.load) if runners else None
            if not least_busy:
                for instance in for_entries:
                    if instance.idle:
                        return instance
            if (room and not (least_busy and for_entries)) or (candidates and not for_entries):
                # None: spawn, or (only the helpers' slot's instance is here) wait for a slot.
                return None
            return self._least_loaded(role, limit, for_entries, healthy)
        helpers = [i for i in candidates if not runs_entries(i)]
        if least_busy:
            return min(helpers, key=lambda i: i.load) if helpers else None
        for instance in helpers:
            if instance.idle:
                return instance
        if room:
            return None
        if helpers:
            return min(helpers, key=lambda i: i.load)
        return None

    def nearest(
        self,
        role: str,
        strategy: RoutingStrategy,
        limit: int,
        caller: AgentInstance | None,
        *,
        self_invoking: bool = False,
        scope: str = "",
    ) -> AgentInstance | None:
        """An instance of ``role`` in ``scope`` here when no new one may be spawned (no slot is
        free anywhere): ``choose`` with no room. None when this runtime has no instance of the
        role it may count, or none fits yet (the call waits for a slot or a helper); raises
        AgentFailure(unavailable) as ``choose`` does."""
        if not self.counted(role, scope):
            return None
        return self.choose(role, strategy, limit, caller, spawning=limit, self_invoking=self_invoking, scope=scope)

    @staticmethod
    def _least_loaded(
        role: str, limit: int, candidates: list[AgentInstance], healthy: list[AgentInstance]
    ) -> AgentInstance:
        if candidates:
            return min(candidates, key=lambda i: i.load)
        if healthy:
            raise AgentFailure(
                ErrorCode.UNAVAILABLE,
                f"every {role} instance is waiting on this caller (deadlock avoided)",
                {"target_role": role, "reason": "deadlock"},
                retryable=False,
            )
        raise AgentFailure(
            ErrorCode.UNAVAILABLE,
            f"no healthy {role} instance (heartbeat lost) and the limit of {limit} is reached",
            {"target_role": role, "reason": "no_healthy_instance"},
        )


def in_helpers_slot(instance: AgentInstance, limit: int) -> bool:
    """True when ``instance`` holds its role's last instance slot (index ``limit - 1`` or
    past it), kept for the calls inside tasks to a role that may invoke itself
    (``teamclaw.runtime.slots``). A runtime that shares no slots gives every instance slot 0,
    so with a limit of 2 or more none of its instances is in it."""
    return instance.slot is not None and instance.slot >= limit - 1


def runs_entries(instance: AgentInstance) -> bool:
    """True when ``instance`` runs an entry (an invoke from outside the team: an operator's
    task, the API) or has one queued: it may hold its instance for a whole task."""
    return instance.serving_entry or any(is_entry(message) for message in instance.mailbox.queued())


def is_entry(message: AgentMessage) -> bool:
    """A message from outside the team (its sender is no agent instance) that may hold its
    instance for a whole task: an invoke request, or a hook event that runs a capability."""
    if message.sender.instance_id:
        return False
    if message.type == MessageType.INVOKE_REQUEST:
        return True
    return message.type == MessageType.HOOK_EVENT and bool(message.payload.get("capability_id"))
