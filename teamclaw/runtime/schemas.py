"""JSON Schema 2020-12 validation for capability params, results and card registration.

- ``SchemaValidators`` compiles one validator per card version and schema content with
  jsonschema-rs (a compiled 2020-12 implementation, ``format`` enforced), because params and
  results are checked on every invoke: about 0.3 us a check instead of 15-30 us. Every
  error is reported with the JSON pointer of the offending value (PRD §4.4).
- ``stored_schema_problems`` is the one check of every JSON Schema the product stores (cards'
  input/output schemas, skills' ``llmConfig.functions[].parameters``, the tools an MCP tool
  source lists): 2020-12, every ``$ref`` inside the schema and resolving (``referencing``,
  nothing fetched), no ``$ref`` cycle that reads no input, named with its path
  (``#/$defs/a -> #/$defs/b -> #/$defs/a``).
- ``validate_card`` is the registry's check before a card joins the index (PRD §4.2 注册流程):
  it returns every problem at once, including unknown keywords such as ``mininum`` and
  ``required`` names that no property defines.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urljoin

import jsonschema_rs
import semver
from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError
from referencing import Registry
from referencing.exceptions import Unresolvable
from referencing.jsonschema import DRAFT202012

from teamclaw.runtime.config import CATEGORIES, TOOLS, CardSpec
from teamclaw.runtime.errors import AgentFailure, ErrorCode

KNOWN_KEYWORDS: frozenset[str] = frozenset(
    {
        # core
        "$schema",
        "$id",
        "$ref",
        "$anchor",
        "$dynamicRef",
        "$dynamicAnchor",
        "$vocabulary",
        "$comment",
        "$defs",
        # applicator
        "prefixItems",
        "items",
        "contains",
        "additionalProperties",
        "properties",
        "patternProperties",
        "dependentSchemas",
        "propertyNames",
        "if",
        "then",
        "else",
        "allOf",
        "anyOf",
        "oneOf",
        "not",
        # unevaluated
        "unevaluatedItems",
        "unevaluatedProperties",
        # validation
        "type",
        "const",
        "enum",
        "multipleOf",
        "maximum",
        "exclusiveMaximum",
        "minimum",
        "exclusiveMinimum",
        "maxLength",
        "minLength",
        "pattern",
        "maxItems",
        "minItems",
        "uniqueItems",
        "maxContains",
        "minContains",
        "maxProperties",
        "minProperties",
        "required",
        "dependentRequired",
        # meta-data, format, content
        "title",
        "description",
        "default",
        "deprecated",
        "readOnly",
        "writeOnly",
        "examples",
        "format",
        "contentEncoding",
        "contentMediaType",
        "contentSchema",
    }
)
DRAFT_2020_12 = "https://json-schema.org/draft/2020-12/schema"
CHECKED_FORMATS: tuple[str, ...] = (
    "date",
    "date-time",
    "duration",
    "email",
    "hostname",
    "idn-email",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "iri",
    "iri-reference",
    "json-pointer",
    "regex",
    "relative-json-pointer",
    "time",
    "uri",
    "uri-reference",
    "uri-template",
    "uuid",
)
"""The ``format`` values jsonschema-rs checks with ``validate_formats=True`` (the 2020-12
format vocabulary). Any other ``format`` (``phone``, ``int32``, ``binary``...) would be
ignored, so a card that names one is refused at registration instead of being saved with a
check that never runs (``tests/runtime/test_schema_edges.py`` holds this list to the library)."""
_SUBSCHEMA = (
    "items",
    "contains",
    "additionalProperties",
    "propertyNames",
    "if",
    "then",
    "else",
    "not",
    "unevaluatedItems",
    "unevaluatedProperties",
    "contentSchema",
)
_SUBSCHEMA_MAPS = ("properties", "patternProperties", "$defs", "dependentSchemas")
_SUBSCHEMA_LISTS = ("prefixItems", "allOf", "anyOf", "oneOf")


def pointer(parts: Any) -> str:
    """RFC 6901 JSON pointer for a path of keys/indexes ('' is the whole document)."""
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


def _keyword(error: Any) -> str:
    name = type(error.kind).__name__
    return {
        "AdditionalProperties": "additionalProperties",
        "MinItems": "minItems",
        "MaxItems": "maxItems",
        "MinLength": "minLength",
        "MaxLength": "maxLength",
        "UniqueItems": "uniqueItems",
        "MultipleOf": "multipleOf",
        "AnyOf": "anyOf",
        "OneOfNotValid": "oneOf",
        "OneOfMultipleValid": "oneOf",
        "Required": "required",
        "Type": "type",
        "Enum": "enum",
        "Constant": "const",
        "Format": "format",
        "Pattern": "pattern",
        "Minimum": "minimum",
        "Maximum": "maximum",
        "ExclusiveMinimum": "exclusiveMinimum",
        "ExclusiveMaximum": "exclusiveMaximum",
    }.get(name, name[:1].lower() + name[1:])


def schema_errors(validator: Any, instance: Any) -> list[dict[str, str]]:
    """Every validation error as ``{"pointer", "message", "keyword"}``, sorted by pointer
    (empty when ``instance`` is valid). ``validator`` comes from ``SchemaValidators``.

    A value the validator cannot even walk (nested deeper than its recursion limit, keys that
    are not strings) is one error at the root, never an exception. NaN and +-Infinity are
    not JSON (RFC 8259 §6) and could be neither sent nor stored: each is an error of its
    own (keyword ``finite``) at its pointer, whatever the schema says.
    """
    try:
        errors = non_finite_errors(instance)
        if not errors and validator.is_valid(instance):
            return []
        errors += [
            {"pointer": pointer(err.instance_path), "message": err.message, "keyword": _keyword(err)}
            for err in validator.iter_errors(instance)
        ]
    except (ValueError, TypeError, RecursionError, OverflowError) as exc:
        reason = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
        return [{"pointer": "", "message": f"the value cannot be validated: {reason}", "keyword": "invalid"}]
    errors.sort(key=lambda e: (e["pointer"], e["keyword"]))
    return errors


def non_finite_errors(value: Any, path: tuple[Any, ...] = ()) -> list[dict[str, str]]:
    """``{"pointer", "message", "keyword": "finite"}`` for every NaN or +-Infinity in ``value``
    (a JSON-like value): numbers JSON cannot carry, so a result holding one would break the
    API's answer (HTTP 500) or be stored as ``null``. Every invoke checks its params and its
    result: a value with none (nearly all) is walked once without building pointers."""
    if not path and not _has_non_finite(value):
        return []
    return _non_finite_at(value, path)


def _has_non_finite(value: Any) -> bool:
    """True when ``value`` may hold a NaN or +-Infinity: it does, or it holds more than
    ``WALK_BUDGET`` numbers and containers (a huge or cyclic value: the walk with pointers
    then decides, and stops a cycle at the recursion limit, which ``schema_errors`` reports)."""
    stack, budget = [value], WALK_BUDGET
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is str or kind is bool or item is None:
            continue
        budget -= 1
        if budget < 0:
            return True
        if kind is int:
            continue
        if kind is dict:
            stack.extend(item.values())
        elif kind is list or kind is tuple:
            stack.extend(item)
        elif isinstance(item, float):
            if not math.isfinite(item):
                return True
        elif isinstance(item, Mapping):
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
    return False


WALK_BUDGET = 100_000
"""Numbers and containers ``_has_non_finite`` looks at before leaving it to the full walk."""


def _non_finite_at(value: Any, path: tuple[Any, ...]) -> list[dict[str, str]]:
    if isinstance(value, float):
        if math.isfinite(value):
            return []
        return [{"pointer": pointer(path), "message": f"{value!r} is not a JSON number", "keyword": "finite"}]
    errors: list[dict[str, str]] = []
    if isinstance(value, Mapping):
        for key, item in value.items():
            errors += _non_finite_at(item, (*path, key))
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            errors += _non_finite_at(item, (*path, index))
    return errors


class SchemaValidators:
    """Compiled validators for cards, keyed by ``(capability_id, version, schema_digest)``."""

    def __init__(self) -> None:
        self._cache: dict[tuple[str, str, str], tuple[Any, Any]] = {}

    def for_card(self, card: CardSpec) -> tuple[Any, Any]:
        """``(input_validator, output_validator)`` for ``card``, compiled on first use.

        Raises AgentFailure(executor_error, not retryable) when a schema cannot be compiled
        (e.g. a ``$ref`` to anything but the schema itself).
        """
        key = (card.capability_id, card.version, card.schema_digest)
        pair = self._cache.get(key)
        if pair is None:
            try:
                pair = (compile_schema(card.input_schema), compile_schema(card.output_schema))
            except Exception as exc:
                reason = str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__
                raise AgentFailure(
                    ErrorCode.EXECUTOR_ERROR,
                    f"the schemas of {card.capability_id} cannot be compiled: {reason}",
                    {"capability_id": card.capability_id},
                    retryable=False,
                ) from None
            self._cache[key] = pair
        return pair

    def __len__(self) -> int:
        return len(self._cache)


def _refuse_retrieval(uri: str) -> Any:
    raise ValueError(f"external $ref {uri!r} is not allowed: a card's schemas must be self-contained")


def compile_schema(schema: Mapping[str, Any]) -> Any:
    """A compiled 2020-12 validator for ``schema`` with ``format`` enforced.

    Never fetches anything: a ``$ref`` outside the schema (http://, file://...) fails to
    compile instead of making the server read a URL or a local file.
    """
    return jsonschema_rs.Draft202012Validator(_plain(schema), validate_formats=True, retriever=_refuse_retrieval)


def _plain(value: Any) -> Any:
    """Mapping proxies and tuples become dicts and lists (what the compiler accepts)."""
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def lint_schema(schema: Any, path: str = "") -> list[str]:
    """Problems a meta-schema check lets through: unknown keywords (e.g. ``mininum``),
    ``required`` names with no matching property and a ``format`` the server does not check
    (one of ``CHECKED_FORMATS`` only: date, date-time, duration, email, hostname, idn-email,
    idn-hostname, ipv4, ipv6, iri, iri-reference, json-pointer, regex, relative-json-pointer,
    time, uri, uri-reference, uri-template, uuid). Returns messages with their pointer."""
    if isinstance(schema, bool):
        return []
    if not isinstance(schema, Mapping):
        return [f"{path or '/'}: a schema must be an object or a boolean"]
    problems = _own_problems(schema, path)
    for sub_path, sub in _subschemas(schema, path):
        problems += lint_schema(sub, sub_path)
    return problems


def _own_problems(schema: Mapping[str, Any], path: str) -> list[str]:
    """The problems of one (sub)schema object, not of the schemas inside it."""
    problems = [
        f"{path}/{key}: unknown JSON Schema keyword {key!r}"
        for key in schema
        if key not in KNOWN_KEYWORDS and not str(key).startswith("x-")
    ]
    fmt = schema.get("format")
    if fmt is not None and fmt not in CHECKED_FORMATS:
        problems.append(
            f"{path}/format: format {fmt!r} is not checked by the server; the checked formats are "
            + ", ".join(CHECKED_FORMATS)
        )
    if "$schema" in schema and schema["$schema"] != DRAFT_2020_12:
        problems.append(f"{path}/$schema: cards use JSON Schema 2020-12 ({DRAFT_2020_12})")
    properties = schema.get("properties")
    required = schema.get("required")
    if isinstance(required, list) and isinstance(properties, Mapping) and not schema.get("patternProperties"):
        problems += [
            f"{path}/required: {name!r} is required but no property defines it"
            for name in required
            if name not in properties
        ]
    return problems


def _subschemas(schema: Mapping[str, Any], path: str) -> list[tuple[str, Any]]:
    """``(pointer, subschema)`` of every schema directly inside ``schema``, in keyword order."""
    out: list[tuple[str, Any]] = [(f"{path}/{key}", schema[key]) for key in _SUBSCHEMA if key in schema]
    for key in _SUBSCHEMA_MAPS:
        if isinstance(schema.get(key), Mapping):
            out += [(f"{path}/{key}/{name}", sub) for name, sub in schema[key].items()]
    for key in _SUBSCHEMA_LISTS:
        if isinstance(schema.get(key), list):
            out += [(f"{path}/{key}/{index}", sub) for index, sub in enumerate(schema[key])]
    return out


_IN_PLACE = ("allOf", "anyOf", "oneOf", "not", "if", "then", "else", "dependentSchemas")
"""Applicators that apply their subschemas to the same value (they read no input)."""
_REFERENCES = ("$ref", "$dynamicRef")


def _in_place_children(schema: Mapping[str, Any]) -> list[Any]:
    """The subschemas ``schema`` applies to the same value as itself (``allOf``, ``not``...)."""
    children: list[Any] = []
    for key in _IN_PLACE:
        sub = schema.get(key)
        if isinstance(sub, list):
            children += sub
        elif key == "dependentSchemas" and isinstance(sub, Mapping):
            children += list(sub.values())
        elif key != "dependentSchemas":
            children.append(sub)
    return [child for child in children if isinstance(child, Mapping)]


def _container_paths(document: Any) -> dict[int, tuple[str, ...]]:
    """``id(object) -> path`` of every JSON object in ``document`` (under any key, so a
    ``$ref`` into ``definitions`` or another keyword 2020-12 does not know is still named)."""
    paths: dict[int, tuple[str, ...]] = {}
    stack: list[tuple[Any, tuple[str, ...]]] = [(document, ())]
    while stack:
        node, path = stack.pop()
        if isinstance(node, Mapping):
            paths.setdefault(id(node), path)
            stack += [(value, (*path, str(key))) for key, value in node.items()]
        elif isinstance(node, list):
            stack += [(value, (*path, str(index))) for index, value in enumerate(node)]
    return paths


_Edge = tuple[int, str, str]
"""``(target id, pointer of the $ref keyword or "", the $ref's text or "")``."""


class _SchemaGraph:
    """The (sub)schemas of one document and what each applies to the same value: its
    in-place applicators and the targets of its ``$ref``/``$dynamicRef``, resolved with the
    ``referencing`` library in the scope of the nearest ``$id`` (``$anchor`` names included)
    and never retrieved from anywhere. ``problems`` lists the references that leave the
    document or resolve to nothing."""

    def __init__(self, document: Mapping[str, Any]) -> None:
        self.paths = _container_paths(document)
        self.edges: dict[int, list[_Edge]] = {}
        self.problems: list[str] = []
        resource = DRAFT202012.create_resource(document)
        base = resource.id() or ""
        registry: Registry[Any] = Registry().with_resource(base, resource).crawl()
        stack: list[tuple[Mapping[str, Any], Any]] = [(document, registry.resolver(base))]
        while stack:
            schema, resolver = stack.pop()
            if id(schema) in self.edges:
                continue
            self.edges[id(schema)] = [(id(child), "", "") for child in _in_place_children(schema)]
            stack += self._references(schema, resolver)
            for _path, sub in _subschemas(schema, ""):
                if isinstance(sub, Mapping):
                    scope = resolver.in_subresource(DRAFT202012.create_resource(sub)) if "$id" in sub else resolver
                    stack.append((sub, scope))

    def path(self, node: int) -> tuple[str, ...]:
        return self.paths.get(node, ())

    def _references(self, schema: Mapping[str, Any], resolver: Any) -> list[tuple[Mapping[str, Any], Any]]:
        """Record the edges of ``schema``'s references; returns their targets to walk."""
        targets = []
        for key in _REFERENCES:
            ref = schema.get(key)
            if not isinstance(ref, str):
                continue
            where = pointer((*self.path(id(schema)), key))
            if not ref.startswith("#"):
                self.problems.append(
                    f"{where}: only references inside the schema ('#/...') are allowed; {ref!r} points outside "
                    "it (http:, https:, file:, urn: and file names are never fetched)"
                )
                continue
            try:
                resolved = resolver.lookup(ref)
            except (Unresolvable, ValueError, LookupError, TypeError):
                self.problems.append(f"{where}: {ref!r} refers to nothing inside the schema")
                continue
            if isinstance(resolved.contents, Mapping):
                self.edges[id(schema)].append((id(resolved.contents), where, ref))
                targets.append((resolved.contents, resolved.resolver))
        return targets

    def loops(self) -> list[str]:
        """One message per cycle of in-place edges closed by a reference (see ``ref_loops``),
        found from each schema in document order."""
        problems: list[str] = []
        seen: set[frozenset[int]] = set()
        for start in sorted(self.edges, key=self.path):
            for trail, via, ref in self._loops_back_to(start):
                if frozenset(trail) not in seen:
                    seen.add(frozenset(trail))
                    cycle = " -> ".join(f"#{pointer(self.path(node))}" for node in [*trail, start])
                    where = pointer(self.path(start)) or "/"
                    problems.append(f"{via}: {ref!r} loops back to {where} without reading any input ({cycle})")
        return problems

    def _loops_back_to(self, start: int) -> list[tuple[list[int], str, str]]:
        """``(trail, via, ref)`` of each cycle that comes back to ``start`` through a ``$ref``."""
        found: list[tuple[list[int], str, str]] = []
        stack: list[tuple[int, list[int]]] = [(start, [start])]
        visited: set[int] = set()
        while stack:
            here, trail = stack.pop()
            for target, via, ref in self.edges.get(here, []):
                if target == start and via:
                    found.append((trail, via, ref))
                elif target != start and target not in visited and len(visited) < 10_000:
                    visited.add(target)
                    stack.append((target, [*trail, target]))
        return found


def ref_loops(schema: Any) -> list[str]:
    """``$ref`` cycles that read no input, wherever they are (``{"$ref": "#"}`` at the top,
    ``{"properties": {"a": {"$ref": "#/properties/a"}}}``, two ``$defs`` that refer to each
    other directly, through ``allOf`` or through ``$anchor`` names...): a validator following
    one never ends or, as jsonschema-rs does, silently accepts everything there. A loop that
    goes through ``properties``, ``items`` and the like reads one level deeper each time (a
    tree) and is fine. Returns one message per loop, at the pointer of the ``$ref`` that
    closes it, ending with the path of the cycle (``#/$defs/a -> #/$defs/b -> #/$defs/a``)."""
    return _SchemaGraph(schema).loops() if isinstance(schema, Mapping) else []


def _duplicate_ids(document: Mapping[str, Any]) -> list[str]:
    """``$id``s that name a resource another ``$id`` of the document already names (after
    resolving each against the one around it): references to it would be ambiguous, and
    validators would each pick their own."""
    seen: dict[str, str] = {}
    problems: list[str] = []
    stack: list[tuple[Any, str, str]] = [(document, "", "")]
    while stack:
        schema, base, path = stack.pop()
        if not isinstance(schema, Mapping):
            continue
        if isinstance(schema.get("$id"), str):
            base = urljoin(base, schema["$id"]).rstrip("#")
            if base in seen:
                where = seen[base] or "/"
                problems.append(f"{path}/$id: {schema['$id']!r} names the same resource as the $id of {where}")
            seen.setdefault(base, path)
        stack += reversed([(sub, base, sub_path) for sub_path, sub in _subschemas(schema, path)])  # in document order
    return problems


def reference_problems(schema: Any) -> list[str]:
    """Every ``$ref``/``$dynamicRef`` of ``schema`` that is not a reference inside it
    (``http:``, ``https:``, ``file:``, ``urn:``, a file name...) or resolves to nothing, then
    every loop ``ref_loops`` finds; before them, an ``$id`` used twice (``_duplicate_ids``),
    which makes references ambiguous. Messages start with the JSON pointer of the keyword."""
    if not isinstance(schema, Mapping):
        return []
    if duplicates := _duplicate_ids(schema):
        return duplicates
    graph = _SchemaGraph(schema)
    return sorted(graph.problems) + graph.loops()


def stored_schema_problems(schema: Any) -> list[str]:
    """The one check of every JSON Schema the product stores (a capability card's
    ``input_schema``/``output_schema``, a skill's ``llmConfig.functions[].parameters``, an MCP
    tool source's tools' ``inputSchema``). Returns ``["<pointer>: <reason>"]``, empty when
    the schema may be stored:

    - an object or a boolean, nested at most ``MAX_SCHEMA_DEPTH`` levels;
    - valid under the JSON Schema 2020-12 meta-schema;
    - every ``$ref`` inside the schema (nothing is ever fetched: PRD §4.2 注册流程 validates
      a card on its own) and resolving to something;
    - no ``$ref`` cycle that reads no input (``ref_loops``), which would make every value
      pass unchecked; recursive schemas that read deeper (a tree) are fine;
    - compiled by the validator that checks values (``compile_schema``), so nothing stored
      fails later (e.g. two embedded resources with one ``$id``).

    Cards add their own rules on top (``validate_card``)."""
    if isinstance(schema, bool):
        return []
    if not isinstance(schema, Mapping):
        return ["/: a schema must be an object or a boolean"]
    if _depth(schema) > MAX_SCHEMA_DEPTH:
        return [f"nests deeper than {MAX_SCHEMA_DEPTH} levels"]
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        return [f"{pointer(exc.absolute_path) or '/'}: {exc.message}"]
    except RecursionError:
        return ["nests too deeply to check"]
    problems = reference_problems(schema)
    if not problems:
        try:
            compile_schema(schema)
        except Exception as exc:  # jsonschema-rs raises its own ValidationError, ValueError...
            reason = str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__
            problems.append(f"/: the schema cannot be compiled: {reason}")
    return problems


MAX_SCHEMA_DEPTH = 24
"""Deepest nesting of objects/arrays a card schema may have."""
RESERVED_IDS = frozenset({"invoke"})
"""Ids that would clash with API routes under /api/v1/capabilities/."""
TEXT_LIMITS = {"name": 200, "description": 2000}


def _depth(value: Any, level: int = 0) -> int:
    """Nesting depth of a JSON value, stopping early once past MAX_SCHEMA_DEPTH."""
    if level > MAX_SCHEMA_DEPTH:
        return level
    if isinstance(value, Mapping):
        return max((_depth(v, level + 1) for v in value.values()), default=level + 1)
    if isinstance(value, list):
        return max((_depth(v, level + 1) for v in value), default=level + 1)
    return level


_CAPABILITY_ID = re.compile(r"^[a-z][a-z0-9_]{1,63}$")
CARD_REQUIRED = ("id", "name", "description", "category", "input_schema", "output_schema", "version", "owner_roles")


def validate_card(card: Mapping[str, Any], known_roles: set[str] | None = None) -> dict[str, list[str]]:
    """Check a capability card document (PRD §2.2 fields) before registration.

    Returns ``{field: [reasons]}`` with every problem found (empty when the card is valid):
    required fields, id syntax, SemVer version, category (PRD §4.2), owner roles, tools
    (PRD §4.7), timeout (s, 1..3600), schemas that pass ``stored_schema_problems``, of type
    object, without unknown keywords, dangling ``required`` names or unchecked ``format``s.
    """
    errors: dict[str, list[str]] = {}

    def add(name: str, reason: str) -> None:
        errors.setdefault(name, []).append(reason)

    _check_identity(card, add)
    _check_bindings(card, known_roles, add)
    for name in ("input_schema", "output_schema"):
        schema = card.get(name)
        if schema not in (None, "", [], {}):
            _check_card_schema(name, schema, add)
    return errors


def _check_identity(card: Mapping[str, Any], add: Callable[[str, str], None]) -> None:
    """Required fields, the id, the texts, the SemVer version and the category."""
    for name in CARD_REQUIRED:
        if card.get(name) in (None, "", [], {}):
            add(name, "this field is required")
    cap_id = card.get("id")
    if cap_id and (not isinstance(cap_id, str) or not _CAPABILITY_ID.match(cap_id)):
        add("id", "use 2-64 lowercase letters, digits or '_', starting with a letter")
    elif cap_id in RESERVED_IDS:
        add("id", f"{cap_id!r} is reserved")
    for name, limit in TEXT_LIMITS.items():
        value = card.get(name)
        if value not in (None, "") and (not isinstance(value, str) or len(value) > limit):
            add(name, f"must be text of at most {limit} characters")
    version = card.get("version")
    if version and (not isinstance(version, str) or not semver.Version.is_valid(version)):
        add("version", f"{version!r} is not a semantic version such as 1.0.0")
    category = card.get("category")
    if category and category not in CATEGORIES:
        add("category", f"{category!r} is not one of {', '.join(CATEGORIES)}")


def _check_bindings(card: Mapping[str, Any], known_roles: set[str] | None, add: Callable[[str, str], None]) -> None:
    """Owner roles (known ones, when ``known_roles`` is given), tools, timeout and tags."""
    owners = card.get("owner_roles")
    if owners:
        if not isinstance(owners, list) or not all(isinstance(o, str) for o in owners):
            add("owner_roles", "must be a list of role slugs")
        elif known_roles is not None:
            for owner in owners:
                if owner not in known_roles:
                    add("owner_roles", f"unknown role {owner!r}")
    tools = card.get("required_tools", [])
    if not isinstance(tools, list):
        add("required_tools", "must be a list of tool names")
    else:
        for tool in tools:
            if tool not in TOOLS:
                add("required_tools", f"unknown tool {tool!r}; tools are {', '.join(TOOLS)}")
    timeout = card.get("timeout", 60)
    if not isinstance(timeout, int) or isinstance(timeout, bool) or not 1 <= timeout <= 3600:
        add("timeout", "must be a whole number of seconds between 1 and 3600")
    tags = card.get("tags", [])
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        add("tags", "must be a list of strings")


def _check_card_schema(name: str, schema: Any, add: Callable[[str, str], None]) -> None:
    """One of a card's schemas: ``stored_schema_problems`` (the check of every stored
    schema), then the card's own rules: an object schema with properties, no unknown
    keywords, dangling ``required`` names or unchecked formats (``lint_schema``)."""
    if not isinstance(schema, Mapping):
        add(name, "must be a JSON Schema object")
        return
    problems = stored_schema_problems(schema)
    for problem in problems:
        add(name, problem)
    if any(p.startswith(("nests deeper", "nests too deeply")) for p in problems):
        return
    if schema.get("type") != "object":
        add(name, "the top level must be {'type': 'object', ...}")
    elif not isinstance(schema.get("properties"), Mapping) or not schema.get("properties"):
        add(name, "must declare its properties")
    for problem in lint_schema(schema):
        add(name, problem)
