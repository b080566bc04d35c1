"""Alert rules of active skills (seed 003 ``alerting.rules``): evaluation and actions.

``evaluate_alert_rules(now_ms)`` looks at every enabled rule of every ACTIVATED skill, for
each enabled capability it covers:

- the metric: ``success_rate``, ``p99_latency_ms`` and ``avg_latency_ms`` over the calls sent
  in the last ``duration``, at least a minute (monitoring.metrics; no calls = no data = the
  condition does not hold), ``health_status`` from runs.health now;
- the condition holding starts ``pending_since``; once it has held for the rule's
  ``duration`` (Prometheus ``for:`` semantics) an ``Alert`` opens (kind ``alert_rule``,
  the rule's severity, the value that broke it) and the actions run once:
  ``notify`` (the alert itself, shown in the alerts list, for the named target),
  ``failover`` (a PROVIDER capability's active implementation is marked down, so calls go
  to the next by priority), ``auto_restart`` (its unhealthy instances, and those that
  answered with errors in the window, are replaced) and ``scale_out: N`` (up to N more
  instances of the owner role, never past the role's concurrency limit, PRD §4.7);
- the condition no longer holding resolves the open alert (``resolved_at``).

The runtime host runs ``alert_loop`` every ``TEAMCLAW_ALERT_INTERVAL_S`` seconds (15; 0 turns
it off) of the runtime's clock.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from concurrent.futures import Future
from datetime import UTC, datetime
from typing import Any

from django.conf import settings
from django.db import close_old_connections, transaction

from capabilities.models import AlertRule, CapabilityCard
from capabilities.skill_index import AlertCondition
from capabilities.skill_models import SkillStatus
from monitoring.metrics import capability_metrics
from monitoring.models import Alert, AlertRuleState, Message
from runs.health import capability_status
from runs.host_port import HostPort, runtime_of
from teamclaw.runtime import Runtime
from teamclaw.runtime.executors.provider import ProviderExecutor

log = logging.getLogger(__name__)
MIN_WINDOW_MS = 60_000
"""Rate and latency metrics look at least one minute back, whatever the rule's duration."""
_evaluating = threading.Lock()


def _dt(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, tz=UTC)


def metric_value(rule: AlertRule, card: CapabilityCard, now_ms: int, host: HostPort) -> float | str | None:
    """The value of ``rule.metric`` for ``card`` at ``now_ms`` (None = no data)."""
    if rule.metric == "health_status":
        health = capability_status(host, card.capability_id)
        return health["status"] if health else None
    window = max(int(rule.duration_s * 1000), MIN_WINDOW_MS)
    metrics = capability_metrics(card.capability_id, since_ms=now_ms - window, until_ms=now_ms + 1)
    return {
        "success_rate": metrics["successRate"],
        "p99_latency_ms": metrics["p99LatencyMs"],
        "avg_latency_ms": metrics["avgLatencyMs"],
    }[rule.metric]


def evaluate_alert_rules(*, now_ms: int, host: HostPort) -> list[dict[str, Any]]:
    """Evaluate every rule at ``now_ms`` (epoch ms of the runtime clock); returns the changes
    ``[{rule, capability_id, change: pending|opened|resolved|cleared, value, alert_id}]``."""
    changes: list[dict[str, Any]] = []
    with _evaluating:
        changes += _resolve_orphans(now_ms)
        rules = AlertRule.objects.filter(enabled=True, skill__status=SkillStatus.ACTIVATED).select_related("skill")
        for rule in rules:
            cards = rule.skill.cards.filter(enabled=True)
            if rule.capability:
                cards = cards.filter(name=rule.capability)
            for card in cards:
                try:
                    value = metric_value(rule, card, now_ms, host)
                except Exception:
                    log.exception("alert rule %s: metric of %s failed", rule.pk, card.capability_id)
                    continue
                change = _step(rule, card, value, now_ms, host)
                if change:
                    changes.append(change)
    return changes


