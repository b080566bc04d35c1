"""Contradictions that need a comparison: numeric bounds and actor exclusivity (issue 27;
seed 002 §6.7 逻辑严谨性). Two detectors of the requirement-quality engine, rules as data
(rows of ``rule_files/contradiction_compare.yaml``, vocabularies in its ``compare`` key):

- ``bounds``: each trigger pattern names its number by group: ``max``, ``min``, ``xmax``
  (under N: at most N-1), ``xmin`` (over N), ``low``+``high`` (a range allowed) or ``allow``
  (a quantity allowed: "can book 5"); an optional ``unit`` group names the quantity before the
  number ("aged"). The quantity's key is the unit or counted noun after the number (jieba
  words for Chinese: "3 个号" -> 个号; "21 years old" -> age by ``units``), with its period
  scope ("per day", 每天). Two statements of one key conflict when a limit allows what
  another forbids (at least 21 against 18 to 20 allowed; 最多 3 个 against 可以 5 个) or
  two limits of one direction differ. Both must share a content word besides the key, except
  a unit quantity (age) that one of them permits ("drivers aged 18 to 20 may rent").
- ``exclusive``: a trigger pattern with a ``cue`` group ("only", 仅限, 只有) followed by the
  actor and the action ("only inventory controllers can adjust stock levels"); another
  statement in which a different actor performs the same action (``counterpart`` words are
  the modals skipped between actor and verb). A generic access action (``access_verbs``:
  use, 使用, 注册) meets any other access action.

- ``negated``: a trigger pattern states that something is not done ("不收集这些信息",
  不对接其他系统, "does not collect personal data"); another line whose ``counterpart``
  pattern states it is done (填写姓名和手机号, 收到短信确认), in a clause without an
  ``exempt`` negation. When both clauses name ``fields`` (姓名, phone), they must share one;
  a generic object (这些信息, any personal data) meets every field.

Both lines get a finding with the same ``pair`` id, each quoting its own clause and its
message naming the other line (``{other}``). ``exempt`` patterns on a clause (a refusal or
negation: "cannot", 不得, 拒绝) make it no permission and no limit.
"""

from __future__ import annotations

import bisect
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import snowballstemmer

from teamclaw.workflows.quality_rules import Matcher, Rule

_CLAUSE_START = {"en": re.compile(r"[;；]|\.(?:\s|$)"), "zh": re.compile(r"[，,；;。！？!?]")}
_EN_WORD = re.compile(r"[a-z][a-z-]*")
_STEMMER = snowballstemmer.stemmer("english")
Pair = tuple[Any, tuple[int, int], Any, tuple[int, int]]
"""Two contradicting statements: a line, the span found on it, the other line and its span
(the engine turns each pair into two findings, ``quality_engine``)."""


def clause(line: Any, span: tuple[int, int]) -> str:
    """The clause of ``line.text`` around ``span`` (as the engine quotes it)."""
    ends = _clause_ends(line.text, line.language)
    after = bisect.bisect_left(ends, span[0])
    start = ends[after - 1] + 1 if after else 0
    last = bisect.bisect_left(ends, span[1])
    end = ends[last] if last < len(ends) else len(line.text)
    return line.text[start:end].strip() or line.text[span[0] : span[1]]


@lru_cache(maxsize=256)
def _clause_ends(text: str, language: str) -> tuple[int, ...]:
    """The offsets of the clause ends of ``text``, in order; cached, so a long line is
    scanned once for all the clauses quoted from it."""
    return tuple(m.start() for m in _CLAUSE_START[language].finditer(text))


def _any(matcher: Matcher, text: str, language: str) -> bool:
    """True when a pattern of ``matcher`` matches ``text`` (these rows use patterns only)."""
    return any(p.search(text) for p in matcher.patterns.get(language, ()))


