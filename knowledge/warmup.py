"""Warm the knowledge search at server start, so an operator's first question does not pay
for loading it (README "Knowledge").

The first search of a fresh process used to take about 4.4 s against 0.4–0.6 s afterwards
(a new operator's walk, 2026-12-06): jieba builds its dictionary (about 2 s here), the
multilingual encoder loads, and the resident tables of chunks and vectors
(``knowledge.resident``) are read. ``warm_up_in_background`` does all three in a daemon
thread when the embedded runtime starts with the server (``teamclaw.asgi``); a search that
comes first simply waits on the same locks, as before. Failures are logged, never raised:
warming is an optimisation, not a step the server needs."""

from __future__ import annotations

import logging
import threading

from django.db import close_old_connections

from knowledge import embeddings, resident
from knowledge.words import query_words

log = logging.getLogger(__name__)


def warm_up() -> None:
    """Load the segmenter, the encoder (when ``embeddings.active()``) and the resident tables.

    Blocking; takes seconds on a cold process, milliseconds on a warm one."""
    query_words("表名怎么命名 how are tables named")
    if embeddings.active():
        embeddings.embed_query("warm up")
    try:
        resident.chunks()
        if embeddings.active():
            resident.vectors()
    finally:
        close_old_connections()


def _warm_logged() -> None:
    try:
        warm_up()
    except Exception:  # an optimisation only (module docstring)
        log.exception("could not warm the knowledge search; the first search loads it instead")


def warm_up_in_background() -> threading.Thread:
    """Start ``warm_up`` in a daemon thread and return it (already started)."""
    thread = threading.Thread(target=_warm_logged, name="knowledge-warm-up", daemon=True)
    thread.start()
    return thread
