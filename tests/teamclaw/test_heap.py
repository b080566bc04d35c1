"""The server's garbage-collector policy (teamclaw.heap): applied once, when the runtime host
starts, so full collections skip the start-up heap and young ones run less often."""

from __future__ import annotations

import gc

import pytest

from teamclaw import heap


@pytest.fixture
def pristine_collector(monkeypatch):
    """CPython's defaults and nothing frozen, restored afterwards (other tests share the process)."""
    thresholds = gc.get_threshold()
    was_frozen = gc.get_freeze_count()
    gc.unfreeze()
    gc.set_threshold(700, 10, 10)
    monkeypatch.setattr(heap, "_settled", False)
    yield
    gc.set_threshold(*thresholds)
    if was_frozen:
        gc.freeze()
    else:
        gc.unfreeze()


def test_settling_freezes_the_start_up_heap_and_applies_the_thresholds_once(pristine_collector):
    assert gc.get_freeze_count() == 0

    assert heap.settle_heap() is True

    assert gc.get_freeze_count() > 10_000  # Django, the apps and the test modules
    assert gc.get_threshold() == heap.GC_THRESHOLDS
    gc.set_threshold(700, 10, 10)
    assert heap.settle_heap() is False  # a second host in the same process changes nothing
    assert gc.get_threshold() == (700, 10, 10)


def test_starting_a_runtime_host_settles_the_heap(pristine_collector, transactional_db):
    from runs.host import RuntimeHost

    host = RuntimeHost(name="heap-test").start()
    try:
        assert gc.get_freeze_count() > 0
        assert gc.get_threshold() == heap.GC_THRESHOLDS
    finally:
        host.stop()
