"""Where a message goes: the instance pool and the routing strategies (PRD §4.4 调用路由策略).

``by_role``: an idle healthy instance of the role, else a new one while the role is below
its ``max_concurrent_instances`` (4 by default, PRD §4.7), else the least loaded.
An instance held by an operator (waiting for an answer or a confirmation, itself or through
the instances it waits on) is neither counted against that limit nor chosen: it could hold
a new message for a day, and four tasks waiting for their operators must not stall the rest.
``by_instance``: that exact instance (resolved by the runtime, error if unknown or gone).
``least_busy``: the healthy instance with the fewest queued + in-flight messages, spawning
only when the role has none. Instances that would close a wait cycle with the caller are
never chosen, so an agent invoking itself or A -> B -> A cannot deadlock the runtime.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterator

from teamclaw.runtime.errors import AgentFailure, ErrorCode
from teamclaw.runtime.instance import AgentInstance
from teamclaw.runtime.invocation import RoutingStrategy


class InstancePool:
    """Every agent instance of one runtime, by id and by role (terminated ones stay by id)."""

    def __init__(self) -> None:
        self.by_id: dict[str, AgentInstance] = {}
        self._by_role: dict[str, list[AgentInstance]] = defaultdict(list)

    def __iter__(self) -> Iterator[AgentInstance]:
        return iter(list(self.by_id.values()))

    def add(self, instance: AgentInstance) -> None:
        self.by_id[instance.instance_id] = instance
        self._by_role[instance.role].append(instance)

    def retire(self, instance: AgentInstance) -> None:
        """Take a terminated instance out of routing (it stays known by id)."""
        self._by_role[instance.role] = [i for i in self._by_role[instance.role] if i is not instance]

    def get(self, instance_id: str) -> AgentInstance | None:
        return self.by_id.get(instance_id)

    def alive(self, role: str) -> list[AgentInstance]:
        return [i for i in self._by_role.get(role, ()) if i.alive]

    def load(self, role: str) -> int:
        """Queued + in-flight messages over the role's live instances."""
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

    def choose(
        self,
        role: str,
        strategy: RoutingStrategy,
        limit: int,
        caller: AgentInstance | None,
        spawn: Callable[[str], AgentInstance],
    ) -> AgentInstance:
        """The instance of ``role`` for the next message (see module docstring).

        ``limit`` is the role's max concurrent instances; ``spawn(role)`` creates one.
        Raises AgentFailure(unavailable): retryable when no instance is healthy, not
        retryable when every healthy one is waiting on the caller.
        """
        alive = [i for i in self.alive(role) if not self.operator_held(i)]
        healthy = [i for i in alive if i.healthy]
        candidates = [i for i in healthy if not self.would_deadlock(caller, i)]
        if strategy == RoutingStrategy.BY_ROLE:
            for instance in candidates:
                if instance.idle:
                    return instance
            if len(alive) < limit:
                return spawn(role)
        elif not candidates and len(alive) < limit:
            return spawn(role)
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
