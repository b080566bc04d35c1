"""Strict, safe YAML reading: the product's one YAML policy, for every document an operator
supplies (skill-index.yaml, workflows, the config import through ``capabilities.safe_yaml``).

PyYAML's ``safe_load`` never runs code, but it still surprises: YAML 1.1 reads ``NO``,
``on`` and ``y`` as booleans, ``0755`` as octal, ``1:20`` as 80, ``1.10`` as the number 1.1,
silently keeps the last of two equal keys, and expands aliases (a "billion laughs" document
is a few hundred bytes). Seed 003's skill files are written by people, so ``read_yaml``:

- parses with PyYAML's safe parser into a node tree only (nothing is constructed by tag);
- resolves plain scalars by the YAML 1.2 core schema (``true``/``false``, ``null``/``~``,
  decimal numbers), so ``NO``, ``on``, ``0755`` and ``1:20`` stay the text that was written,
  and reports each of those as a ``notice`` (YAML 1.1 tools would read them differently);
- reports a number whose text does not survive the conversion (``1.10`` -> 1.1, ``1e3``)
  and remembers every plain scalar that became a non-string, so a schema error at that path
  can say "quote it";
- refuses anchors and aliases, merge keys, duplicate keys, non-scalar keys, explicit tags
  other than the YAML core ones (``!!python/object`` included), more than one document,
  nesting deeper than ``MAX_DEPTH`` (``teamclaw.strict_json``'s, the JSON parser's: one
  limit and one wording for both), and documents over the caller's byte limit.

Every refusal is a ``YamlProblem`` with a dotted path (``skill.capabilities[2].type``) and a
1-based line, all of them at once where the parser lets us go on.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

import yaml

from teamclaw.errors import DomainError
from teamclaw.strict_json import (
    LARGEST_INTEGER,
    MAX_DEPTH,
    too_deep_message,
    too_large_integer_message,
    too_large_message,
)

_CORE = "tag:yaml.org,2002:"
_PLAIN = "tag:teamclaw,2026:plain"
_ALLOWED_TAGS = {f"{_CORE}{name}" for name in ("str", "int", "float", "bool", "null", "map", "seq")}

# YAML 1.2 core schema (https://yaml.org/spec/1.2.2/#1032-tag-resolution)
_NULL = re.compile(r"^(?:~|null|Null|NULL|)$")
_BOOL = re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$")
_INT = re.compile(r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$")
_FLOAT = re.compile(
    r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
)

# What YAML 1.1 (PyYAML's default resolver) reads differently from the 1.2 core schema.
_YAML11_BOOL = re.compile(r"^(?:y|Y|yes|Yes|YES|n|N|no|No|NO|on|On|ON|off|Off|OFF)$")
_YAML11_TRUE = {"y", "yes", "on"}
_LEADING_ZERO = re.compile(r"^[-+]?0[0-9]+$")
TOO_LARGE = too_large_integer_message()
"""An integer past LARGEST_INTEGER (5,000 nines, past Python's 4,300-digit int-conversion
limit, or ``0xfff...``) is refused naming its line instead of being read."""
_SEXAGESIMAL = re.compile(r"^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$")
_UNDERSCORE_NUMBER = re.compile(r"^[-+]?[0-9][0-9_]*_[0-9_]*(?:\.[0-9_]*)?$")


@dataclass(frozen=True, slots=True)
class YamlProblem:
    """One problem: ``path`` (dotted, '' for the whole document), ``line`` (1-based, 0 when
    unknown) and ``message`` (what is wrong and how to fix it)."""

    path: str
    line: int
    message: str

    def text(self) -> str:
        """``"line 4: skill.version: ..."`` for display."""
        where = f"line {self.line}" if self.line else ""
        return ": ".join(part for part in (where, self.path, self.message) if part)


class YamlError(DomainError, ValueError):
    """The document cannot be read (400); ``problems`` lists every reason found, and
    ``errors`` is them by path (``as_errors``). The message counts them, naming the document
    as the subclass's ``document`` says."""

    document = "the document"

    def __init__(self, problems: list[YamlProblem]) -> None:
        self.problems = problems
        super().__init__(f"{self.document} has {len(problems)} problem(s)", errors=self.as_errors())

    def __str__(self) -> str:
        return "; ".join(p.text() for p in self.problems)

    def as_errors(self) -> dict[str, list[str]]:
        """``{path: [reason (line N)]}`` in the API's error shape (``""`` -> ``document``)."""
        out: dict[str, list[str]] = {}
        for problem in self.problems:
            reason = f"{problem.message} (line {problem.line})" if problem.line else problem.message
            out.setdefault(problem.path or "document", []).append(reason)
        return out