def _resolve_orphans(now_ms: int) -> list[dict[str, Any]]:
    """Resolve open alerts whose rule no longer runs: its skill left ACTIVATED, the rule was
    disabled, or the capability was disabled."""
    changes = []
    active = set(
        CapabilityCard.objects.filter(enabled=True, skill__status=SkillStatus.ACTIVATED).values_list(
            "capability_id", flat=True
        )
    )
    states = AlertRuleState.objects.filter(alert__isnull=False, alert__resolved_at__isnull=True).select_related(
        "rule", "alert"
    )
    for state in states:
        if state.rule.enabled and state.capability_id in active:
            continue
        alert = state.alert
        if alert is None:  # the query asked for open alerts only
            continue
        with transaction.atomic():
            alert.resolved_at = _dt(now_ms)
            alert.details = {**alert.details, "resolved_because": "the rule or its capability is no longer active"}
            alert.save(update_fields=["resolved_at", "details"])
            state.alert = None
            state.pending_since = None
            state.save(update_fields=["alert", "pending_since"])
        changes.append(
            {
                "rule": state.rule.name,
                "rule_id": state.rule_id,
                "capability_id": state.capability_id,
                "value": None,
                "change": "resolved",
                "alert_id": alert.pk,
            }
        )
    return changes


def _step(rule: AlertRule, card: CapabilityCard, value: Any, now_ms: int, host: HostPort) -> dict[str, Any] | None:
    condition = AlertCondition(rule.metric, rule.op, rule.threshold)
    holds = condition.holds(value)
    now = _dt(now_ms)
    with transaction.atomic():
        state, _ = AlertRuleState.objects.select_for_update().get_or_create(rule=rule, capability_id=card.capability_id)
        state.last_value = value
        state.last_evaluated_at = now
        change: dict[str, Any] | None = None
        base = {"rule": rule.name, "rule_id": rule.pk, "capability_id": card.capability_id, "value": value}
        if not holds:
            if state.alert_id:
                alert = Alert.objects.select_for_update().get(pk=state.alert_id)
                alert.resolved_at = now
                alert.details = {**alert.details, "resolved_value": value}
                alert.save(update_fields=["resolved_at", "details"])
                change = {**base, "change": "resolved", "alert_id": alert.pk}
            elif state.pending_since:
                change = {**base, "change": "cleared", "alert_id": None}
            state.pending_since = None
            state.alert = None
        else:
            if state.pending_since is None:
                state.pending_since = now
                change = {**base, "change": "pending", "alert_id": None}
            held_s = (now - state.pending_since).total_seconds()
            if state.alert_id is None and held_s >= rule.duration_s:
                alert = Alert.objects.create(
                    kind="alert_rule",
                    severity=rule.severity,
                    message=f"{rule.name}: {card.capability_id} {rule.condition} (now {_show(rule.metric, value)})",
                    details={
                        "rule": rule.name,
                        "condition": rule.condition,
                        "value": value,
                        "held_s": held_s,
                        "skill_id": rule.skill.skill_id,
                        "notify": rule.actions.get("notify"),
                        "actions": rule.actions,
                    },
                    created_at=now,
                    rule=rule,
                    capability_id=card.capability_id,
                )
                state.alert = alert
                change = {**base, "change": "opened", "alert_id": alert.pk}
        state.save()
    if change and change["change"] == "opened":
        taken = run_actions(rule, card, now_ms, host)
        Alert.objects.filter(pk=change["alert_id"]).update(details={**alert.details, "actions_taken": taken})
        change["actions_taken"] = taken
    return change


def _show(metric: str, value: Any) -> str:
    if metric == "success_rate" and isinstance(value, int | float):
        return f"{value * 100:.1f}%"
    if metric.endswith("_ms") and isinstance(value, int | float):
        return f"{value:g} ms"
    return str(value)


# ---------------------------------------------------------------------------- actions
def run_actions(rule: AlertRule, card: CapabilityCard, now_ms: int, host: HostPort) -> list[str]:
    """Run the rule's runtime actions for ``card``; returns what each did, in words."""
    actions = rule.actions or {}
    taken = []
    if actions.get("notify"):
        taken.append(f"notified {actions['notify']}")
    if not any(actions.get(name) for name in ("failover", "auto_restart", "scale_out")):
        return taken
    runtime = runtime_of(host)
    since_ms = now_ms - int(rule.duration_s * 1000)
    failing = set(
        card_messages(card.capability_id, since_ms).values_list("from_instance", flat=True)
    )  # instances that answered with errors in the window
    if actions.get("failover"):
        taken.append(host.call(_failover(runtime, card.capability_id), timeout=30))
    if actions.get("auto_restart"):
        taken.append(host.call(_restart(runtime, card.capability_id, failing), timeout=30))
    if actions.get("scale_out"):
        taken.append(host.call(_scale_out(runtime, card.capability_id, int(actions["scale_out"])), timeout=30))
    return taken


