"""Several actions in one requirement (INCOSE GtWR R18 "single thought"; issue 27; seed 002
§6.7 逻辑严谨性): the ``actions`` detector of the requirement-quality engine.

A sentence (English: split at ; and ". "; Chinese: a clause, split at 。；，：) is cut into
list items at the row's ``counterpart`` separators (、 并 以及; commas, and, or); an item is an
action when it starts with a verb: for Chinese the first item holds a jieba verb (tag v) and
a later one starts with a word of the row's ``trigger`` words (jieba tags some otherwise:
更新, 标记; a noun such as 采集 in 采集地点 is no action there), after a preposition phrase
(在地图上标记); for English a ``trigger`` word (any inflection: issue, issues, issued) or any
word followed by a determiner or pronoun ("reschedule it", "books the"). ``SEVERAL`` actions
or more in one sentence make a finding quoting the sentence; ``exempt`` patterns (a role's
definition, the steps of one failure's handling) exempt the line.
"""

from __future__ import annotations

import re
from typing import Any

from teamclaw.workflows.chinese_words import segment

_SENTENCE_END = {"en": re.compile(r"[;；]|\.(?:\s|$)"), "zh": re.compile(r"[。；;！？!?，,：:]")}
_DETERMINERS = frozenset("a an the it them its their his her each all every any this that these those".split())
_ZH_SKIPPED = ("p", "f", "d", "c", "r")  # 在…上, 自动, 并, 其: words before an item's verb
SEVERAL = 3
"""How many actions in one sentence make it compound."""


def sentences(line: Any) -> list[tuple[int, int]]:
    """``(start, end)`` of each sentence of ``line.text``."""
    out, start = [], 0
    for match in _SENTENCE_END[line.language].finditer(line.text):
        out.append((start, match.start()))
        start = match.end()
    out.append((start, len(line.text)))
    return [(s, e) for s, e in out if e > s]


def _items(text: str, separators: list[re.Pattern[str]]) -> list[str]:
    parts = [text]
    for separator in separators:
        parts = [piece for part in parts for piece in separator.split(part)]
    return [p.strip() for p in parts if p and p.strip()]


def _english_action(item: str, verbs: frozenset[str]) -> bool:
    words = re.findall(r"[a-z][a-z'-]*", item.lower())
    if words and words[0] in ("then", "also"):
        words = words[1:]
    if not words:
        return False
    head = words[0]
    stems = {head, head.removesuffix("s"), head.removesuffix("es"), head.removesuffix("d"), head.removesuffix("ed")}
    return bool(stems & verbs) or (len(words) > 1 and words[1] in _DETERMINERS and head not in _DETERMINERS)


def _chinese_action(item: str, segment: Any, verbs: frozenset[str], first: bool) -> bool:
    """True when ``item`` starts with an action: the first item (subject and modal before the
    verb) holds a jieba verb; a later item starts with a ``verbs`` word, after a preposition
    phrase or adverb at most (在地图上标记地块, 并更新)."""
    words = [w for w in segment(item) if w.text.strip()]
    if first:
        return any(w.tag == "v" and len(w.text) > 1 for w in words)
    for word in words[:6]:
        if word.text in verbs:
            return True
        if not word.tag.startswith(_ZH_SKIPPED) and not (word.tag.startswith("n") and words[0].tag == "p"):
            return False
    return False


def action_count(line: Any, span: tuple[int, int], separators: list[re.Pattern[str]], verbs: frozenset[str]) -> int:
    """How many list items of ``line.text[span]`` start with an action (see the module docstring)."""
    items = _items(line.text[span[0] : span[1]], separators)
    if line.language == "zh":
        return sum(_chinese_action(item, segment, verbs, i == 0) for i, item in enumerate(items))
    return sum(_english_action(item, verbs) for item in items)
