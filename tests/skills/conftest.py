"""A runtime host on a manual clock (time moves only when a test says so) and helpers to
drive calls through it from the test thread."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import pytest

from teamclaw.runtime import InvokeRequest, ManualClock


class ClockedHost:
    """The test's handle on a manual-clock host: ``advance`` time, ``invoke`` and wait."""

    def __init__(self, host: Any, clock: ManualClock) -> None:
        self.host = host
        self.clock = clock
        self.runtime = host.runtime

    def advance(self, seconds: float) -> None:
        async def step() -> None:
            self.clock.advance(seconds)
            await asyncio.sleep(0)

        self.host.call(step(), timeout=30)

    def drive(self, future: Any, *, step_s: float = 0.001, limit_s: float = 600) -> Any:
        """Advance the clock in ``step_s`` steps until ``future`` is done (at most ``limit_s``)."""
        moved = 0.0
        while not future.done():
            time.sleep(0.002)
            if future.done():
                break
            self.advance(step_s)
            moved += step_s
            if moved > limit_s:
                raise AssertionError(f"no result after {limit_s} s of clock time")
        return future.result(30)

    def invoke(
        self, capability: str, params: dict | None = None, role: str = "main", *, wait: bool = False, **drive: Any
    ) -> Any:
        """Invoke as ``role``; ``wait=True`` only waits (the clock moves only if the callee
        moves it), otherwise the clock is driven forward until the result is in."""
        future = self.host.submit(self.runtime.invoke(InvokeRequest(capability, params or {}), from_role=role))
        return future.result(30) if wait else self.drive(future, **drive)

    def flush(self) -> None:
        self.host.recorder.flush()


@pytest.fixture
def clocked(transactional_db, builtin, settings) -> Iterator[ClockedHost]:
    """The process's runtime host, on a ManualClock, without automatic heartbeats and
    without the background alert loop (tests evaluate alert rules themselves)."""
    from runs import host as host_module

    settings.TEAMCLAW = {**settings.TEAMCLAW, "ALERT_INTERVAL_S": 0}
    host_module.reset_host()
    clock = ManualClock()
    host = host_module.RuntimeHost("test", clock=clock, auto_heartbeat=False).start()
    host_module._host = host
    yield ClockedHost(host, clock)
    host_module.reset_host()
