"""A browser's bounded outbox: credit-based flow control for live sockets (issue #6).

A slow or stalled browser must never slow the runtime nor grow the server's memory. Each
socket has one ``Outbox``:

- Frames are numbered (``seq``); the page acknowledges each frame after applying it
  (``{"type": "ack", "seq": n}``). At most ``window`` frames are unacknowledged; beyond that
  nothing more is written to the socket, so a stalled client holds at most
  ``window * frame_events`` events in transit.
- Events waiting for credit sit in ``pending``, keyed by the live thing they describe: a newer
  update of the same context card or message row replaces the older one in place, so progress
  updates coalesce instead of queueing.
- When ``pending`` would exceed ``max_pending`` the client has fallen too far behind: pending
  is dropped, the client is told (a ``behind`` frame) and, once it has acknowledged everything
  sent, it is resynchronised from the current state (a ``state`` frame with ``resync: true``).
  Events that arrive meanwhile are dropped: the resync state includes them. ``dropped`` counts
  every event this socket dropped (``behind`` and ``state`` frames carry it, so the page knows
  how many it missed when it catches up); the consumer counts and logs each drop
  (``monitoring.metrics.live_drops``, issue 31).

Pure bookkeeping, no I/O: the consumer sends what it returns.
"""

from __future__ import annotations

import json
from collections import OrderedDict

WINDOW_FRAMES = 4
FRAME_EVENTS = 100
MAX_PENDING = 1000


class Outbox:
    """Per-client pending events and frame credits (see module docstring)."""

    def __init__(
        self, *, window: int = WINDOW_FRAMES, frame_events: int = FRAME_EVENTS, max_pending: int = MAX_PENDING
    ) -> None:
        if window < 1 or frame_events < 1 or max_pending < frame_events:
            raise ValueError("window and frame_events must be >= 1 and max_pending >= frame_events")
        self.window = window
        self.frame_events = frame_events
        self.max_pending = max_pending
        self.pending: OrderedDict[str, str] = OrderedDict()
        self.sent_seq = 0
        self.acked_seq = 0
        self.behind = False
        self.dropped = 0
        self.coalesced = 0

    @property
    def in_flight(self) -> int:
        """Frames sent and not yet acknowledged."""
        return self.sent_seq - self.acked_seq

    def push(self, key: str, text: str) -> bool:
        """Queue one event's JSON under ``key``; returns True when this push made the client
        fall behind (the caller then sends ``behind_frame()``)."""
        if self.behind:
            self.dropped += 1
            return False
        if key in self.pending:
            self.pending[key] = text
            self.coalesced += 1
            return False
        if len(self.pending) >= self.max_pending:
            self.dropped += len(self.pending) + 1
            self.pending.clear()
            self.behind = True
            return True
        self.pending[key] = text
        return False

    def ack(self, seq: object) -> None:
        """The client applied every frame up to ``seq`` (later or repeated acks are harmless)."""
        if isinstance(seq, int) and self.acked_seq < seq <= self.sent_seq:
            self.acked_seq = seq

    def next_frame(self) -> str | None:
        """The next ``events`` frame to send, or None (no credit, nothing pending, or behind)."""
        if self.behind or not self.pending or self.in_flight >= self.window:
            return None
        keys = []
        for key in self.pending:
            keys.append(key)
            if len(keys) >= self.frame_events:
                break
        texts = [self.pending.pop(key) for key in keys]
        self.sent_seq += 1
        return f'{{"type":"events","seq":{self.sent_seq},"events":[{",".join(texts)}]}}'

    def behind_frame(self) -> str:
        """Tell the client it fell behind (sent even without credit: it is tiny and once)."""
        self.sent_seq += 1
        return json.dumps({"type": "behind", "seq": self.sent_seq, "dropped": self.dropped})

    @property
    def wants_resync(self) -> bool:
        """Behind, and the client has caught up with everything sent: time for a state frame."""
        return self.behind and self.in_flight == 0

    def state_frame(self, fills: list[dict[str, str]], *, resync: bool) -> str:
        """A ``state`` frame replacing whole containers (on connect and on resync); leaves the
        behind mode. ``fills`` is ``[{"into": container_id, "html": ...}]``; ``dropped`` is the
        number of events this socket dropped so far (0 on connect)."""
        self.behind = False
        self.pending.clear()
        self.sent_seq += 1
        frame = {"type": "state", "seq": self.sent_seq, "resync": resync, "dropped": self.dropped, "fills": fills}
        return json.dumps(frame, ensure_ascii=False)

    def mark_lost(self) -> None:
        """The server itself dropped events for everyone (sink overload): resync this client."""
        if not self.behind:
            self.behind = True
            self.dropped += len(self.pending)
            self.pending.clear()
