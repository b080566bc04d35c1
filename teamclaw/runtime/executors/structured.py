"""Structured answers for the ``openai`` executor (docs/architecture.md §8, issue 15 point 3).

Every model call that asks for a JSON answer (``ModelSession.answer``) also asks for it
through the chat-completions ``response_format``::

    {"type": "json_schema",
     "json_schema": {"name": <from the capability id>, "schema": <the schema>, "strict": <bool>}}

The schema is sent exactly as the card (or the workflow handler) wrote it; it is never
rewritten. ``strict`` is decided per schema (``strict_compatible``): true only when the
schema already lies inside the subset OpenAI's strict mode accepts, false otherwise (the
server then treats the schema as guidance, or enforces what it can). Either way the answer
is still validated against the schema by TeamClaw, with its one repair attempt, and the
schema is still in the prompt, so the prompt-only path is always there as the fallback:

- an endpoint configured with ``structured_output`` off never gets ``response_format``;
- a server that refuses it (a 400/422 naming ``response_format``/``json_schema`` or an
  unsupported/unknown parameter) gets the same request again once without it, and
  ``StructuredSupport`` remembers, for that endpoint in this process, that it does not
  support it (with or without functions offered, separately: some servers cannot constrain
  an answer that may also be a function call), so no later call tries again.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Mapping
from typing import Any

NAME_CHARS = re.compile(r"[^A-Za-z0-9_-]+")
MAX_NAME_CHARS = 64
STRICT_MAX_DEPTH = 10
"""Deepest nesting of schemas strict mode accepts."""
STRICT_MAX_PROPERTIES = 5000
"""Most object properties, over the whole schema, strict mode accepts."""
STRICT_TYPES = frozenset({"string", "number", "integer", "boolean", "object", "array", "null"})
STRICT_KEYWORDS = frozenset(
    {
        "type",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "enum",
        "const",
        "anyOf",
        "$ref",
        "$defs",
        "definitions",
        "description",
        "title",
        "minItems",
        "maxItems",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
    }
)
"""The keywords a strict schema may use. Left out on purpose, because OpenAI or other
servers refuse them in strict mode: ``pattern``, ``format``, ``minLength``/``maxLength``,
``default``, ``allOf``/``oneOf``/``not``, ``if``/``then``/``else``, ``patternProperties``,
``prefixItems``, ``uniqueItems``, ``minProperties``/``maxProperties``, ``$schema``/``$id``."""
REFUSAL = re.compile(
    r"response_format|response format|json_schema|json schema|structured output|"
    r"unsupported|not supported|unknown (?:parameter|field|argument)|unrecognized|"
    r"extra (?:inputs|fields) (?:are )?not permitted|extra_forbidden",
    re.IGNORECASE,
)
REFUSAL_STATUSES = frozenset({400, 422})


def schema_name(capability_id: str) -> str:
    """A ``json_schema.name`` for ``capability_id``: letters, digits, ``_`` and ``-`` only
    (every other run of characters becomes ``_``), at most 64 characters, never empty."""
    name = NAME_CHARS.sub("_", capability_id).strip("_")[:MAX_NAME_CHARS]
    return name or "answer"


def strict_compatible(schema: Mapping[str, Any]) -> bool:
    """True when ``schema`` already satisfies OpenAI's strict subset, so it may be sent with
    ``strict: true`` unchanged.

    The rule: the root is ``type: "object"``; every schema is an object using only
    ``STRICT_KEYWORDS`` and says what it is (``type``, ``anyOf``, ``$ref``, ``enum`` or
    ``const``), with types from ``STRICT_TYPES``; every object schema has
    ``additionalProperties: false`` and lists every one of its ``properties`` in
    ``required`` (optional fields are written as nullable types, not left out of
    ``required``); ``items`` is one schema; ``$ref`` points inside the schema (``#...``);
    nesting is at most ``STRICT_MAX_DEPTH`` deep and there are at most
    ``STRICT_MAX_PROPERTIES`` properties in all. Anything else is sent with ``strict: false``.
    """
    if not isinstance(schema, Mapping) or schema.get("type") != "object":
        return False
    count = [0]
    return _strict(schema, 1, count) and count[0] <= STRICT_MAX_PROPERTIES


def _strict(schema: Any, depth: int, count: list[int]) -> bool:
    if not isinstance(schema, Mapping) or depth > STRICT_MAX_DEPTH or not _strict_node(schema):
        return False
    children = _children(schema)
    if children is None:
        return False
    count[0] += len(schema.get("properties", {}))
    return all(_strict(sub, depth + 1, count) for sub in children)


def _strict_node(schema: Mapping[str, Any]) -> bool:
    """The checks on one schema, not on the schemas inside it."""
    if not set(schema) <= STRICT_KEYWORDS:
        return False
    if not any(key in schema for key in ("type", "anyOf", "$ref", "enum", "const")):
        return False
    kinds = _kinds(schema)
    if kinds is None:
        return False
    ref = schema.get("$ref")
    if ref is not None and not (isinstance(ref, str) and ref.startswith("#")):
        return False
    if "object" in kinds or "properties" in schema:
        properties = schema.get("properties", {})
        required = schema.get("required", [])
        if not isinstance(properties, Mapping) or schema.get("additionalProperties") is not False:
            return False
        return isinstance(required, list) and sorted(map(str, required)) == sorted(properties)
    return "additionalProperties" not in schema and "required" not in schema


def _kinds(schema: Mapping[str, Any]) -> list[str] | None:
    kinds = schema.get("type", [])
    kinds = [kinds] if isinstance(kinds, str) else kinds
    if not isinstance(kinds, list) or not all(isinstance(k, str) and k in STRICT_TYPES for k in kinds):
        return None
    return kinds


def _children(schema: Mapping[str, Any]) -> list[Any] | None:
    """The schemas directly inside ``schema``; None when one of its containers is malformed."""
    children: list[Any] = list(schema.get("properties", {}).values())
    if "array" in (_kinds(schema) or []) or "items" in schema:
        children.append(schema.get("items"))  # a missing or list-valued items is refused
    options = schema.get("anyOf")
    if options is not None:
        if not isinstance(options, list) or not options:
            return None
        children += options
    for key in ("$defs", "definitions"):
        defs = schema.get(key)
        if defs is not None:
            if not isinstance(defs, Mapping):
                return None
            children += list(defs.values())
    return children


def response_format_for(capability_id: str, schema: Mapping[str, Any]) -> dict[str, Any]:
    """The ``response_format`` asking for ``schema`` (sent as given, as a plain JSON copy;
    ``strict`` as ``strict_compatible`` decides)."""
    plain = json.loads(json.dumps(schema, default=str))
    return {
        "type": "json_schema",
        "json_schema": {"name": schema_name(capability_id), "schema": plain, "strict": strict_compatible(plain)},
    }


def refuses_response_format(status: int, text: str) -> bool:
    """True when an error answer ``status``/``text`` is a server refusing ``response_format``
    (rather than the request as a whole)."""
    return status in REFUSAL_STATUSES and bool(REFUSAL.search(text))


class StructuredSupport:
    """What this process learned about endpoints refusing ``response_format``: keyed by the
    endpoint (name and URL) and whether functions were offered in the same request. Shared by
    every call of one executor; thread-safe."""

    def __init__(self) -> None:
        self._refused: set[tuple[str, str, bool]] = set()
        self._lock = threading.Lock()

    def refused(self, endpoint: str, base_url: str, with_tools: bool) -> bool:
        with self._lock:
            return (endpoint, base_url, with_tools) in self._refused

    def remember_refusal(self, endpoint: str, base_url: str, with_tools: bool) -> None:
        with self._lock:
            self._refused.add((endpoint, base_url, with_tools))
