"""The one bounded JSON parser of every entry point (``loads``) and its strict hooks: an
object may name a key only once, and ``NaN`` / ``Infinity`` are not JSON numbers, nor is a
number too large for a float (``1e400``, which Python would read as infinity).

``loads`` adds the limits RFC 8259 §9 lets a parser set: a size (``max_bytes``, chosen per
entry point) and a depth (``MAX_DEPTH``), and raises one error type, ``JsonRefused``, which
each protocol answers in its own shape (README "Input limits"). It imports nothing of
Django, so every layer (the runtime included) may use it."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

BOM = "\ufeff"
"""The byte order mark. ``loads`` ignores one at the start of the text, as RFC 8259 §8.1 lets
a parser do (a file saved by some Windows editors begins with it), at every entry point alike."""


class DuplicateKey(ValueError):
    """A JSON object names ``key`` twice (``str``: ``duplicate key 'key'``)."""

    def __init__(self, key: str) -> None:
        super().__init__(f"duplicate key {key!r}")
        self.key = key


def refuse_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``json.loads(object_pairs_hook=...)``: the object as a dict; DuplicateKey when a key repeats."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise DuplicateKey(key)
        out[key] = value
    return out


def refuse_constant(name: str) -> Any:
    """``json.loads(parse_constant=...)``: ValueError for ``NaN``, ``Infinity``, ``-Infinity``."""
    raise ValueError(f"{name} is not a JSON number")


def finite_float(text: str) -> float:
    """``json.loads(parse_float=...)``: the number as a float; ValueError when it is too large
    to be one (``1e400`` would be infinity, which JSON cannot spell back)."""
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text} is too large in magnitude for a JSON number (at most about 1.8e308)")
    return value


LARGEST_INTEGER = 2**63 - 1
"""Largest magnitude of an integer a YAML document (``capabilities.strict_yaml``: config,
skill-index.yaml, workflows) may hold: what a signed 64-bit column stores; every count,
version and duration fits."""

MAX_INTEGER_DIGITS = 4_300
"""Most digits of an integer in JSON: Python's int-conversion limit (``sys.int_info``). JSON
bodies may carry free-form values (a capability card's JSON Schema, a workflow's input), so
their integers are not held to LARGEST_INTEGER; each field's own check bounds what it uses."""


def too_large_integer_message(limit: int = LARGEST_INTEGER) -> str:
    """The one wording of a YAML integer refused for its size (a JSON one says the same
    first words: "the number is too large")."""
    return f"the number is too large: at most {limit} in magnitude"


def bounded_int(text: str) -> int:
    """``json.loads(parse_int=...)``: the integer; ValueError ("the number is too large")
    when it has more than MAX_INTEGER_DIGITS digits, counted before anything is converted."""
    if len(text.lstrip("-")) > MAX_INTEGER_DIGITS:
        raise ValueError(f"the number is too large: more than {MAX_INTEGER_DIGITS:,} digits")
    return int(text)


MAX_DEPTH = 64
"""Deepest nesting of objects and arrays (mappings and lists in YAML) any input may have:
every JSON entry point (``loads``) and every YAML document (``capabilities.strict_yaml``).
A JSON Schema inside a capability card needs about 10; 64 keeps every later walk of the
data (validation, rendering, ``json.dumps``) far from Python's recursion limit."""


def too_deep_message(limit: int = MAX_DEPTH) -> str:
    """The one wording of a depth refusal, for JSON and YAML alike."""
    return f"the document nests too deeply: more than {limit} levels"


def too_large_message(size: int, limit: int) -> str:
    """The one wording of a size refusal (``size`` and ``limit`` in bytes)."""
    return f"the document is {size:,} bytes; the limit is {limit:,} bytes"


class JsonRefused(ValueError):
    """Untrusted JSON text that ``loads`` refuses. The one error every entry point maps to its
    own protocol's error (REST 400 / 413, JSON-RPC -32700, a websocket close 4400, a config or
    skill document's 400).

    - ``reason``: ``syntax`` (not JSON), ``duplicate_key``, ``number`` (``NaN``, ``Infinity``,
      ``1e400``, an integer of more than ``MAX_INTEGER_DIGITS`` digits), ``encoding`` (not UTF-8, or a string
      or key holding an unpaired surrogate such as the escape ``\\ud800``, which no database,
      renderer or encoder can store), ``too_deep`` (past ``max_depth``) or ``too_large``
      (past ``max_bytes``);
    - ``message``: what is wrong, in English (the API's JSON stays English);
    - ``where``: ``line L, column C`` for a syntax error, else ``""``;
    - ``key``: the repeated key of a ``duplicate_key``, else None;
    - ``path``: where an unpaired surrogate is (``"field.sub[2]"``, ``""`` for the document
      itself), else None.

    ``str(exc)`` is ``"<where>: <message>"`` (or the message alone)."""

    def __init__(
        self, reason: str, message: str, *, where: str = "", key: str | None = None, path: str | None = None
    ) -> None:
        super().__init__(f"{where}: {message}" if where else message)
        self.reason = reason
        self.message = message
        self.where = where
        self.key = key
        self.path = path


