"""Capability metrics from the recorded invokes (seed 003 ``GET /api/v1/metrics/{capabilityId}``).

Read only from ``Message`` rows the recorder stored (docs/architecture.md §4), so they survive
restarts and agree with replay:

- a **call** is one ``invoke_request`` the runtime accepted for delivery to the capability
  (every attempt of a retried invoke counts; requests refused by policy before delivery -
  ``denied`` - are counted apart as ``refusedCount``);
- it **completes** with the ``invoke_response`` or ``invoke_error`` sharing its
  ``correlation_id``, or when the request was ``dropped``/``expired`` in a mailbox (no
  response is ever sent then); calls still waiting are ``inFlight``;
- ``successRate`` = responses / completed calls (None when nothing completed);
- latency (ms) = response ``timestamp_ms`` - request ``timestamp_ms`` (the runtime clock);
  ``avgLatencyMs`` is the mean and ``p99LatencyMs`` the nearest-rank 99th percentile
  (the smallest latency that at least 99 % of answered calls do not exceed).
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

from monitoring.models import Message

UNDELIVERED = ("dropped", "expired")


def percentile(values: list[float], fraction: float) -> float | None:
    """Nearest-rank percentile of ``values`` (``fraction`` 0-1); None when empty."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(fraction * len(ordered)))
    return ordered[rank - 1]


def capability_metrics(
    capability_id: str,
    *,
    since_ms: int | None = None,
    until_ms: int | None = None,
    aliases: tuple[str, ...] = (),
) -> dict[str, Any]:
    """``{callCount, successCount, errorCount, inFlight, refusedCount, successRate,
    avgLatencyMs, p99LatencyMs, errorsByCode, since, until}`` for calls whose request was
    sent in ``[since_ms, until_ms)`` (epoch ms; None = unbounded). ``aliases`` are other
    names refused requests may carry (the card's cap:// addresses)."""
    requests = Message.objects.filter(type="invoke_request", capability_id=capability_id)
    responses = Message.objects.filter(type__in=("invoke_response", "invoke_error"), capability_id=capability_id)
    refused = Message.objects.filter(
        type="invoke_request", capability_id__in=(capability_id, *aliases), status="denied"
    )
    if since_ms is not None:
        requests = requests.filter(timestamp_ms__gte=since_ms)
        responses = responses.filter(timestamp_ms__gte=since_ms)
        refused = refused.filter(timestamp_ms__gte=since_ms)
    if until_ms is not None:
        requests = requests.filter(timestamp_ms__lt=until_ms)
        refused = refused.filter(timestamp_ms__lt=until_ms)
    sent: dict[str, tuple[int, str]] = {
        correlation: (timestamp, status)
        for correlation, timestamp, status in requests.exclude(status="denied").values_list(
            "correlation_id", "timestamp_ms", "status"
        )
    }
    answered: dict[str, tuple[int, str, str]] = {}
    for correlation, timestamp, kind in responses.values_list("correlation_id", "timestamp_ms", "type"):
        if correlation in sent and correlation not in answered:
            answered[correlation] = (timestamp, kind, "")
    # only errors need their payload (the code); responses are the bulk and skip the JSON
    for correlation, payload in responses.filter(type="invoke_error").values_list("correlation_id", "payload"):
        if correlation in answered and answered[correlation][1] == "invoke_error":
            timestamp, kind, _ = answered[correlation]
            answered[correlation] = (timestamp, kind, str((payload.get("error") or {}).get("code") or "error"))
    latencies: list[float] = []
    codes: Counter[str] = Counter()
    successes = in_flight = 0
    for correlation, (sent_at, status) in sent.items():
        answer = answered.get(correlation)
        if answer is None:
            if status in UNDELIVERED:
                codes[f"undelivered_{status}"] += 1
            else:
                in_flight += 1
            continue
        at, kind, code = answer
        latencies.append(float(max(0, at - sent_at)))
        if kind == "invoke_response":
            successes += 1
        else:
            codes[code] += 1
    completed = len(sent) - in_flight
    return {
        "capabilityId": capability_id,
        "callCount": len(sent),
        "successCount": successes,
        "errorCount": completed - successes,
        "inFlight": in_flight,
        "refusedCount": refused.count(),
        "successRate": round(successes / completed, 6) if completed else None,
        "avgLatencyMs": round(sum(latencies) / len(latencies), 3) if latencies else None,
        "p99LatencyMs": percentile(latencies, 0.99),
        "errorsByCode": dict(sorted(codes.items())),
        "since": since_ms,
        "until": until_ms,
    }
