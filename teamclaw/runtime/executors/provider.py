"""The ``provider`` executor: a PROVIDER skill's capability served by its implementations
(seed 003 ``implementations`` with ``priority``; ``BaseProvider.getPriority()`` = 100).

A card with ``executor: provider`` carries ``executor_config.implementations``:
``[{provider, priority, executor, timeout_ms, config}]``. Each call goes to the healthy
implementation with the highest priority (ties: the order written) and runs it with that
implementation's executor kind (``offline`` by default) and ``config``. When it fails with
``unavailable`` or ``timeout`` - or runs past its own ``timeout_ms`` (default: the card's
timeout shared equally between the implementations) - the call fails over to the next one;
any other failure is the call's answer. Each failover raises a ``failover`` alert event
(recorded and shown like every alert) and marks the implementation down for
``cooldown_s`` (30 s, one heartbeat interval), so later calls skip it; after the cooldown
it is tried again. When every implementation is down they are all tried anyway, in order.
When all fail the call fails with ``unavailable`` listing each attempt.

The health table lives in this executor (one per runtime), keyed by (capability_id,
provider); ``status`` reports it and ``mark_down`` lets an alert rule's ``failover``
action force traffic off the current implementation.
"""

from __future__ import annotations

import asyncio
import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from teamclaw.runtime.errors import AgentFailure, ErrorCode

if TYPE_CHECKING:
    from teamclaw.runtime.config import CardSpec
    from teamclaw.runtime.execution import ExecutionCall

FAILOVER_CODES = frozenset({ErrorCode.UNAVAILABLE, ErrorCode.TIMEOUT})
"""Seed 003: fail over on unavailable / timeout."""


@dataclass(slots=True)
class ImplementationHealth:
    """What one implementation of one capability has done: calls, failures (s times)."""

    calls: int = 0
    failures: int = 0
    failovers: int = 0
    down_until: float = 0.0
    last_error: str = ""
    last_used_at: float | None = None


class ProviderExecutor:
    """Runs a PROVIDER capability on its implementations with failover (module docstring)."""

    kind = "provider"

    def __init__(self, *, cooldown_s: float = 30.0) -> None:
        self.cooldown_s = cooldown_s
        self.health: dict[tuple[str, str], ImplementationHealth] = {}

    @staticmethod
    def implementations(card: CardSpec) -> list[dict[str, Any]]:
        """The card's implementations, highest priority first (ties keep their order)."""
        items = list((card.executor_config or {}).get("implementations") or [])
        indexed = sorted(enumerate(items), key=lambda pair: (-int(pair[1].get("priority", 100)), pair[0]))
        return [item for _, item in indexed]

    def _health(self, capability_id: str, provider: str) -> ImplementationHealth:
        return self.health.setdefault((capability_id, provider), ImplementationHealth())

    def order(self, card: CardSpec, now: float) -> list[dict[str, Any]]:
        """Implementations in the order a call tries them: healthy ones by priority, then
        (only if every one is down) the down ones by priority."""
        ranked = self.implementations(card)
        healthy = [i for i in ranked if self._health(card.capability_id, i["provider"]).down_until <= now]
        return healthy or ranked

    def mark_down(self, capability_id: str, provider: str, now: float, reason: str) -> None:
        """Take ``provider`` out of rotation for ``cooldown_s`` (an alert rule's failover)."""
        health = self._health(capability_id, provider)
        health.down_until = now + self.cooldown_s
        health.last_error = reason

    def status(self, card: CardSpec, now: float) -> list[dict[str, Any]]:
        """``[{provider, priority, executor, state: up|down, down_until, calls, failures,
        failovers, last_error, active}]`` in priority order; ``active`` marks the one the
        next call goes to."""
        order = self.order(card, now)
        first = order[0]["provider"] if order else None
        out = []
        for item in self.implementations(card):
            health = self._health(card.capability_id, item["provider"])
            out.append(
                {
                    "provider": item["provider"],
                    "priority": item.get("priority", 100),
                    "executor": item.get("executor", "offline"),
                    "state": "down" if health.down_until > now else "up",
                    "down_until": health.down_until if health.down_until > now else None,
                    "calls": health.calls,
                    "failures": health.failures,
                    "failovers": health.failovers,
                    "last_error": health.last_error,
                    "active": item["provider"] == first,
                }
            )
        return out

    async def execute(self, call: ExecutionCall) -> dict[str, Any]:
        """Try the implementations in ``order`` (module docstring). Raises AgentFailure."""
        port = call.port
        card = call.card
        order = self.order(card, call.clock.now())
        if not order:
            raise AgentFailure(
                ErrorCode.UNAVAILABLE,
                f"{card.capability_id} has no implementations",
                {"capability_id": card.capability_id},
                retryable=False,
            )
        share_s = max(0.001, card.timeout_s / len(order))
        attempts: list[dict[str, Any]] = []
        for position, item in enumerate(order):
            provider = item["provider"]
            kind = item.get("executor") or "offline"
            health = self._health(card.capability_id, provider)
            health.calls += 1
            health.last_used_at = call.clock.now()
            delegate = port.executors.get(kind)
            if delegate is None or kind == self.kind:
                code, message = ErrorCode.UNAVAILABLE, f"executor {kind!r} is not available on this server"
            else:
                sub_card = dataclasses.replace(
                    card, executor=kind, executor_config={**dict(item.get("config") or {}), "provider": provider}
                )
                sub_call = call.with_card(sub_card)
                timeout_s = item["timeout_ms"] / 1000 if item.get("timeout_ms") else share_s
                job = asyncio.ensure_future(delegate.execute(sub_call))
                try:
                    await call.clock.wait_any([job], timeout_s)
                except asyncio.CancelledError:
                    job.cancel()
                    raise
                if not job.done():
                    job.cancel()
                    code, message = ErrorCode.TIMEOUT, f"no answer within {timeout_s:g} s"
                else:
                    try:
                        result = job.result()
                    except AgentFailure as failure:
                        if failure.error.code not in FAILOVER_CODES:
                            health.failures += 1
                            health.last_error = f"{failure.error.code}: {failure.error.message}"
                            raise
                        code, message = failure.error.code, failure.error.message
                    else:
                        if attempts:
                            call.context.add_message(
                                {"type": "failover", "capability_id": card.capability_id, "attempts": attempts}
                            )
                        return result
            health.failures += 1
            health.failovers += 1
            health.last_error = f"{code}: {message}"
            health.down_until = call.clock.now() + self.cooldown_s
            attempts.append({"provider": provider, "code": str(code), "message": message})
            following = order[position + 1]["provider"] if position + 1 < len(order) else None
            port.alert(
                "failover",
                "warning" if following else "critical",
                f"{card.capability_id}: {provider} {code} ({message}); "
                + (f"failing over to {following}" if following else "no implementation left"),
                capability_id=card.capability_id,
                skill_id=card.skill_id,
                from_provider=provider,
                to_provider=following,
                reason=str(code),
                task_id=call.task.task_id,
            )
        raise AgentFailure(
            ErrorCode.UNAVAILABLE,
            f"every implementation of {card.capability_id} failed: "
            + "; ".join(f"{a['provider']} {a['code']}" for a in attempts),
            {"attempts": attempts},
            retryable=False,
        )
