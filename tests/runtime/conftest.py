"""Runtime test helpers: a runtime on a ManualClock with scripted offline handlers."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

import pytest

from teamclaw.runtime import (
    CollectingSink,
    ExecutorRegistry,
    ManualClock,
    MessageSent,
    MessageStatusChanged,
    OfflineExecutor,
    Runtime,
)


async def settle(rounds: int = 30) -> None:
    """Let every ready coroutine run (no real time passes)."""
    for _ in range(rounds):
        await asyncio.sleep(0)


class Harness:
    """A Runtime, its ManualClock, the collected events and the offline executor's handlers."""

    def __init__(self, snapshot, **options) -> None:
        self.clock = ManualClock()
        self.sink = CollectingSink()
        self.offline = OfflineExecutor(charge_tokens=options.pop("charge_tokens", False))
        self.runtime = Runtime(
            snapshot=snapshot,
            clock=self.clock,
            sinks=[self.sink],
            executors=ExecutorRegistry({"offline": self.offline}),
            **options,
        )

    def handle(self, capability_id: str, handler: Callable) -> None:
        self.offline.register(capability_id, handler)

    async def advance(self, seconds: float, step: float = 1.0) -> None:
        """Move the clock forward in steps, letting coroutines react after each step."""
        remaining = seconds
        while remaining > 0:
            delta = min(step, remaining)
            self.clock.advance(delta)
            remaining -= delta
            await settle()

    def messages(self, status: str | None = None) -> list:
        """(message, status) of every MESSAGE event, latest status applied."""
        latest: dict[str, tuple] = {}
        for event in self.sink.events:
            if isinstance(event, MessageSent | MessageStatusChanged):
                latest[event.message.id] = (event.message, str(event.status))
        return [(m, s) for m, s in latest.values() if status is None or s == status]


@pytest.fixture
async def harness_factory() -> AsyncIterator[Callable[..., Harness]]:
    made: list[Harness] = []

    def make(snapshot, **options) -> Harness:
        harness = Harness(snapshot, **options)
        made.append(harness)
        return harness

    yield make
    for harness in made:
        await harness.runtime.stop()
