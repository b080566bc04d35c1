"""The server warms the knowledge search at start (``knowledge.warmup``): after the warm-up
the resident tables are kept and the encoder is loaded, so the first question does not pay
for them; a failure while warming is logged and never raised."""

from __future__ import annotations

import logging

import pytest

from knowledge import embeddings, resident, warmup
from knowledge.sources import Upload, add_source
from tests.knowledge.helpers import librarian


@pytest.mark.django_db(transaction=True)
def test_the_warm_up_thread_keeps_the_tables_and_loads_the_encoder(monkeypatch):
    role = librarian()
    add_source(
        Upload("a.md", "text/markdown", "表名使用 snake_case。".encode()),
        role=role.role,
        project=None,
        load_level="basic",
    )
    resident.forget()
    monkeypatch.setattr(embeddings, "_model", None)
    warmup.warm_up_in_background().join(timeout=120)
    with resident._lock:
        kinds = {key[2] for key in resident._kept}
    assert "chunks" in kinds
    if embeddings.active():
        assert "vectors" in kinds and embeddings._model is not None


def test_a_failing_warm_up_is_logged_not_raised(monkeypatch, caplog):
    def broken() -> None:
        raise RuntimeError("no database yet")

    monkeypatch.setattr(warmup, "warm_up", broken)
    with caplog.at_level(logging.ERROR, logger="knowledge.warmup"):
        warmup.warm_up_in_background().join(timeout=10)
    assert "could not warm the knowledge search" in caplog.text