def _content_words(line: Any, span: tuple[int, int], stop: frozenset[str]) -> set[str]:
    """Content words of the clause around ``span``: Chinese nouns and verbs of 2+ characters,
    English words of 4+ letters without a plural -s."""
    text = clause(line, span)
    if line.language == "zh":
        words = {w.text for w in line.words if w.text in text and len(w.text) > 1 and w.tag[:1] in ("n", "v")}
    else:
        words = {w.removesuffix("s") for w in _EN_WORD.findall(text.lower()) if len(w) > 3}
    return words - stop


@dataclass(frozen=True)
class Bound:
    """One numeric statement: the interval it allows (``low``..``high``), ``limit`` (a rule:
    at most / at least) or an allowance, the quantity ``key``, its period ``scope``, the
    ``line`` and ``span`` of the number."""

    line: Any
    span: tuple[int, int]
    low: float
    high: float
    limit: str  # "max", "min" or "" (an allowance)
    key: str
    unit: bool
    scope: str
    permissive: bool


def _vocabulary(context: dict[str, Any], language: str, name: str) -> list[str]:
    return [str(w).lower() for w in context["compare"].get(name, {}).get(language, ())]


def _units(context: dict[str, Any], language: str) -> dict[str, str]:
    """``{unit word: canonical quantity}`` of the ``units`` vocabulary."""
    out = {}
    for canonical, words in context["compare"].get("units", {}).items():
        for word in words.get(language, ()):
            out[str(word).lower()] = canonical
    return out


def _words_after(line: Any, end: int) -> list[str]:
    """The first two words after offset ``end`` of the clause (jieba words for Chinese)."""
    rest = line.text[end:]
    stop = _CLAUSE_START[line.language].search(rest)
    rest = rest[: stop.start()] if stop else rest
    if line.language == "zh":
        return [w.text for w in line.words if w.start >= end and w.end <= end + len(rest) and w.text.strip()][:2]
    return _EN_WORD.findall(rest.lower())[:2]


def _key(line: Any, end: int, unit: str, context: dict[str, Any]) -> tuple[str, bool] | None:
    """``(key, unit)`` of the quantity whose number ends at ``end``; None for a relative
    amount ("2 more", 额外), a time reference ("2 hours before", 24 小时前) or no noun."""
    language = line.language
    units = _units(context, language)
    if unit:
        return units.get(unit.strip().lower(), unit.strip().lower()), True
    words = _words_after(line, end)
    relative, modifiers = _vocabulary(context, language, "relative"), _vocabulary(context, language, "modifiers")
    before = line.text[max(0, end - 16) : end].lower()
    if not words or words[0] in relative or any(r in before for r in relative):
        return None
    if len(words) > 1 and words[1] in _vocabulary(context, language, "time_references"):
        return None
    if language == "en" and words[0] in modifiers and len(words) > 1:
        words = words[1:]
    for candidate in (" ".join(words), words[0]):
        if candidate in units:
            return units[candidate], True
    joiner = "" if language == "zh" else " "
    head = words[0].removesuffix("s") if language == "en" else joiner.join(words)
    return head, False


def _scope(line: Any, start: int, end: int, context: dict[str, Any]) -> str:
    """The period the clause counts per (``scopes`` vocabulary: "per day", 每天), "" if none."""
    text = clause(line, (start, end)).lower()
    for word in _vocabulary(context, line.language, "scopes"):
        if word in text:
            return word
    return ""


def _interval(groups: dict[str, str]) -> tuple[float, float, str] | None:
    if groups.get("low") and groups.get("high"):
        low, high = sorted((float(groups["low"]), float(groups["high"])))
        return low, high, ""
    kinds = {
        "max": lambda n: (-math.inf, n, "max"),
        "xmax": lambda n: (-math.inf, n - 1, "max"),
        "min": lambda n: (n, math.inf, "min"),
        "xmin": lambda n: (n + 1, math.inf, "min"),
        "allow": lambda n: (n, n, ""),
    }
    for name, make in kinds.items():
        if groups.get(name):
            return make(float(groups[name]))
    return None


