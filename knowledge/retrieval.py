"""The runtime's ``KnowledgeRetriever`` over the database (``Runtime(knowledge_retriever=...)``).

The runtime's loop never touches the ORM: each retrieval runs ``knowledge.search.search`` on a
worker thread (``asyncio.to_thread``), over the sources of the calling role, of the card's
skill and of the task's project.

Every capability call retrieves, and most teams have no knowledge source at all; a retrieval
then costs a worker thread's hop and a database connection (about 1.5 ms of CPU on SQLite)
for nothing. ``SOURCE_PRESENCE`` remembers that the database held no source: for
``PRESENCE_TTL_S`` after such a look, a call retrieves nothing without leaving the loop, and
records no retrieval (``DatabaseRetriever.nothing_to_search``). A
source added in this process ends that at once (``post_save``, ``knowledge.apps``); one added
through another process is seen within ``PRESENCE_TTL_S``.
"""

from __future__ import annotations

import asyncio
import threading
import time

from django.db import close_old_connections

from knowledge.models import KnowledgeSource
from knowledge.search import search
from teamclaw.runtime.knowledge import KnowledgeHit

PRESENCE_TTL_S = 2.0
"""How long (s) a look that found no knowledge source at all is trusted."""


class SourcePresence:
    """Whether the database held any knowledge source when last looked (module docstring)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._empty_at: float | None = None  # monotonic time of the last look that found none

    def known_empty(self) -> bool:
        """True when a look less than PRESENCE_TTL_S ago found no source (and none was added since)."""
        with self._lock:
            return self._empty_at is not None and time.monotonic() - self._empty_at < PRESENCE_TTL_S

    def note(self, present: bool) -> None:
        """Record what a look found (``present``: some source exists)."""
        with self._lock:
            self._empty_at = None if present else time.monotonic()

    def source_added(self, **_signal: object) -> None:
        """A source was saved in this process (``post_save`` receiver): look again next time."""
        self.note(True)


SOURCE_PRESENCE = SourcePresence()


class DatabaseRetriever:
    """Retrieves passages from the knowledge sources in the database (module docstring)."""

    def nothing_to_search(self) -> bool:
        """True while ``SOURCE_PRESENCE`` trusts a look that found no source at all."""
        return SOURCE_PRESENCE.known_empty()

    async def retrieve(
        self, *, role: str, project_id: str | None, query: str, k: int, skill_id: str | None = None
    ) -> list[KnowledgeHit]:
        if SOURCE_PRESENCE.known_empty():
            return []
        return await asyncio.to_thread(retrieve, role, project_id, query, k, skill_id)


def retrieve(role: str, project_id: str | None, query: str, k: int, skill_id: str | None = None) -> list[KnowledgeHit]:
    """The best ``k`` passages for ``query`` among the sources of ``role``, of ``skill_id``
    and of ``project_id`` (``knowledge.search.search``); [] at once when the database holds no
    source at all (noted in ``SOURCE_PRESENCE``)."""
    close_old_connections()
    present = KnowledgeSource.objects.exists()
    SOURCE_PRESENCE.note(present)
    if not present:
        return []
    hits = search(
        query,
        roles=[role],
        projects=[project_id] if project_id else [],
        skills=[skill_id] if skill_id else [],
        k=k,
    )
    return [KnowledgeHit(h.chunk.source.name, h.chunk.text, h.score, h.chunk.heading) for h in hits]
