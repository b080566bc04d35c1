"""Clocks the runtime reads time from, so tests move time instead of sleeping (docs/architecture.md §6).

All times are float seconds since the epoch; ``now_ms`` gives integer milliseconds, the unit
of ``AgentMessage.timestamp`` (PRD §4.3).
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from collections.abc import Callable
from typing import Any, Protocol


class TimerHandle(Protocol):
    def cancel(self) -> None: ...


class Clock(Protocol):
    """What the runtime needs from a clock."""

    def now(self) -> float:
        """Current time in seconds (epoch)."""

    def now_ms(self) -> int:
        """Current time in whole milliseconds (epoch)."""

    async def sleep(self, seconds: float) -> None:
        """Suspend the caller for ``seconds`` of this clock's time."""

    def call_later(self, seconds: float, callback: Callable[[], None]) -> TimerHandle:
        """Run ``callback`` once ``seconds`` of this clock's time have passed (cancellable)."""

    async def wait_any(self, waitables: list[asyncio.Future[Any]], timeout: float | None) -> None:
        """Return when one of ``waitables`` is done or ``timeout`` seconds of this clock pass."""


class SystemClock:
    """Wall-clock time, the event loop's timers and real ``asyncio.sleep``."""

    def now(self) -> float:
        return time.time()

    def now_ms(self) -> int:
        return int(time.time() * 1000)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(0.0, seconds))

    def call_later(self, seconds: float, callback: Callable[[], None]) -> TimerHandle:
        return asyncio.get_running_loop().call_later(max(0.0, seconds), callback)

    async def wait_any(self, waitables: list[asyncio.Future[Any]], timeout: float | None) -> None:
        if timeout is not None and timeout <= 0:
            return
        await asyncio.wait(waitables, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)


class _ManualTimer:
    __slots__ = ("callback", "cancelled")

    def __init__(self, callback: Callable[[], None]) -> None:
        self.callback = callback
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class ManualClock:
    """A clock that only moves when a test calls ``advance``.

    Timers and sleepers whose deadline passes run during ``advance`` (in deadline order),
    so timeouts, heartbeats and backoff are tested without real waiting.
    """

    def __init__(self, start: float = 1_700_000_000.0) -> None:
        self._now = float(start)
        self._timers: list[tuple[float, int, _ManualTimer]] = []
        self._counter = itertools.count()

    def now(self) -> float:
        return self._now

    def now_ms(self) -> int:
        return int(self._now * 1000)

    def call_later(self, seconds: float, callback: Callable[[], None]) -> TimerHandle:
        timer = _ManualTimer(callback)
        heapq.heappush(self._timers, (self._now + max(0.0, seconds), next(self._counter), timer))
        return timer

    async def sleep(self, seconds: float) -> None:
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        def wake() -> None:
            if not future.done():
                future.set_result(None)

        timer = self.call_later(seconds, wake)
        try:
            await future
        finally:
            timer.cancel()

    async def wait_any(self, waitables: list[asyncio.Future[Any]], timeout: float | None) -> None:
        if timeout is not None and timeout <= 0:
            return
        if timeout is None:
            await asyncio.wait(waitables, return_when=asyncio.FIRST_COMPLETED)
            return
        sleeper = asyncio.ensure_future(self.sleep(timeout))
        try:
            await asyncio.wait([*waitables, sleeper], return_when=asyncio.FIRST_COMPLETED)
        finally:
            sleeper.cancel()

    def advance(self, seconds: float) -> None:
        """Move time forward by ``seconds``, running every timer whose deadline passed."""
        target = self._now + seconds
        while self._timers and self._timers[0][0] <= target:
            when, _, timer = heapq.heappop(self._timers)
            self._now = max(self._now, when)
            if not timer.cancelled:
                timer.callback()
        self._now = target

    @property
    def pending_timers(self) -> int:
        """How many timers (sleepers included) are still scheduled."""
        return sum(1 for _, _, t in self._timers if not t.cancelled)