SURROGATE = "holds an unpaired surrogate (not valid Unicode)"
"""Why a string or key with a lone surrogate (``\\ud800``) is refused."""


def has_surrogate(text: str) -> bool:
    """Whether ``text`` holds a lone surrogate (U+D800..U+DFFF), which UTF-8 cannot encode."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def text_path(value: Any, bad: Callable[[str], bool]) -> str | None:
    """Where a string (or a key) in parsed JSON ``value`` is ``bad`` (holds U+0000, an unpaired
    surrogate...): ``"field.sub[2]"`` (``""`` for the document itself), or None when none is.
    Walked without recursion."""
    stack: list[tuple[str, Any]] = [("", value)]
    while stack:
        path, item = stack.pop()
        if isinstance(item, str):
            if bad(item):
                return path
        elif isinstance(item, dict):
            for key, child in item.items():
                if isinstance(key, str) and bad(key):
                    return path
                stack.append((f"{path}.{key}" if path else str(key), child))
        elif isinstance(item, list):
            stack.extend((f"{path}[{index}]", child) for index, child in enumerate(item))
    return None


def _refuse_surrogates(text: str, data: Any) -> None:
    """JsonRefused (``encoding``) naming where ``data`` (parsed from ``text``) holds a lone
    surrogate. Only text that has one literally or spells an escape (``\\u``) is walked."""
    if "\\u" not in text and not has_surrogate(text):
        return
    path = text_path(data, has_surrogate)
    if path is not None:
        where = path or "the document"
        raise JsonRefused("encoding", f"{where} {SURROGATE}", path=path)


def nesting_depth(value: Any, limit: int = MAX_DEPTH) -> int:
    """How deeply objects and arrays nest in parsed JSON ``value`` (a scalar is 0, ``[]`` is
    1), walked without recursion; the walk stops once past ``limit`` (the result is then
    ``limit + 1``)."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, level = stack.pop()
        level += 1
        deepest = max(deepest, level)
        if deepest > limit:
            return deepest
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else ()
        stack.extend((child, level) for child in children if isinstance(child, dict | list))
    return deepest if isinstance(value, dict | list) else 0


def loads(raw: bytes | bytearray | str, *, max_bytes: int, max_depth: int = MAX_DEPTH, strict: bool = True) -> Any:
    """Parse untrusted JSON text: the one bounded parser of every entry point (REST, MCP, A2A,
    websockets, config import, skill and page forms).

    ``raw`` is UTF-8 bytes or text, at most ``max_bytes`` bytes; one leading BOM is ignored
    (RFC 8259 §8.1); objects and arrays nest at most ``max_depth`` levels; no string or key
    holds an unpaired surrogate (``\\ud800``, refused as ``encoding`` naming its ``path``),
    strict or not. The strict hooks above apply: a key may
    appear once per object, ``NaN`` / ``Infinity`` / ``1e400`` and integers of more than
    ``MAX_INTEGER_DIGITS`` digits are refused. Returns plain
    dicts, lists, str, int, float, bool and None. Raises JsonRefused, never RecursionError.
    ``strict=False`` leaves out the hooks (the last of two equal keys wins, ``NaN`` is a float),
    for answers the runtime validates itself and reports by JSON pointer (a plugin's, a model's);
    the size and depth bounds always apply.
    The size is checked before anything is parsed; depth after the C parser is done (it
    raises RecursionError far past ``max_depth``, which is reported the same way)."""
    size = len(raw) if isinstance(raw, bytes | bytearray) else len(raw.encode("utf-8", "surrogatepass"))
    if size > max_bytes:
        raise JsonRefused("too_large", too_large_message(size, max_bytes))
    try:
        text = raw.decode("utf-8-sig") if isinstance(raw, bytes | bytearray) else raw.removeprefix(BOM)
        hooks: dict[str, Any] = (
            {
                "object_pairs_hook": refuse_duplicate_keys,
                "parse_constant": refuse_constant,
                "parse_float": finite_float,
                "parse_int": bounded_int,
            }
            if strict
            else {}
        )
        data = json.loads(text, **hooks)
    except DuplicateKey as exc:
        raise JsonRefused("duplicate_key", f"{exc}: an object may name a key only once", key=exc.key) from None
    except json.JSONDecodeError as exc:
        raise JsonRefused("syntax", exc.msg, where=f"line {exc.lineno}, column {exc.colno}") from None
    except UnicodeDecodeError as exc:
        raise JsonRefused("encoding", f"the document is not UTF-8 text (byte {exc.start})") from None
    except RecursionError:
        raise JsonRefused("too_deep", too_deep_message(max_depth)) from None
    except ValueError as exc:  # the number hooks
        raise JsonRefused("number", str(exc)) from None
    if nesting_depth(data, max_depth) > max_depth:
        raise JsonRefused("too_deep", too_deep_message(max_depth))
    _refuse_surrogates(text, data)
    return data
