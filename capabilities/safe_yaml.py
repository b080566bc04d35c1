"""Reading config documents safely: YAML or JSON text to plain data (US-10 import).

- YAML goes through ``ConfigLoader``, a ``yaml.SafeLoader`` (no Python tags: ``!!python/...``
  is refused) that also refuses duplicate keys and non-string keys (YAML 1.1 reads ``on:``
  as ``True``), and bounds alias expansion: the document is composed first and its size
  *with every alias expanded* is measured (nodes and characters) before anything is
  constructed, so a "billion laughs" document is refused without being built. Recursive
  aliases are refused.
- JSON goes through ``json.loads`` refusing duplicate keys and ``NaN``/``Infinity``.
- Both refuse text over the size limit (``TEAMCLAW_MAX_CONFIG_BYTES``, 2 MB by default),
  text that is not UTF-8, nesting deeper than 64 levels (so no later check recurses too
  deep), and a top level that is not a mapping.

Every refusal is a ``DocumentError`` whose ``errors`` name a location (``line 3, column 5``).
"""

from __future__ import annotations

import json
import re
from typing import Any

import yaml
from django.conf import settings
from yaml.constructor import ConstructorError
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from teamclaw.errors import DomainError
from teamclaw.strict_json import finite_float, refuse_constant, refuse_duplicate_keys

MAX_EXPANDED_NODES = 250_000
"""Most YAML nodes a document may have once every alias is expanded."""
MAX_EXPANDED_CHARS_FACTOR = 4
"""Expanded scalar text may be at most this many times the size limit."""
MERGE_TAG = "tag:yaml.org,2002:merge"
MAX_DEPTH = 64
"""Deepest nesting of mappings and lists accepted (a JSON Schema inside a card needs ~10)."""


class DocumentError(DomainError, ValueError):
    """The text cannot be read as a config document (400); ``errors`` is ``{where: [reasons]}``."""

    def __init__(self, errors: dict[str, list[str]]) -> None:
        where, reasons = next(iter(errors.items()))
        self.first = f"{where}: {reasons[0]}"
        super().__init__(f"the document cannot be read: {self.first}", errors=errors)

    def __str__(self) -> str:
        return self.first


def max_config_bytes() -> int:
    """The size limit of an imported document (bytes)."""
    return int(settings.TEAMCLAW.get("MAX_CONFIG_BYTES", 2_000_000))


def _where(mark: Any) -> str:
    return f"line {mark.line + 1}, column {mark.column + 1}" if mark is not None else "document"


class ConfigLoader(yaml.SafeLoader):
    """SafeLoader that refuses duplicate and non-string mapping keys."""

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[str, Any] = {}
        for key_node, _value in node.value:
            if key_node.tag == MERGE_TAG:
                continue
            if not isinstance(key_node, ScalarNode):
                raise ConstructorError(None, None, "mapping keys must be plain strings", key_node.start_mark)
            key = self.construct_object(key_node)
            if not isinstance(key, str):
                raise ConstructorError(
                    None,
                    None,
                    f"the key {key_node.value!r} is read as {type(key).__name__}; quote it to use it as a name",
                    key_node.start_mark,
                )
            if key in seen:
                raise ConstructorError(
                    None, None, f"duplicate key {key!r} (first at {_where(seen[key])})", key_node.start_mark
                )
            seen[key] = key_node.start_mark
        return super().construct_mapping(node, deep=deep)


def expanded_size(root: Node) -> tuple[int, int]:
    """``(nodes, scalar characters)`` of ``root`` with every alias expanded, computed in time
    linear in the composed graph. Raises DocumentError for a recursive alias or past the
    bounds."""
    memo: dict[int, tuple[int, int]] = {}
    active: set[int] = set()
    char_limit = max_config_bytes() * MAX_EXPANDED_CHARS_FACTOR

    def size(node: Node) -> tuple[int, int]:
        key = id(node)
        if key in memo:
            return memo[key]
        if key in active:
            raise DocumentError({_where(node.start_mark): ["recursive alias: a node that contains itself"]})
        active.add(key)
        if isinstance(node, ScalarNode):
            total = (1, len(node.value))
        else:
            children: list[Node] = []
            if isinstance(node, SequenceNode):
                children = list(node.value)
            elif isinstance(node, MappingNode):
                children = [part for pair in node.value for part in pair]
            nodes, chars = 1, 0
            for child in children:
                n, c = size(child)
                nodes, chars = nodes + n, chars + c
            total = (nodes, chars)
        active.discard(key)
        if total[0] > MAX_EXPANDED_NODES or total[1] > char_limit:
            raise DocumentError(
                {
                    _where(node.start_mark): [
                        f"the document expands to more than {MAX_EXPANDED_NODES:,} nodes or {char_limit:,} characters "
                        "(aliases are expanded); refused"
                    ]
                }
            )
        memo[key] = total
        return total

    return size(root)