def card_messages(capability_id: str, since_ms: int) -> Any:
    """The ``invoke_error`` messages of ``capability_id`` sent since ``since_ms`` (epoch ms)."""

    return Message.objects.filter(type="invoke_error", capability_id=capability_id, timestamp_ms__gte=since_ms)


async def _card(runtime: Runtime, capability_id: str) -> Any:
    snapshot = await runtime.snapshot_for(None)
    return snapshot, snapshot.cards.get(capability_id)


async def _failover(runtime: Runtime, capability_id: str) -> str:
    _, card = await _card(runtime, capability_id)
    executor = runtime.executors.get("provider")
    if card is None or card.executor != "provider" or not isinstance(executor, ProviderExecutor):
        return "failover: no alternative implementation (not a PROVIDER capability)"
    now = runtime.clock.now()
    order = executor.status(card, now)
    active = next((p for p in order if p["active"]), None)
    if active is None or len(order) < 2:
        return "failover: no alternative implementation"
    executor.mark_down(capability_id, active["provider"], now, "alert rule failover")
    after = next((p["provider"] for p in executor.status(card, now) if p["active"]), None)
    runtime.alert(
        "failover",
        "warning",
        f"{capability_id}: alert rule moved calls from {active['provider']} to {after}",
        capability_id=capability_id,
        from_provider=active["provider"],
        to_provider=after,
        reason="alert_rule",
    )
    return f"failover: {active['provider']} -> {after}"


async def _restart(runtime: Runtime, capability_id: str, failing: set[str]) -> str:
    snapshot, card = await _card(runtime, capability_id)
    if card is None:
        return "auto_restart: the capability is gone"
    restarted = []
    for role in card.owner_roles:
        limit = snapshot.constraints_for(role).max_concurrent_instances
        for instance in list(runtime.pool.alive(role)):
            if instance.healthy and instance.instance_id not in failing:
                continue
            runtime.terminate(instance.instance_id, reason="alert rule auto_restart")
            # The fresh instance takes the slot given back (PRD §4.7: the limit holds across
            # runtime workers, runs.instance_slots); another worker may have taken it meanwhile.
            fresh = await runtime.spawn_in_slot(role, limit)
            restarted.append(f"{instance.instance_id} -> {fresh.instance_id if fresh else 'no free slot'}")
    if not restarted:
        return "auto_restart: every instance is healthy and none answered with errors"
    return "auto_restart: " + ", ".join(restarted)


async def _scale_out(runtime: Runtime, capability_id: str, count: int) -> str:
    snapshot, card = await _card(runtime, capability_id)
    if card is None or not card.owner_roles:
        return "scale_out: the capability is gone"
    role = card.owner_roles[0]
    limit = snapshot.constraints_for(role).max_concurrent_instances
    room = max(0, limit - len(runtime.pool.alive(role)))
    added: list[str] = []
    for _ in range(min(count, room)):
        fresh = await runtime.spawn_in_slot(role, limit)  # a slot each: the limit holds across workers
        if fresh is None:
            break
        added.append(fresh.instance_id)
    note = "" if len(added) == count else f" (the {role} limit of {limit} instances is reached)"
    return f"scale_out: added {len(added)} of {count} {role} instance(s){note}"


# ---------------------------------------------------------------------------- loop
async def alert_loop(host: HostPort, interval_s: float) -> None:
    """Evaluate the rules every ``interval_s`` seconds of the runtime's clock, forever."""
    runtime = runtime_of(host)
    while True:
        await runtime.clock.sleep(interval_s)
        try:
            await asyncio.to_thread(_evaluate_in_thread, runtime.clock.now_ms(), host)
        except Exception:
            log.exception("alert evaluation failed")


def _evaluate_in_thread(now_ms: int, host: HostPort) -> None:
    close_old_connections()
    try:
        evaluate_alert_rules(now_ms=now_ms, host=host)
    finally:
        close_old_connections()


def start_alert_loop(host: HostPort) -> Future[None] | None:
    """Start ``alert_loop`` on the host's runtime loop when TEAMCLAW_ALERT_INTERVAL_S > 0;
    returns the concurrent Future (cancel it to stop) or None."""
    interval = float(settings.TEAMCLAW.get("ALERT_INTERVAL_S", 15))
    if interval <= 0:
        return None
    return host.submit(alert_loop(host, interval))
