"""Chinese read as words: jieba segmentation and part-of-speech tags (issue 27, seed 002 §6.2).

A requirement rule's Chinese word list matches whole segmented words, never substrings, so
"电话预约" (booking by phone) is not "电话号码" (a phone number). jieba ships its dictionary in
the wheel; nothing is fetched at run time. The tokenizer is private to this module, so the
words the rules add to it never change another caller's segmentation.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

import jieba
import jieba.posseg

jieba.setLogLevel(logging.WARNING)

_LOCK = threading.Lock()
_TOKENIZER = jieba.Tokenizer()
_TAGGER = jieba.posseg.POSTokenizer(_TOKENIZER)
_ADDED: set[str] = set()


@dataclass(frozen=True, slots=True)
class Word:
    """One segmented word: its ``text``, part-of-speech ``tag`` (jieba's ICTCLAS set: n noun,
    v verb, a adjective, d adverb, m numeral, q classifier, x punctuation...) and ``start``
    offset (characters) in the segmented text."""

    text: str
    tag: str
    start: int

    @property
    def end(self) -> int:
        return self.start + len(self.text)


def add_words(words: Iterable[str]) -> None:
    """Make each of ``words`` (2 characters or more) one word of the private dictionary, so
    a rule's multi-character term ("身份证号", "就诊记录") is segmented whole."""
    new = [w for w in words if len(w) > 1 and w not in _ADDED]
    if not new:
        return
    with _LOCK:
        for word in new:
            _TOKENIZER.add_word(word)
            _ADDED.add(word)
        _segment.cache_clear()


@lru_cache(maxsize=4096)
def _segment(text: str) -> tuple[Word, ...]:
    words, offset = [], 0
    with _LOCK:
        pairs = list(_TAGGER.cut(text))
    for pair in pairs:
        words.append(Word(pair.word, pair.flag, offset))
        offset += len(pair.word)
    return tuple(words)


def segment(text: str) -> tuple[Word, ...]:
    """``text`` as jieba words with their tags and offsets (the words concatenate to ``text``)."""
    return _segment(text)


def boundaries(words: Iterable[Word]) -> set[int]:
    """The offsets where a word starts or ends."""
    edges = set()
    for word in words:
        edges.add(word.start)
        edges.add(word.end)
    return edges


# Knowledge search (issue 32) segments with a tokenizer of its own that keeps jieba's default
# dictionary: the rules' added words above change over a process's life, and a chunk indexed
# in one process must be cut as the query is in another.
_SEARCH_LOCK = threading.Lock()
_SEARCH_TOKENIZER = jieba.Tokenizer()


def search_words(text: str) -> list[str]:
    """``text`` (a run of Chinese) cut for search: jieba's search mode, each word and also the
    dictionary words inside a long one ("数据库" -> "数据", "据库", "数据库"), so a query and a
    passage that segment a compound differently still share words. Spaces and punctuation
    are returned as they come (the caller drops them). Always jieba's default dictionary
    (never the rules' added words): the same text gives the same words in every process."""
    with _SEARCH_LOCK:
        return list(_SEARCH_TOKENIZER.cut_for_search(text))
