"""What code running beside the runtime needs of its host (``runs.host.RuntimeHost``): the
runtime, and a way to run a coroutine on the runtime's loop from another thread.

Capability health and the alert rules take a ``HostPort`` rather than importing the host, so
the host can start the alert loop without the two modules importing each other.
"""

from __future__ import annotations

from collections.abc import Coroutine
from concurrent.futures import Future
from typing import Any, Protocol, TypeVar

from teamclaw.runtime import Runtime

T = TypeVar("T")


class HostPort(Protocol):
    """A runtime on its own event loop (see ``RuntimeHost``)."""

    @property
    def runtime(self) -> Runtime | None:
        """The runtime, once the host started (None before)."""

    def call(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Run ``coro`` on the runtime loop and wait (from synchronous code); ``timeout`` s."""

    def submit(self, coro: Coroutine[Any, Any, T]) -> Future[T]:
        """Schedule ``coro`` on the runtime loop; returns a concurrent Future."""


def runtime_of(host: HostPort) -> Runtime:
    """``host``'s runtime; RuntimeError when the host has not started one."""
    if host.runtime is None:
        raise RuntimeError("the runtime host has not started its runtime")
    return host.runtime
