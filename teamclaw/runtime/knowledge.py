"""What a model-backed agent knows (seed 003 ``KnowledgeContext``): the runtime's port.

The runtime holds no documents. A ``KnowledgeRetriever`` (the knowledge app's
``knowledge.retrieval.DatabaseRetriever``, given as ``Runtime(knowledge_retriever=...)``)
answers ``retrieve``: the best passages for a query among the sources of the calling role,
the card's skill and the task's project. ``ExecutionCall.retrieve_knowledge`` asks it once
per capability call (every executor: ``offline`` before its handler, ``openai`` before the
first model request, the workflows' model handlers through ``ModelSession.system_prompt``),
with the call's params as the query (``query_text``), and records exactly what came back in
the context's ``knowledge`` (so snapshots, the inspector and replay show it per call). A
retriever that knows there is no source at all (``nothing_to_search``: a team without
documents) is not asked, and nothing is recorded: there was no search to show;
``knowledge_text`` is what the system prompt gets (the ``knowledge`` template variable).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

DEFAULT_K = 3
"""Passages retrieved for each model-backed capability call."""
MAX_QUERY_CHARS = 2000
"""Longest query sent to the retriever (characters of the params' text)."""
MAX_RECORDED = 50
"""Retrievals kept in a context's ``knowledge`` (the oldest are dropped)."""


@dataclass(frozen=True, slots=True)
class KnowledgeHit:
    """One retrieved passage: the ``source`` document's name, the ``chunk``'s text, its
    ``heading`` and its ``score`` (higher is better)."""

    source: str
    chunk: str
    score: float
    heading: str = ""

    def state(self) -> dict[str, Any]:
        return {"source": self.source, "heading": self.heading, "chunk": self.chunk, "score": self.score}


class KnowledgeRetriever(Protocol):
    """Finds passages for a query (module docstring).

    A retriever may also offer ``nothing_to_search() -> bool``: True when it knows there is
    no source at all to search right now (a team without documents); the call then asks
    nothing and records no retrieval. It is answered on the loop, without waiting; one that
    raises is logged and the call retrieves as usual. Optional, so retrievers written before
    it keep working."""

    async def retrieve(
        self, *, role: str, project_id: str | None, query: str, k: int, skill_id: str | None = None
    ) -> list[KnowledgeHit]:
        """The best ``k`` passages for ``query`` among the sources of ``role``, of
        ``skill_id`` (the card's skill; None: none) and of ``project_id`` (None: no
        project), best first."""


def query_text(params: Any) -> str:
    """The text of a call's params: every string in them (keys left out), in order, joined
    by newlines, cut at ``MAX_QUERY_CHARS``."""
    parts: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, str):
            if value.strip():
                parts.append(value.strip())
        elif isinstance(value, dict):
            for item in value.values():
                walk(item)
        elif isinstance(value, list | tuple):
            for item in value:
                walk(item)

    walk(params)
    return "\n".join(parts)[:MAX_QUERY_CHARS]


def knowledge_text(hits: list[KnowledgeHit]) -> str:
    """The system prompt's knowledge section: each passage under its source's name."""
    if not hits:
        return ""
    lines = ["Knowledge (passages from the team's documents; use them when they are relevant):"]
    for n, hit in enumerate(hits, 1):
        where = f"{hit.source} / {hit.heading}" if hit.heading else hit.source
        lines.append(f"[{n}] {where}:\n{hit.chunk}")
    return "\n\n".join(lines)