def _decode(raw: bytes | str) -> str:
    limit = max_config_bytes()
    size = len(raw.encode("utf-8")) if isinstance(raw, str) else len(raw)
    if size > limit:
        raise DocumentError({"document": [f"is {size:,} bytes; the limit is {limit:,} bytes"]})
    if isinstance(raw, str):
        text = raw
    else:
        try:
            text = raw.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise DocumentError({"document": [f"is not UTF-8 text (byte {exc.start})"]}) from None
    if "\x00" in text:
        raise DocumentError({"document": ["contains NUL characters; it looks binary"]})
    if not text.strip():
        raise DocumentError({"document": ["is empty"]})
    return text


def load_yaml(text: str) -> Any:
    """Parse YAML safely (see module docstring). Raises DocumentError."""
    loader = ConfigLoader(text)
    try:
        root = loader.get_single_node()
        if root is None:
            raise DocumentError({"document": ["is empty"]})
        expanded_size(root)
        return loader.construct_document(root)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        reason = exc.problem or exc.context or "cannot be read"
        if "could not determine a constructor" in reason:
            tag = re.search(r"'([^']*)'", reason)
            reason = f"the tag {tag.group(1) if tag else ''} is not allowed: only plain YAML data is accepted"
        raise DocumentError({_where(mark): [reason]}) from None
    except yaml.YAMLError as exc:
        raise DocumentError({"document": [f"is not valid YAML: {exc}"]}) from None
    except RecursionError:
        raise DocumentError({"document": ["is nested too deeply"]}) from None
    finally:
        loader.dispose()


def load_json(text: str) -> Any:
    """Parse JSON refusing duplicate keys and NaN/Infinity. Raises DocumentError."""
    try:
        return json.loads(
            text, object_pairs_hook=refuse_duplicate_keys, parse_constant=refuse_constant, parse_float=finite_float
        )
    except json.JSONDecodeError as exc:
        raise DocumentError({f"line {exc.lineno}, column {exc.colno}": [exc.msg]}) from None
    except RecursionError:
        raise DocumentError({"document": ["is nested too deeply"]}) from None
    except ValueError as exc:
        raise DocumentError({"document": [str(exc)]}) from None


def depth(data: Any) -> int:
    """How deeply mappings and lists nest in ``data`` (a scalar is 0), without recursion."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(data, 0)]
    seen: set[int] = set()
    while stack:
        value, level = stack.pop()
        if isinstance(value, dict | list):
            if id(value) in seen and level <= deepest:
                continue
            seen.add(id(value))
            level += 1
            deepest = max(deepest, level)
            if deepest > MAX_DEPTH:
                return deepest
            children = value.values() if isinstance(value, dict) else value
            stack.extend((child, level) for child in children)
    return deepest


def guess_format(text: str, content_type: str = "") -> str:
    """``json`` or ``yaml`` from the content type, else from the first character."""
    content_type = content_type.split(";")[0].strip().lower()
    if content_type == "application/json":
        return "json"
    if content_type in {"application/yaml", "application/x-yaml", "text/yaml", "text/x-yaml"}:
        return "yaml"
    return "json" if text.lstrip().startswith(("{", "[")) else "yaml"


def load_document(raw: bytes | str, fmt: str = "") -> dict[str, Any]:
    """Read a config document from ``raw`` (``fmt`` ``yaml``/``json``, or guessed).

    Returns the top-level mapping. Raises DocumentError naming where and why.
    """
    text = _decode(raw)
    fmt = fmt or guess_format(text)
    if fmt not in {"yaml", "json"}:
        raise DocumentError({"format": ["must be yaml or json"]})
    data = load_json(text) if fmt == "json" else load_yaml(text)
    if depth(data) > MAX_DEPTH:
        raise DocumentError({"document": [f"is nested deeper than {MAX_DEPTH} levels"]})
    if not isinstance(data, dict):
        raise DocumentError({"document": ["the top level must be a mapping (format, roles, capabilities, ...)"]})
    return data
