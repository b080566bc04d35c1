"""Garbage-collector policy for a long-running TeamClaw process (the server, the benchmark).

CPython's default (``gc.set_threshold(700, 10, 10)``, nothing frozen) makes every full
collection walk the whole start-up heap (Django, the URL conf, models, templates: hundreds of
thousands of objects that never become garbage) and runs a young collection every 700
allocations. Under a busy runtime (tens of thousands of events a second) that shows up as
pauses of 50-150 ms at the 99th percentile and about a third of the invoke cost
(``bench/runtime_bench.py``). ``settle_heap`` fixes both once per process.
"""

from __future__ import annotations

import gc
import threading

GC_THRESHOLDS = (10_000, 50, 100)
"""``gc.set_threshold`` arguments: a young collection every 10,000 net allocations (instead of
700); older generations as rarely as the default ratio allows without letting cycles pile up."""

_lock = threading.Lock()
_settled = False


def settle_heap() -> bool:
    """Collect once, move every surviving object to the permanent generation (``gc.freeze``)
    so later collections skip the start-up heap, and apply ``GC_THRESHOLDS``.

    Call it once start-up is over (``RuntimeHost.start`` does); later calls do nothing and
    return False. Objects frozen here are still freed by reference counting; only cycles among
    them would outlive their use, which start-up objects do not form.
    """
    global _settled
    with _lock:
        if _settled:
            return False
        _settled = True
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)
    return True
