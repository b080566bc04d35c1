"""The words a knowledge chunk is indexed by and a query is searched with (issue 32, seed 003
KnowledgeContext; docs/architecture.md "Knowledge").

Both sides are cut by the same code, so they always meet on the same words:

- Chinese (every run of CJK ideographs): jieba's search mode
  (``teamclaw.workflows.chinese_words.search_words``, the segmenter of the review engine, with
  its default dictionary): each word and the dictionary words inside a long one, so
  "所有表名使用" is indexed as 所有, 表名, 使用 and "数据库" as 数据, 据库, 数据库;
- everything else: runs of letters and digits (``snake_case`` is ``snake``, ``case``),
  lower-cased and reduced to their Snowball English stem (``tables`` and ``table`` are
  ``tabl``, ``named`` and ``naming`` are ``name``). Scripts other than English keep their
  words as they are, but for the stemmer's suffixes.

``index_words`` gives every word of a text (a chunk's heading or body); ``query_words`` the
words of a query without its stop words (``stop_words.yaml``: question words and particles
such as 怎么, 什么, what, the), distinct, at most ``MAX_TERMS``. A chunk stores its words
joined by single spaces (``KnowledgeChunk.heading_words`` and ``text_words``), which is what
SQLite's FTS5 table and PostgreSQL's GIN index read (``knowledge.search``). ``WORDS_VERSION``
names this cutting: when it changes, ``manage.py index_knowledge_words`` (run by ``make run``)
cuts the stored chunks again.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

import snowballstemmer
import yaml

from knowledge.chunking import CJK
from teamclaw.workflows.chinese_words import search_words

WORDS_VERSION = 1
"""The version of the cutting above stored with each chunk (``KnowledgeChunk.words_version``).
Raise it whenever a change here would cut a stored text differently."""
MAX_TERMS = 64
"""Most words of one query (the first distinct ones): bounds the cost of long inputs."""
STOP_WORDS_FILE = Path(__file__).with_name("stop_words.yaml")

_CJK_RUN = re.compile(f"[{CJK}]+")
_PIECE = re.compile(rf"[{CJK}]+|[^\W_{CJK}]+", re.UNICODE)
_STEMMER = snowballstemmer.stemmer("english")


def load_stop_words(path: Path = STOP_WORDS_FILE) -> frozenset[str]:
    """Every word of every group of ``path`` (``stop_words.yaml``'s shape: ``groups: [{language,
    why, words: [...]}]``), lower-cased. Raises ``ValueError`` naming the group at fault when a
    group has no ``why`` or no words, or a word is not a string."""
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    words: set[str] = set()
    for n, group in enumerate(data.get("groups") or []):
        if not str(group.get("why") or "").strip() or not group.get("words"):
            raise ValueError(f"{path.name}: group {n + 1} needs a 'why' and 'words'")
        for word in group["words"]:
            if not isinstance(word, str):  # YAML reads a bare on, off, yes or no as a boolean
                raise ValueError(f"{path.name}: group {n + 1}: {word!r} is not a string (quote it)")
            words.add(word.lower())
    return frozenset(words)


STOP_WORDS = load_stop_words()


@lru_cache(maxsize=200_000)
def _stem(word: str) -> str:
    return str(_STEMMER.stemWord(word))


def _words(text: str) -> list[tuple[str, str]]:
    """``[(word as written, lower-cased), ...]`` of ``text`` in order (module docstring)."""
    out: list[tuple[str, str]] = []
    for piece in _PIECE.findall(text):
        if _CJK_RUN.fullmatch(piece):
            out += [(w, w) for w in search_words(piece) if _CJK_RUN.fullmatch(w)]
        else:
            out.append((piece, piece.lower()))
    return out


def _indexed(lowered: str) -> str:
    return lowered if _CJK_RUN.match(lowered) else _stem(lowered)


def index_words(text: str) -> list[str]:
    """Every word ``text`` is indexed by, in order (module docstring): jieba's words for
    Chinese, Snowball stems of the other words."""
    return [_indexed(lowered) for _, lowered in _words(text)]


def joined_words(text: str) -> str:
    """``index_words(text)`` joined by single spaces: what a chunk stores."""
    return " ".join(index_words(text))


def query_words(query: str) -> list[str]:
    """The distinct words ``query`` is searched with, in order, at most ``MAX_TERMS``: its
    ``index_words`` without the stop words, or with them when nothing else is left."""
    lowered = [lowered for _, lowered in _words(query)]
    kept = [w for w in lowered if w not in STOP_WORDS] or lowered
    return list(dict.fromkeys(_indexed(w) for w in kept))[:MAX_TERMS]