@dataclass(frozen=True, slots=True)
class ScalarSource:
    """Where a plain scalar that became a non-string came from: its text and line."""

    text: str
    line: int
    value: Any


@dataclass(slots=True)
class YamlDocument:
    """A strictly read document: ``data`` (plain dicts/lists/str/int/float/bool/None),
    ``notices`` (readings other YAML tools would make differently; not errors), ``lines``
    (path -> line of every node) and ``typed_scalars`` (path -> ScalarSource of each plain
    scalar read as a number, boolean or null)."""

    data: Any
    notices: list[YamlProblem] = field(default_factory=list)
    lines: dict[str, int] = field(default_factory=dict)
    typed_scalars: dict[str, ScalarSource] = field(default_factory=dict)

    def line_of(self, path: str) -> int:
        """The line of ``path`` or of its nearest ancestor that has one (0 if none)."""
        while True:
            if path in self.lines:
                return self.lines[path]
            if not path:
                return 0
            path = parent_path(path)


def parent_path(path: str) -> str:
    """``a.b[2].c`` -> ``a.b[2]`` -> ``a.b`` -> ``a`` -> ``''``."""
    if path.endswith("]"):
        return path[: path.rindex("[")]
    return path.rpartition(".")[0]


def join_path(parent: str, key: str | int) -> str:
    """Append a mapping key or a sequence index to a dotted path."""
    if isinstance(key, int):
        return f"{parent}[{key}]"
    return f"{parent}.{key}" if parent else str(key)


def _check_events(text: str) -> list[YamlProblem]:
    """Scan the event stream (iterative, no recursion) for what the tree must never hold."""
    problems: list[YamlProblem] = []
    depth = 0
    documents = 0
    for event in yaml.parse(text, Loader=_Loader):
        line = event.start_mark.line + 1 if event.start_mark else 0
        if isinstance(event, yaml.DocumentStartEvent):
            documents += 1
            if documents == 2:
                problems.append(YamlProblem("", line, "only one YAML document is accepted (found a second '---')"))
        elif isinstance(event, yaml.AliasEvent):
            problems.append(
                YamlProblem("", line, f"aliases (*{event.anchor}) are not accepted; write the value out in full")
            )
        elif isinstance(event, yaml.CollectionStartEvent | yaml.ScalarEvent):
            if event.anchor is not None:
                problems.append(YamlProblem("", line, f"anchors (&{event.anchor}) are not accepted"))
            if isinstance(event, yaml.CollectionStartEvent):
                depth += 1
                if depth > MAX_DEPTH:
                    problems.append(YamlProblem("", line, too_deep_message(MAX_DEPTH)))
                    break
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1
        if len(problems) >= 20:
            break
    return problems