def _number_span(match: re.Match[str]) -> tuple[int, int]:
    groups = match.groupdict()
    named = [match.span(g) for g in ("high", "max", "xmax", "min", "xmin", "allow") if groups.get(g)]
    return named[0] if named else match.span()


def bounds(rule: Rule, line: Any, context: dict[str, Any]) -> Iterator[Bound]:
    """Every numeric statement of ``line`` that ``rule``'s trigger patterns find."""
    permits = _vocabulary(context, line.language, "permissive")
    for pattern in rule.trigger.patterns.get(line.language, ()):
        for match in pattern.finditer(line.text):
            groups = {k: v for k, v in match.groupdict().items() if v}
            interval = _interval(groups)
            span = _number_span(match) if interval else None
            if interval is None or span is None or _any(rule.exempt, clause(line, span), line.language):
                continue
            key = _key(line, span[1], groups.get("unit", ""), context)
            if key:
                scope = _scope(line, match.start(), span[1], context)
                text = f" {clause(line, span).lower()} "
                permissive = any(f" {w} " in text or (line.language == "zh" and w in text) for w in permits)
                yield Bound(
                    line, (match.start(), span[1]), interval[0], interval[1], interval[2], *key, scope, permissive
                )


def conflict(a: Bound, b: Bound) -> bool:
    """True when ``a`` and ``b`` cannot both hold (see the module docstring)."""
    if not a.limit and not b.limit:
        return False
    if a.limit and b.limit:
        if a.limit == b.limit:
            return (a.low, a.high) != (b.low, b.high)
        return a.high < b.low or b.high < a.low
    limit, allowed = (a, b) if a.limit else (b, a)
    return allowed.low < limit.low or allowed.high > limit.high


def _same_quantity(a: Bound, b: Bound, stop: frozenset[str]) -> bool:
    """True when ``a`` and ``b`` count one thing: the same key and scope, and either a unit
    quantity (age) that one of them permits ("aged 18 to 20 can rent"), or a content word of
    both clauses besides the key (预约 in "最多预约 3 个号" and "可以预约 5 个号")."""
    if a.line.number == b.line.number or a.key != b.key or a.scope != b.scope:
        return False
    if a.unit and (a.permissive or b.permissive):
        return True
    stop = stop | {a.key, *a.key.split()}
    return bool(_content_words(a.line, a.span, stop) & _content_words(b.line, b.span, stop))


def bounds_pairs(rule: Rule, lines: list[Any], context: dict[str, Any]) -> list[Pair]:
    """The conflicting pairs of a ``bounds`` row, once a pair of lines."""
    stop = frozenset(context.get("stopwords", ()))
    found = [bound for line in lines for bound in bounds(rule, line, context)]
    out: list[Pair] = []
    seen = set()
    for i, a in enumerate(found):
        for b in found[i + 1 :]:
            pair = (min(a.line.number, b.line.number), max(a.line.number, b.line.number))
            if pair in seen or not _same_quantity(a, b, stop) or not conflict(a, b):
                continue
            seen.add(pair)
            out.append((a.line, a.span, b.line, b.span))
    return out


@dataclass(frozen=True)
class Exclusive:
    """An "only X can do Y" statement: the ``actor`` words, the ``action`` content words,
    whether the action is a generic access (use, 使用, 注册), and the ``objects`` the action
    is done to (content words; empty when the line names none)."""

    line: Any
    span: tuple[int, int]
    actor: frozenset[str]
    action: frozenset[str]
    access: bool
    objects: frozenset[str] = frozenset()


