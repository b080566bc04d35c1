"""Capability health: availability as the running runtime sees it (PRD §4.2 能力健康检查,
``capability_health``) and seed 003's ``HealthProvider.HealthStatus`` (``capability_status``).

``capability_status``: ``HEALTHY | DEGRADED | UNHEALTHY`` per capability, from the live runtime's instances and the
recorded results:

- **UNHEALTHY**: the card is disabled (its skill is not active), or the instances that
  serve it have not beaten for ``heartbeat_timeout_s`` (90 s; the runtime then calls them
  unavailable), or none can be spawned;
- **DEGRADED**: the newest heartbeat is older than one interval (30 s) plus
  ``HEARTBEAT_GRACE_S`` - a heartbeat was missed - or the last ``OUTPUT_FAILURE_STREAK``
  answers all failed the card's own ``output_schema`` (``output_invalid``);
- **HEALTHY** otherwise (no instance yet counts: one is spawned on the first call).

``lastCheck`` is the time of this check on the runtime's clock (UTC ISO 8601).

A web process that runs no agents (``TEAMCLAW_RUNTIME=remote``) answers from the database
instead (``workers_capability_status``): the live runtime workers and the instance slots
they hold; it never starts a runtime of its own to answer (``runs.health_here`` chooses).
"""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

from django.conf import settings
from django.utils import timezone
from django.utils.translation import gettext_noop

from monitoring.models import Message
from runs.host_port import HostPort, runtime_of
from runs.models import InstanceSlot, RuntimeWorker
from runs.workers import silence_limit_s
from team.snapshot import build_snapshot
from teamclaw.runtime import Runtime
from teamclaw.runtime.config import ConfigSnapshot
from teamclaw.runtime.executors.provider import ProviderExecutor

OUTPUT_FAILURE_STREAK = 3
"""Consecutive ``output_invalid`` answers after which a capability is DEGRADED."""
HEARTBEAT_GRACE_S = 5.0
"""Slack after the heartbeat interval before a heartbeat counts as missed (s)."""

DISABLED = gettext_noop("the capability is disabled")
NO_HEARTBEAT = gettext_noop("no heartbeat for %(age)s s (limit %(limit)s s): unavailable")
MISSED_HEARTBEAT = gettext_noop("missed a heartbeat: the last one was %(age)s s ago (every %(every)s s)")
NONE_SPAWNABLE = gettext_noop("no instance is running and none may be spawned")
OUTPUT_FAILURES = gettext_noop("the last %(count)s results failed the output schema")
NO_INSTANCE_YET = gettext_noop("no instance yet; one is spawned on the first call")
BEATING = gettext_noop("%(count)s instance(s) beating")
MESSAGES = (DISABLED, NO_HEARTBEAT, MISSED_HEARTBEAT, NONE_SPAWNABLE, OUTPUT_FAILURES, NO_INSTANCE_YET, BEATING)
"""The health messages, in English as the API gives them; a page words them in its language
(``teamclaw.labels.reworded``)."""


def iso(seconds: float | None) -> str | None:
    """Epoch seconds -> ``2024-03-22T10:00:00Z`` (None stays None)."""
    if seconds is None:
        return None
    return datetime.fromtimestamp(seconds, tz=UTC).isoformat().replace("+00:00", "Z")


def output_failure_streak(capability_id: str, limit: int = OUTPUT_FAILURE_STREAK) -> int:
    """How many of the newest answers of ``capability_id`` in a row were ``output_invalid``
    (counted up to ``limit``)."""
    streak = 0
    answers = Message.objects.filter(
        type__in=("invoke_response", "invoke_error"), capability_id=capability_id
    ).order_by("-timestamp_ms", "-seq")
    for kind, payload in answers.values_list("type", "payload")[:limit]:
        if kind == "invoke_error" and (payload.get("error") or {}).get("code") == "output_invalid":
            streak += 1
        else:
            break
    return streak