def read_yaml(raw: bytes | str, *, max_bytes: int = 262_144) -> YamlDocument:
    """Read one YAML document strictly (see module docstring).

    ``raw`` is UTF-8 bytes (a BOM is allowed) or text. Raises YamlError with every problem
    found: over ``max_bytes``, not UTF-8, NUL bytes, syntax errors (with line and column),
    aliases, anchors, merge keys, duplicate keys, unknown tags, an empty document.
    """
    if isinstance(raw, bytes):
        if len(raw) > max_bytes:
            raise YamlError([YamlProblem("", 0, too_large_message(len(raw), max_bytes))])
        try:
            text = raw.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise YamlError([YamlProblem("", 0, f"the document is not UTF-8 text (byte {exc.start})")]) from None
    else:
        text = raw
        size = len(text.encode("utf-8", errors="replace"))
        if size > max_bytes:
            raise YamlError([YamlProblem("", 0, too_large_message(size, max_bytes))])
    if "\x00" in text:
        raise YamlError([YamlProblem("", 0, "the document contains NUL bytes: it is binary, not YAML")])
    if not text.strip():
        raise YamlError([YamlProblem("", 0, "the document is empty")])
    try:
        problems = _check_events(text)
        if problems:
            raise YamlError(problems)
        node = yaml.compose(text, Loader=_Loader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else 0
        column = f", column {mark.column + 1}" if mark else ""
        reason = " ".join(str(part) for part in (exc.context, exc.problem) if part)
        if "exceeded maximum nesting depth" in reason:  # libyaml's own bound (1,000), met scanning ahead
            raise YamlError([YamlProblem("", line, too_deep_message(MAX_DEPTH))]) from None
        raise YamlError([YamlProblem("", line, f"YAML syntax error{column}: {reason}")]) from None
    except yaml.YAMLError as exc:  # reader errors (control characters) carry no problem_mark
        raise YamlError([YamlProblem("", 0, f"not readable as YAML: {exc}")]) from None
    if node is None:
        raise YamlError([YamlProblem("", 0, "the document is empty")])
    document = YamlDocument(data=None)
    errors: list[YamlProblem] = []
    document.data = _convert(node, "", document, errors)
    if errors:
        raise YamlError(errors)
    return document


_SAFE_BASE: Any = yaml.CSafeLoader if getattr(yaml, "__with_libyaml__", False) else yaml.SafeLoader


class _Loader(_SAFE_BASE):
    """The safe loader (libyaml's parser when installed: about 10x faster) whose resolver
    marks every untagged plain scalar as ``_PLAIN``, so ``_convert`` applies the YAML 1.2
    core rules itself and explicit tags stay visible."""

    def resolve(self, kind: Any, value: Any, implicit: Any) -> str:
        if kind is yaml.ScalarNode and implicit[0]:
            return _PLAIN
        return super().resolve(kind, value, implicit)


def _convert(node: yaml.Node, path: str, document: YamlDocument, errors: list[YamlProblem]) -> Any:
    line = node.start_mark.line + 1
    document.lines.setdefault(path, line)
    tag = node.tag
    if isinstance(node, yaml.MappingNode):
        if tag != f"{_CORE}map":
            errors.append(YamlProblem(path, line, f"the tag {_tag_name(tag)} is not accepted (only plain YAML values)"))
            return None
        out: dict[str, Any] = {}
        first_line: dict[str, int] = {}
        for key_node, value_node in node.value:
            key_line = key_node.start_mark.line + 1
            if not isinstance(key_node, yaml.ScalarNode):
                errors.append(YamlProblem(path, key_line, "a key must be plain text, not a mapping or a list"))
                continue
            if key_node.value == "<<" and key_node.tag == _PLAIN:
                errors.append(YamlProblem(path, key_line, "merge keys (<<) are not accepted"))
                continue
            if key_node.tag not in (_PLAIN, f"{_CORE}str"):
                errors.append(YamlProblem(path, key_line, f"the key tag {_tag_name(key_node.tag)} is not accepted"))
                continue
            key = key_node.value
            child = join_path(path, key)
            if key in first_line:
                errors.append(YamlProblem(child, key_line, f"duplicate key {key!r} (first at line {first_line[key]})"))
                continue
            first_line[key] = key_line
            if key_node.tag == _PLAIN and _YAML11_BOOL.match(key):
                document.notices.append(
                    YamlProblem(
                        child, key_line, f"the key {key} is a boolean in YAML 1.1; it is read as the text {key!r}"
                    )
                )
            out[key] = _convert(value_node, child, document, errors)
        return out
    if isinstance(node, yaml.SequenceNode):
        if tag != f"{_CORE}seq":
            errors.append(YamlProblem(path, line, f"the tag {_tag_name(tag)} is not accepted (only plain YAML values)"))
            return None
        return [_convert(item, join_path(path, index), document, errors) for index, item in enumerate(node.value)]
    if not isinstance(node, yaml.ScalarNode):
        errors.append(YamlProblem(path, line, "not a plain YAML value"))
        return None
    return _scalar(node, path, line, document, errors)


def _tag_name(tag: str) -> str:
    return "!!" + tag[len(_CORE) :] if tag.startswith(_CORE) else tag


def _scalar(node: yaml.ScalarNode, path: str, line: int, document: YamlDocument, errors: list[YamlProblem]) -> Any:
    text, tag = node.value, node.tag
    if "\x00" in text:  # a "\0" escape: no database stores it in JSON text
        errors.append(YamlProblem(path, line, "NUL characters (\\0) are not accepted"))
        return None
    if tag == f"{_CORE}str":
        return text  # quoted, block or !!str: always text
    if tag != _PLAIN:
        if tag not in _ALLOWED_TAGS:
            errors.append(YamlProblem(path, line, f"the tag {_tag_name(tag)} is not accepted (only plain YAML values)"))
            return None
        return _explicit(text, tag, path, line, errors)
    if _integer_too_large(text):
        errors.append(YamlProblem(path, line, TOO_LARGE))
        return None
    value = _core_value(text)
    if isinstance(value, str):
        notice = _yaml11_reading(text)
        if notice:
            document.notices.append(YamlProblem(path, line, notice))
        return value
    document.typed_scalars[path] = ScalarSource(text, line, value)
    if isinstance(value, float) and math.isfinite(value) and _number_text_changes(text, value):
        document.notices.append(
            YamlProblem(
                path, line, f"{text} is read as the number {value!r}; quote it ({text!r}) if the exact text matters"
            )
        )
    return value


def _explicit(text: str, tag: str, path: str, line: int, errors: list[YamlProblem]) -> Any:
    if _integer_too_large(text):
        errors.append(YamlProblem(path, line, TOO_LARGE))
        return None
    value = _core_value(text)
    kind = tag[len(_CORE) :]
    expected = {"int": int, "float": float, "bool": bool, "null": type(None)}.get(kind)
    if expected is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if expected is None or not isinstance(value, expected) or (expected is int and isinstance(value, bool)):
        errors.append(YamlProblem(path, line, f"{text!r} is not a valid !!{kind}"))
        return None
    return value


def _integer_too_large(text: str) -> bool:
    """Whether plain ``text`` is a core-schema integer (decimal, ``0o`` octal, ``0x`` hex)
    whose magnitude is past LARGEST_INTEGER. Decimal text is measured by its digits first, so
    no text past Python's int-conversion limit is converted."""
    if not _INT.match(text) or _LEADING_ZERO.match(text):
        return False
    if text.startswith(("0o", "0x")):
        digits = text[2:].lstrip("0")
        bits_per_digit = 3 if text.startswith("0o") else 4
        return len(digits) * bits_per_digit > 64 or int(digits or "0", 2**bits_per_digit) > LARGEST_INTEGER
    digits = text.lstrip("+-").lstrip("0")
    return len(digits) > len(str(LARGEST_INTEGER)) or int(digits or "0") > LARGEST_INTEGER


def _core_value(text: str) -> Any:
    """The YAML 1.2 core-schema value of a plain scalar."""
    if _NULL.match(text):
        return None
    if _BOOL.match(text):
        return text.lower() == "true"
    if _INT.match(text):
        if _LEADING_ZERO.match(text):
            return text  # 0755: octal in YAML 1.1, decimal in 1.2 - keep the text (notice below)
        if text.startswith("0o"):
            return int(text[2:], 8)
        if text.startswith("0x"):
            return int(text[2:], 16)
        return int(text)
    if _FLOAT.match(text):
        lowered = text.lower()
        if lowered.endswith("nan"):
            return math.nan
        if lowered.endswith("inf"):
            return -math.inf if text.startswith("-") else math.inf
        return float(text)
    return text


def _yaml11_reading(text: str) -> str:
    """Why YAML 1.1 tools would read this plain text as something else ('' if they would not)."""
    if _YAML11_BOOL.match(text):
        value = "true" if text.lower() in _YAML11_TRUE else "false"
        return (
            f"{text} is the boolean {value} in YAML 1.1 but text in YAML 1.2; it is read as the text {text!r}. "
            f"Quote it, or write {value} if a boolean was meant"
        )
    if _LEADING_ZERO.match(text):
        return f"{text} is an octal number in YAML 1.1; it is read as the text {text!r}. Quote it to make that explicit"
    if _SEXAGESIMAL.match(text):
        return (
            f"{text} is a base-60 number in YAML 1.1; it is read as the text {text!r}. Quote it to make that explicit"
        )
    if _UNDERSCORE_NUMBER.match(text):
        return f"{text} is a number in YAML 1.1; it is read as the text {text!r}. Quote it to make that explicit"
    return ""


def yaml11_boolean(text: str) -> bool | None:
    """The boolean YAML 1.1 would read from plain ``text`` (``NO`` -> False), else None."""
    if not _YAML11_BOOL.match(text):
        return None
    return text.lower() in _YAML11_TRUE


def _number_text_changes(text: str, value: float) -> bool:
    """True when writing ``value`` back would not give ``text`` (1.10 -> 1.1, 1e3 -> 1000.0)."""
    cleaned = text.lstrip("+")
    return repr(value) != cleaned and not (cleaned.endswith(".") and repr(value) == cleaned + "0")


def type_hint(source: ScalarSource, expected: str) -> str:
    """A fix for a schema type error at a plain scalar YAML read as a non-string.

    ``expected`` is the JSON Schema type the field wanted (``string``, ``boolean``...)."""
    if expected == "string":
        kind = {bool: "a boolean", int: "a number", float: "a number", type(None): "null (empty)"}[type(source.value)]
        return f"YAML reads {source.text or '(nothing)'} as {kind}, not text; quote it: {source.text!r}"
    return ""