def _actor_and_action(rule: Rule, line: Any, start: int, end: int) -> tuple[list[str], list[str]]:
    """The words of ``line.text[start:end]`` before the action (the actor) and from it on (the
    action). A modal (``counterpart`` words: can, 可以) ends the actor and is skipped, even
    after a verb inside the actor ("为其服务的工作人员可以查看": the actor serves, the action is
    查看); without a modal, in Chinese the first verb (jieba tag v) starts the action; in English without a modal the
    first word is the actor ("Pickers correct the stock level")."""
    modals = set(rule.counterpart.words.get(line.language, ()))
    if line.language == "zh":
        tokens = [(w.text, w.tag) for w in line.words if start <= w.start and w.end <= end and w.text.strip()]
    else:
        tokens = [(w, "") for w in _EN_WORD.findall(line.text[start:end].lower()) if w not in ("the", "a", "an")]
    actor: list[str] = []
    action: list[str] = []
    modal = next((i for i, (text, _) in enumerate(tokens) if text in modals), None)
    if modal is not None and modal > 0:  # "为其服务的工作人员可以查看": the modal ends the actor, not 服务
        return [t for t, _ in tokens[:modal]], [t for t, _ in tokens[modal + 1 :] if t not in modals]
    for text, tag in tokens:
        if text in modals:
            if actor:
                action.append("")
            continue
        (action if action or tag.startswith("v") else actor).append(text)
    if line.language == "en" and not action and len(actor) > 1:
        actor, action = actor[:1], actor[1:]
    return actor, [w for w in action if w]


def exclusives(rule: Rule, line: Any, context: dict[str, Any]) -> Iterator[Exclusive]:
    """Every "only X can do Y" statement of ``line`` found by ``rule``'s trigger."""
    access = set(_vocabulary(context, line.language, "access_verbs"))
    for pattern in rule.trigger.patterns.get(line.language, ()):
        for match in pattern.finditer(line.text):
            if "cue" not in pattern.groupindex or not match.group("cue"):
                continue
            text = clause(line, match.span("cue"))
            end = line.text.find(text) + len(text)
            actor, action = _actor_and_action(rule, line, match.end("cue"), end)
            if actor and action:
                words = _content(line, action, context) - _PRONOUNS
                objects = (_content(line, action[1:], context) - _PRONOUNS) or _topic(line, context)
                yield Exclusive(line, match.span(), _heads(actor), words, bool(access & set(action)), objects)


_TOPIC_END = ("d", "p", "c", "u", "x")
"""jieba tags that end a Chinese line's leading noun phrase (仅, 由, 和, 的, punctuation)."""
_EN_TOPIC_END = {"is", "are", "was", "were", "be", "must", "shall", "will", "can", "may", "only", "should"}
_PRONOUNS = {"them", "it", "this", "these", "those", "that", "their", "they", "its", "此", "其", "它们", "这些"}


def _topic(line: Any, context: dict[str, Any]) -> frozenset[str]:
    """The content words of the noun phrase that opens ``line`` (after its requirement id):
    what a bare "只有 X 能查看" / "only X may view them" is about ("接送人正面照片仅用于…")."""
    if line.language == "en":
        first = next(_clauses(line))
        tokens = [(w, "") for w in _EN_WORD.findall(line.text[first[0] : first[1]].lower())]
    else:
        tokens = [(w.text, w.tag) for w in line.words if w.text.strip()]
        while tokens and tokens[0][1] in ("eng", "m", "x"):
            tokens.pop(0)
    phrase: list[str] = []
    for text, tag in tokens:
        if text in _EN_TOPIC_END or (tag and tag.startswith(_TOPIC_END)):
            break
        phrase.append(text)
    return _content(line, phrase, context)


def _heads(words: list[str]) -> frozenset[str]:
    return frozenset(w.removesuffix("s") for w in words if w not in ("the", "a", "an"))


def _content(line: Any, words: list[str], context: dict[str, Any]) -> frozenset[str]:
    stop = set(context.get("stopwords", ())) | {"the", "a", "an", "of", "in", "on", "for", "to", "and", "or"}
    if line.language == "en":
        return frozenset(w.removesuffix("s") for w in words if len(w) > 3 and w not in stop)
    return frozenset(w for w in words if len(w) > 1 and w not in stop)


