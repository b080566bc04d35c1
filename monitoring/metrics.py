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

It also keeps this process's counters of what the live sockets dropped for a slow browser
(``live_drops``, issue 31): they are not in the record, they start at zero with the process.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections import Counter, deque
from collections.abc import Callable
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


# -- live sockets: what a browser did not get (issue 31) -------------------------------------

LIVE_DROP_REASONS: dict[str, str] = {
    "client_behind": "events not sent to a socket whose page fell behind (its outbox was full), "
    "or that arrived or were pending while it waited for its resync (web.sockets.outbox)",
    "layer_missed": "live.batch messages a socket never received from the channel layer: the "
    "layer dropped them (its per-channel capacity was full: ChannelFull; with Redis also the oldest "
    "of a consumer's full receive buffer) or they expired",
    "ring_missed": "published batches that left the live sink's ring before a slow socket read them",
    "sink_queue_full": "committed batches the live sink dropped because its queue was full",
    "sink_send_failed": "group sends of the live sink that failed or timed out",
}
"""The reasons ``LiveDrops`` counts, each with its unit (events, batches or sends). Whatever the
reason, the sockets concerned are told (a ``behind`` frame) and resynchronised from the
database (a ``state`` frame with ``resync: true``)."""

LOG_EVERY_S = 10.0
"""Shortest interval between two drop WARNINGs about one socket (or the sink)."""
LOG_LINES_PER_INTERVAL = 20
"""Most drop WARNINGs in any ``LOG_EVERY_S`` window, all sockets together: past that the
counts wait for a later line (or only reach the counters), so a flood of slow sockets does not
flood the log."""


class LiveDrops:
    """Process-wide counters of what the live sockets dropped, by reason
    (``LIVE_DROP_REASONS``), and rate-limited WARNINGs naming who dropped how many.

    ``dropped(key, who, reason, count)`` adds ``count`` to the reason's counter at once and
    logs ``"<who> dropped <n> <reason> ..."``: at most one line per ``key`` every ``every_s``
    seconds (drops in between are summed into the next line) and at most ``lines`` lines per
    ``every_s`` for the whole process. ``forget(key)`` logs what ``key`` dropped since its last
    line (a socket that closes) and forgets it. Thread-safe (sockets run on the server's loop,
    the sink on its own thread). ``clock`` returns seconds (monotonic)."""

    def __init__(
        self,
        logger: logging.Logger,
        *,
        every_s: float = LOG_EVERY_S,
        lines: int = LOG_LINES_PER_INTERVAL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.logger = logger
        self.every_s = every_s
        self.lines = lines
        self.clock = clock
        self._lock = threading.Lock()
        self._counts: Counter[str] = Counter()
        self._unlogged: dict[str, tuple[str, Counter[str]]] = {}
        self._logged_at: dict[str, float] = {}
        self._window: deque[float] = deque()

    def counts(self) -> dict[str, int]:
        """``{reason: count}`` for every reason of ``LIVE_DROP_REASONS`` since the process started."""
        with self._lock:
            return {reason: self._counts[reason] for reason in LIVE_DROP_REASONS}

    def dropped(self, key: str, who: str, reason: str, count: int) -> None:
        """Count ``count`` drops of ``reason`` by ``key`` (described as ``who`` in the log).
        Raises ValueError for an unknown reason or a negative count."""
        if reason not in LIVE_DROP_REASONS or count < 0:
            raise ValueError(f"not a live drop: {reason!r} x {count}")
        if count == 0:
            return
        with self._lock:
            self._counts[reason] += count
            _who, unlogged = self._unlogged.setdefault(key, (who, Counter()))
            unlogged[reason] += count
            now = self.clock()
            last = self._logged_at.get(key)
            line = (last is None or now - last >= self.every_s) and self._take_line(now)
            if line:
                self._logged_at[key] = now
                del self._unlogged[key]
        if line:
            self._log(who, unlogged, "")

    def forget(self, key: str) -> None:
        """``key`` is gone (a socket closed): log its drops not logged yet, if the process's
        line budget allows, and forget it."""
        with self._lock:
            self._logged_at.pop(key, None)
            pending = self._unlogged.pop(key, None)
            line = pending is not None and self._take_line(self.clock())
        if line and pending is not None:
            self._log(pending[0], pending[1], " before it closed")

    def _take_line(self, now: float) -> bool:
        while self._window and now - self._window[0] >= self.every_s:
            self._window.popleft()
        if len(self._window) >= self.lines:
            return False
        self._window.append(now)
        return True

    def _log(self, who: str, counts: Counter[str], when: str) -> None:
        parts = ", ".join(f"{count} {reason}" for reason, count in sorted(counts.items()))
        self.logger.warning("%s dropped %s%s; it is resynchronised from the database", who, parts, when)


live_drops = LiveDrops(logging.getLogger("teamclaw.live.drops"))
"""The process's ``LiveDrops`` (the live sockets and the live sink report to it)."""
