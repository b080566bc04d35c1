"""Parallel saves never lose an update (issue 5 optimistic concurrency, PRD §4.8).

Real threads, each with its own database connection, save the invoke matrix at once.
"""

from __future__ import annotations

import threading

import pytest
from django.db import connection

from capabilities.config import current_version
from capabilities.errors import StaleVersion
from capabilities.matrices import INVOKE, matrix_document, save_matrix
from capabilities.models import ConfigChange, InvokePermission

pytestmark = pytest.mark.django_db(transaction=True)

CELLS = [("pm", "dba"), ("pm", "devops"), ("designer", "dba"), ("dba", "pm"), ("devops", "pm"), ("dba", "devops")]


def run_threads(target, count: int) -> list[object]:
    results: list[object] = [None] * count
    barrier = threading.Barrier(count)

    def work(index: int) -> None:
        try:
            barrier.wait(10)
            results[index] = target(index)
        except Exception as exc:  # reported to the test
            results[index] = exc
        finally:
            connection.close()

    threads = [threading.Thread(target=work, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    return results


def test_parallel_saves_from_the_same_version_let_exactly_one_win(builtin):
    loaded = matrix_document(INVOKE)["version"]
    before = current_version()

    def save(index: int):
        caller, callee = CELLS[index]
        return save_matrix(INVOKE, project=None, version=loaded, matrix={caller: {callee: True}}, note=str(index))

    results = run_threads(save, len(CELLS))
    winners = [i for i, r in enumerate(results) if not isinstance(r, Exception)]
    losers = [r for r in results if isinstance(r, Exception)]
    assert len(winners) == 1, results
    assert all(isinstance(r, StaleVersion) for r in losers), losers
    allowed = {
        (c, t) for c, t in CELLS if InvokePermission.objects.get(project=None, caller__role=c, target__role=t).allowed
    }
    assert allowed == {CELLS[winners[0]]}
    assert current_version() == before + 1


def test_parallel_saves_that_retry_on_conflict_all_land(builtin):
    before = current_version()
    conflicts = []

    def save_with_retry(index: int):
        caller, callee = CELLS[index]
        for _attempt in range(50):
            version = matrix_document(INVOKE)["version"]
            try:
                return save_matrix(INVOKE, project=None, version=version, matrix={caller: {callee: True}})
            except StaleVersion:
                conflicts.append(index)
        raise AssertionError("never saved")

    results = run_threads(save_with_retry, len(CELLS))
    assert not [r for r in results if isinstance(r, Exception)], results
    for caller, callee in CELLS:
        assert InvokePermission.objects.get(project=None, caller__role=caller, target__role=callee).allowed
    changes = list(ConfigChange.objects.filter(new_version__gt=before).order_by("new_version"))
    assert len(changes) == len(CELLS)
    assert current_version() == before + len(CELLS)
    assert [c.new_version for c in changes] == list(range(before + 1, before + len(CELLS) + 1))
    assert all(c.old_version == c.new_version - 1 for c in changes)
    assert sorted(tuple(c.changed_fields) for c in changes) == sorted(
        (f"invoke_matrix.{caller}.{callee}",) for caller, callee in CELLS
    )
