"""The runtime's ``KnowledgeRetriever`` over the database (``Runtime(knowledge_retriever=...)``).

The runtime's loop never touches the ORM: each retrieval runs ``knowledge.search.search`` on a
worker thread (``asyncio.to_thread``), over the sources of the calling role and of the task's
project.
"""

from __future__ import annotations

import asyncio

from django.db import close_old_connections

from knowledge.search import search
from teamclaw.runtime.knowledge import KnowledgeHit


class DatabaseRetriever:
    """Retrieves passages from the knowledge sources in the database (module docstring)."""

    async def retrieve(self, *, role: str, project_id: str | None, query: str, k: int) -> list[KnowledgeHit]:
        return await asyncio.to_thread(retrieve, role, project_id, query, k)


def retrieve(role: str, project_id: str | None, query: str, k: int) -> list[KnowledgeHit]:
    """The best ``k`` passages for ``query`` among ``role``'s and ``project_id``'s sources."""
    close_old_connections()
    hits = search(query, roles=[role], projects=[project_id] if project_id else [], k=k)
    return [KnowledgeHit(h.chunk.source.name, h.chunk.text, h.score, h.chunk.heading) for h in hits]