def _clauses(line: Any) -> Iterator[tuple[int, int]]:
    start = 0
    for match in _CLAUSE_START[line.language].finditer(line.text):
        yield start, match.start()
        start = match.end()
    yield start, len(line.text)


def _other_actor(rule: Rule, only: Exclusive, line: Any, context: dict[str, Any]) -> tuple[int, int] | None:
    """The span of a clause of ``line`` in which an actor other than ``only.actor`` performs
    ``only``'s action (affirmatively), or None."""
    access = set(_vocabulary(context, line.language, "access_verbs"))
    actor_stop = set(_vocabulary(context, line.language, "actor_stop"))
    for start, end in _clauses(line):
        text = line.text[start:end]
        if _any(rule.exempt, text, line.language) or _any(rule.trigger, text, line.language):
            continue
        actor, action = _actor_and_action(rule, line, start, end)
        heads = _heads(actor)
        if not heads or heads & only.actor or (actor and actor[0] in actor_stop) or not action:
            continue
        words = _content(line, action, context)
        if only.objects and not words & only.objects:
            continue  # the same action on another object ("查看照片" is not "查看考勤记录")
        if not only.objects and not only.access and _content(line, action[1:], context):
            continue  # "只有本人…可以查看" (what?) is not "医生可以查看预约名单": no same object to compare
        shared = len(words & only.action) >= min(2, len(only.action))
        if (only.access and access & set(action)) or (only.action and shared):
            return start, end
    return None


def exclusive_pairs(rule: Rule, lines: list[Any], context: dict[str, Any]) -> list[Pair]:
    """The pairs of an ``exclusive`` row: the "only" line and a line where another actor
    does the same, once a pair of lines."""
    out: list[Pair] = []
    seen = set()
    for line in lines:
        for only in exclusives(rule, line, context):
            for other in lines:
                pair = (min(line.number, other.number), max(line.number, other.number))
                if other.number == line.number or pair in seen:
                    continue
                span = _other_actor(rule, only, other, context)
                if span:
                    seen.add(pair)
                    out.append((line, only.span, other, span))
    return out


def _fields(text: str, context: dict[str, Any], language: str) -> set[str]:
    """The ``fields`` words (姓名, 手机号, phone) named in ``text``."""
    lowered = text.lower()
    return {w for w in _vocabulary(context, language, "fields") if w in lowered}


def _affirmed(rule: Rule, line: Any, fields: set[str], context: dict[str, Any]) -> tuple[int, int] | None:
    """The span of a ``counterpart`` hit of ``line`` in a clause that is no negation itself
    (neither a trigger nor an ``exempt`` hit) and, when both name fields, shares one."""
    language = line.language
    for pattern in rule.counterpart.patterns.get(language, ()):
        for match in pattern.finditer(line.text):
            text = clause(line, match.span())
            if _any(rule.trigger, text, language) or _any(rule.exempt, text, language):
                continue
            theirs = _fields(text, context, language)
            if not fields or not theirs or fields & theirs:
                return match.span()
    return None


def negated_pairs(rule: Rule, lines: list[Any], context: dict[str, Any]) -> list[Pair]:
    """The pairs of a ``negated`` row: a line saying a thing is not done and another saying
    it is (see the module docstring), once a pair of lines."""
    out: list[Pair] = []
    seen = set()
    for line in lines:
        for pattern in rule.trigger.patterns.get(line.language, ()):
            for match in pattern.finditer(line.text):
                fields = _fields(clause(line, match.span()), context, line.language)
                for other in lines:
                    pair = (min(line.number, other.number), max(line.number, other.number))
                    if other.number == line.number or pair in seen:
                        continue
                    span = _affirmed(rule, other, fields, context)
                    if span:
                        seen.add(pair)
                        out.append((line, match.span(), other, span))
    return out