def classify(
    *,
    enabled: bool,
    reason_disabled: str,
    instances: list[dict[str, Any]],
    spawnable: bool,
    now: float,
    interval_s: float,
    timeout_s: float,
    output_streak: int,
    unspawnable_reason: str = "",
) -> tuple[str, str]:
    """``(status, message)`` by the rules of the module docstring. ``instances`` are the
    live instances of the owner roles: ``{healthy, last_heartbeat}`` (epoch s);
    ``unspawnable_reason`` says why none may be spawned, when it is known."""
    if not enabled:
        return "UNHEALTHY", reason_disabled or DISABLED
    if instances:
        newest = max(i["last_heartbeat"] for i in instances)
        age = max(0.0, now - newest)
        if age >= timeout_s or not any(i["healthy"] for i in instances):
            return "UNHEALTHY", NO_HEARTBEAT % {"age": f"{age:.0f}", "limit": f"{timeout_s:g}"}
        if age > interval_s + HEARTBEAT_GRACE_S:
            return "DEGRADED", MISSED_HEARTBEAT % {"age": f"{age:.0f}", "every": f"{interval_s:g}"}
    elif not spawnable:
        return "UNHEALTHY", unspawnable_reason or NONE_SPAWNABLE
    if output_streak >= OUTPUT_FAILURE_STREAK:
        return "DEGRADED", OUTPUT_FAILURES % {"count": output_streak}
    if not instances:
        return "HEALTHY", NO_INSTANCE_YET
    return "HEALTHY", BEATING % {"count": len(instances)}


async def _runtime_view(runtime: Runtime, capability_id: str) -> dict[str, Any] | None:
    snapshot = await runtime.snapshot_for(None)
    card = snapshot.cards.get(capability_id)
    if card is None:
        return None
    raw = runtime.capability_health(snapshot, capability_id)
    spawnable = any(
        len(runtime.pool.alive(role, "")) < snapshot.constraints_for(role).max_concurrent_instances
        for role in card.owner_roles
        if role in snapshot.roles and snapshot.roles[role].enabled
    )
    provider = runtime.executors.get("provider")
    if isinstance(provider, ProviderExecutor) and card.executor == "provider":
        providers = provider.status(card, runtime.clock.now())
    else:
        providers = []
    return {
        "enabled": card.enabled,
        "skill_id": card.skill_id,
        "instances": raw["instances"],
        "spawnable": spawnable,
        "now": runtime.clock.now(),
        "interval_s": runtime.heartbeat_interval_s,
        "timeout_s": runtime.heartbeat_timeout_s,
        "providers": providers,
    }


def capability_health(host: HostPort, snapshot: ConfigSnapshot, capability_id: str) -> dict[str, Any]:
    """``{capability_id, status: available|unavailable, enabled, instances: [{instance_id,
    role, healthy, last_heartbeat}]}``: the runtime's heartbeats (90 s timeout) for the owner
    roles ``snapshot`` gives the card. Raises KeyError for an unknown capability.
    """
    runtime = runtime_of(host)

    async def health() -> dict[str, Any]:
        return runtime.capability_health(snapshot, capability_id)

    return host.call(health(), timeout=30)


def capability_status(host: HostPort, capability_id: str, timeout_s: float = 30) -> dict[str, Any] | None:
    """``{capabilityId, status, lastCheck, message, lastHeartbeat, instances, outputFailures,
    providers}`` for ``capability_id`` as ``host``'s runtime sees it, or None when no card has
    that id. Waits at most ``timeout_s`` (s) for the runtime; raises TimeoutError past it."""
    view = host.call(_runtime_view(runtime_of(host), capability_id), timeout=timeout_s)
    if view is None:
        return None
    return _status_document(capability_id, view)