_EN_SKIPPED = frozenset(
    "be been being get gets got ever longer further any the a an it them is are was were have has had".split()
)
_DEFINITION_LINE = {"en": re.compile(r"^[A-Z][A-Za-z -]{0,30}:\s"), "zh": re.compile(r"^[^，。：；\d]{1,12}：")}
"""A glossary or role line ("Employee: can view ...; cannot edit the plan"): what one role may
do beside another is a permission split, not a contradiction."""
_JOINERS = {"en": frozenset({"or", "and", ","}), "zh": frozenset({"或", "和", "及", "、", "或者", "与"})}


@lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    """The Snowball stem of ``word`` (lower-cased); cached: a document stems the same words
    for every pair of lines it compares."""
    return _STEMMER.stemWord(word.lower())


def _tokens(line: Any, start: int, end: int) -> list[str]:
    """The words of ``line.text[start:end]`` (jieba words for Chinese, lower-case English
    words and commas), blanks left out."""
    if line.language == "zh":
        return [w.text for w in line.words if start <= w.start and w.end <= end and w.text.strip()]
    return re.findall(r"[a-z][a-z'-]*|,", line.text[start:end].lower())


def _negated_actions(line: Any, cue_end: int, clause_end: int) -> list[str]:
    """The action a prohibition denies: the first word after the cue (English: auxiliaries
    skipped) and the words coordinated with it ("changed or cancelled", 退回或更换)."""
    tokens = _tokens(line, cue_end, clause_end)
    if line.language == "en":
        tokens = [t for t in tokens if t not in _EN_SKIPPED or t == ","]
    actions: list[str] = []
    joined = True
    for token in tokens:
        if token in _JOINERS[line.language]:
            joined = True
            continue
        if not joined:
            break
        actions.append(token)
        joined = False
    return actions


def _action_keys(words: list[str], language: str, groups: dict[str, set[str]]) -> set[str]:
    """Canonical keys of action ``words``: English stems, the ``action_groups`` each word
    belongs to (退换 -> 退 and 换)."""
    keys = set()
    for word in words:
        key = _stem(word) if language == "en" else word
        keys.add(key)
        keys.update(groups.get(key, ()))
    return keys


def _action_groups(context: dict[str, Any], language: str) -> dict[str, set[str]]:
    """``{word (English: its stem): groups}`` of the ``action_groups`` vocabulary (a word may
    sit in several: 退换 is a refund and an exchange); built once a document and language
    (kept in ``context``)."""
    cache: dict[str, dict[str, set[str]]] = context.setdefault("_action_groups", {})
    if language not in cache:
        cache[language] = _build_action_groups(context, language)
    return cache[language]


def _build_action_groups(context: dict[str, Any], language: str) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for name, words in context["compare"].get("action_groups", {}).items():
        for word in words.get(language, ()):
            out.setdefault(_stem(str(word)) if language == "en" else str(word), set()).add(name)
    return out


def _qualified(line: Any, start: int, end: int, context: dict[str, Any]) -> bool:
    """True when the prohibition clause ``line.text[start:end]`` (with the clause before it)
    limits an amount or a scope ("cannot book more than 3", 不能查看其他幼儿的记录) or holds
    only under a condition ("if ... cannot", 缺任一项时不能提交): a bound or a validation rule,
    not a yes/no (``qualifiers`` vocabulary)."""
    before = line.text[:start]
    cut = max((m.end() for m in _CLAUSE_START[line.language].finditer(before[:-1])), default=0)
    text = line.text[cut:end].lower()
    if re.search(r"\d", text):
        return True
    words = _vocabulary(context, line.language, "qualifiers")
    if line.language == "zh":
        return any(w in text for w in words)
    return any(re.search(rf"(?<![a-z]){re.escape(w)}(?![a-z])", text) for w in words)