def workers_capability_status(capability_id: str, snapshot: ConfigSnapshot | None = None) -> dict[str, Any] | None:
    """``capability_status`` for a web process that runs no agents (``TEAMCLAW_RUNTIME=remote``),
    from what the runtime workers leave in the database: the instances are the instance slots
    of the owner roles held by live workers (``runs.workers``; each beating with its worker),
    and one may be spawned while a live worker that takes tasks runs and a role has a free
    slot. A terminal run's instances serve only its own task and are not listed. With no live
    worker that takes calls the capability is UNHEALTHY: nothing would answer one. Each
    instance also names its ``worker``. ``providers`` stays empty (a worker's executor state
    is its own). ``snapshot``: the configuration to judge by (default: the global one, now).
    None when no card has that id."""
    snapshot = snapshot or build_snapshot(None)
    card = snapshot.cards.get(capability_id)
    if card is None:
        return None
    now = timezone.now()
    cutoff = now - timedelta(seconds=silence_limit_s())
    live = {w.id: w for w in RuntimeWorker.objects.filter(stopped_at__isnull=True, heartbeat_at__gte=cutoff)}
    # A terminal run (kind ``command``) serves its own task only: its instances answer nobody else.
    takers = {worker_id: w for worker_id, w in live.items() if w.kind != "command"}
    roles = [r for r in card.owner_roles if r in snapshot.roles and snapshot.roles[r].enabled]
    slots = InstanceSlot.objects.filter(role__in=roles, owner__in=list(live), lease_expires_at__gte=now)
    held = Counter(slots.values_list("role", flat=True))  # a terminal run's slots count against the limit too
    rows = list(slots.filter(owner__in=list(takers)).order_by("role", "index"))
    spawnable = bool(takers) and any(held[r] < snapshot.constraints_for(r).max_concurrent_instances for r in roles)
    view = {
        "enabled": card.enabled,
        "skill_id": card.skill_id,
        "instances": [
            {
                "instance_id": row.instance_id,
                "role": row.role,
                "healthy": True,
                "last_heartbeat": live[row.owner].heartbeat_at.timestamp(),
                "worker": row.owner,
            }
            for row in rows
        ],
        "spawnable": spawnable,
        "unspawnable_reason": NO_WORKER if not takers else "",
        "worker_beat": max((w.heartbeat_at.timestamp() for w in takers.values()), default=None),
        "now": now.timestamp(),
        "interval_s": float(settings.TEAMCLAW["WORKER_HEARTBEAT_S"]),
        "timeout_s": silence_limit_s(),
        "providers": [],
    }
    return _status_document(capability_id, view)


NO_WORKER = "no runtime worker is alive to run it (start one: python manage.py runtime_worker)"
"""Why a web process without agents calls every capability UNHEALTHY (a terminal
``run_workflow`` alone does not count: it runs its own task only)."""


def _status_document(capability_id: str, view: dict[str, Any]) -> dict[str, Any]:
    streak = output_failure_streak(capability_id)
    reason = f"skill {view['skill_id']} is not active" if view["skill_id"] else "the capability is disabled"
    status, message = classify(
        enabled=view["enabled"],
        reason_disabled=reason,
        instances=view["instances"],
        spawnable=view["spawnable"],
        now=view["now"],
        interval_s=view["interval_s"],
        timeout_s=view["timeout_s"],
        output_streak=streak,
        unspawnable_reason=view.get("unspawnable_reason", ""),
    )
    if view.get("worker_beat") is not None and not view["instances"] and status == "HEALTHY":
        # A worker killed a moment ago still counts as alive for the silence limit: say when it last beat.
        message += f" (the newest runtime worker heartbeat was {max(0.0, view['now'] - view['worker_beat']):.0f} s ago)"
    beats = [i["last_heartbeat"] for i in view["instances"]]
    return {
        "capabilityId": capability_id,
        "status": status,
        "lastCheck": iso(view["now"]),
        "message": message,
        "lastHeartbeat": iso(max(beats)) if beats else None,
        "instances": [
            {**i, "last_heartbeat": iso(i["last_heartbeat"])}
            for i in sorted(view["instances"], key=lambda i: i["instance_id"])
        ],
        "outputFailures": streak,
        "providers": [{**p, "down_until": iso(p["down_until"])} for p in view["providers"]],
    }