def _prohibitions(rule: Rule, line: Any, context: dict[str, Any]) -> Iterator[tuple[tuple[int, int], set[str]]]:
    """``(span, action keys)`` of each prohibition cue of ``line`` (``trigger`` patterns)."""
    groups = _action_groups(context, line.language)
    for start, end in _clauses(line):
        for pattern in rule.trigger.patterns.get(line.language, ()):
            found = pattern.search(line.text, start, end)
            if found and not _qualified(line, start, end, context):
                words = _negated_actions(line, found.end(), end)
                if words:
                    yield (start, end), _action_keys(words, line.language, groups)
                break


def _permission(rule: Rule, line: Any, actions: set[str], context: dict[str, Any]) -> tuple[int, int] | None:
    """The span of a clause of ``line`` that allows or grants one of ``actions``: a
    ``counterpart`` cue (can, receive, 可以, 直接) with the action among the next four words,
    in a clause without a prohibition cue or an ``exempt`` negation; or None."""
    language = line.language
    groups = _action_groups(context, language)
    for start, end in _clauses(line):
        text = line.text[start:end]
        if _any(rule.trigger, text, language) or _any(rule.exempt, text, language):
            continue
        for pattern in rule.counterpart.patterns.get(language, ()):
            for cue in pattern.finditer(line.text, start, end):
                words = [w for w in _tokens(line, cue.end(), end) if w != ","][:4]
                if _affirms(words, actions, language, groups):
                    return start, end
    return None


def _affirms(words: list[str], actions: set[str], language: str, groups: dict[str, set[str]]) -> bool:
    """True when ``words`` name one of ``actions`` (a Chinese one-character action also as
    the start of a word: 退 in 退还)."""
    if _action_keys(words, language, groups) & actions:
        return True
    return language == "zh" and any(len(a) == 1 and w.startswith(a) for a in actions for w in words)


def _share_subject(a: Any, b: Any, actions: set[str], stop: frozenset[str], cache: dict[int, frozenset[str]]) -> bool:
    """True when ``a`` and ``b`` sit under one heading or share a content word that is not
    one of the compared ``actions``."""
    if a.section and a.section == b.section:
        return True
    return bool((_subject_words(a, stop, cache) & _subject_words(b, stop, cache)) - actions)


def _subject_words(line: Any, stop: frozenset[str], cache: dict[int, frozenset[str]]) -> frozenset[str]:
    """The content words of the whole of ``line`` (English: stems), kept in ``cache`` by line
    number: ``opposed_pairs`` compares each line of a document with every other."""
    if line.number not in cache:
        found = _content_words(line, (0, len(line.text)), stop)
        cache[line.number] = frozenset(_stem(w) if line.language == "en" else w for w in found)
    return cache[line.number]


def opposed_pairs(rule: Rule, lines: list[Any], context: dict[str, Any]) -> list[Pair]:
    """The pairs of an ``opposed`` row: a line forbidding an action ("cannot be refunded",
    不得入室) and another line, about the same subject, in which that action is done or
    allowed ("receive a full refund", 可直接入室维修); once a pair of lines. Glossary and role
    lines (``_DEFINITION_LINE``) are left out."""
    stop = frozenset(context.get("stopwords", ()))
    out: list[Pair] = []
    seen = set()
    subjects: dict[int, frozenset[str]] = {}
    lines = [line for line in lines if not _DEFINITION_LINE[line.language].search(line.text)]
    for line in lines:
        for span, actions in _prohibitions(rule, line, context):
            for other in lines:
                pair = (min(line.number, other.number), max(line.number, other.number))
                if other.number == line.number or pair in seen:
                    continue
                if not _share_subject(line, other, actions, stop, subjects):
                    continue
                found = _permission(rule, other, actions, context)
                if found:
                    seen.add(pair)
                    out.append((line, span, other, found))
    return out
