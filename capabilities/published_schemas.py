"""The published JSON Schemas of operator documents and checking documents against them.

``schemas/skill-index.schema.json`` (seed 003 "skill-index.yaml 完整Schema") and
``schemas/orchestration.schema.json`` (seed 003 "编排配置") are served at
``GET /api/v1/skills/schema`` and ``GET /api/v1/workflows/schema``. ``schema_problems``
turns every jsonschema error into a ``YamlProblem`` with the dotted path and line of the
offending value and a reason an operator can act on ("this field is required", "unknown
field 'capabilites'; did you mean 'capabilities'?", "YAML reads 1.10 as a number ...").
"""

from __future__ import annotations

import difflib
import json
from functools import cache
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError

from capabilities.strict_yaml import YamlDocument, YamlProblem, join_path, type_hint, yaml11_boolean

SCHEMA_DIR = Path(__file__).resolve().parent / "schemas"

_JSON_TYPES = {
    bool: "a boolean",
    int: "a number",
    float: "a number",
    str: "text",
    list: "a list",
    dict: "a mapping",
    type(None): "empty (null)",
}
_PATTERN_REASONS = {
    "semver": "is not a semantic version such as 1.0.0",
    "address": "is not an address of the form cap://<skillId>/<capabilityName>[?query]",
}


@cache
def load_schema(name: str) -> dict[str, Any]:
    """The published schema ``schemas/<name>.schema.json`` (checked against 2020-12 once)."""
    schema = json.loads((SCHEMA_DIR / f"{name}.schema.json").read_text(encoding="utf-8"))
    Draft202012Validator.check_schema(schema)
    return schema


@cache
def _validator(name: str) -> Draft202012Validator:
    return Draft202012Validator(load_schema(name))


def _path(parts: Any) -> str:
    path = ""
    for part in parts:
        path = join_path(path, part)
    return path


def _describe(value: Any) -> str:
    return _JSON_TYPES.get(type(value), type(value).__name__)


def _reason(error: ValidationError, path: str, document: YamlDocument) -> tuple[str, str]:
    """``(path, reason)`` for one jsonschema error."""
    kind = error.validator
    instance = error.instance
    if kind == "required":
        missing = str(error.message).split("'")[1] if "'" in str(error.message) else ""
        return join_path(path, missing) if missing else path, "this field is required"
    if kind == "additionalProperties" and isinstance(instance, dict):
        allowed = sorted((error.schema.get("properties") or {}).keys())
        extra = [key for key in instance if key not in allowed]
        name = extra[0] if extra else "?"
        guess = difflib.get_close_matches(name, allowed, n=1)
        hint = f"; did you mean {guess[0]!r}?" if guess else (f"; expected {', '.join(allowed)}" if allowed else "")
        return join_path(path, name), f"unknown field {name!r}{hint}"
    if kind == "type":
        expected = error.validator_value
        source = document.typed_scalars.get(path)
        if source is not None and expected == "string":
            return path, type_hint(source, "string")
        if isinstance(instance, str) and expected == "boolean" and yaml11_boolean(instance) is not None:
            meant = "true" if yaml11_boolean(instance) else "false"
            return path, (
                f"{instance} is a boolean only in YAML 1.1; here it is the text {instance!r}. "
                f"Write {meant} (or true/false)"
            )
        if isinstance(instance, str) and expected == "boolean":
            return path, f"{instance!r} is text, not a boolean: write true or false (unquoted)"
        if isinstance(instance, str) and expected in ("integer", "number"):
            return path, f"{instance!r} is text, not a number: write it without quotes"
        wanted = expected if isinstance(expected, str) else " or ".join(expected)
        return (
            path,
            f"must be {wanted.replace('object', 'a mapping').replace('array', 'a list')}, not {_describe(instance)}",
        )
    if kind == "enum":
        options = ", ".join(str(o) for o in error.validator_value)
        if isinstance(instance, str) and instance.upper() in error.validator_value:
            return path, f"{instance!r} is not one of {options} (they are upper case)"
        return path, f"{instance!r} is not one of {options}"
    if kind == "pattern":
        for ref, reason in _PATTERN_REASONS.items():
            if error.schema is load_schema("skill-index")["$defs"].get(ref):
                return path, f"{instance!r} {reason}"
        description = error.schema.get("description")
        return path, f"{instance!r} is not allowed here" + (f" ({description})" if description else "")
    if kind in ("minLength", "minItems", "minProperties") and not instance:
        return path, "must not be empty"
    return path, str(error.message)


def schema_problems(document: YamlDocument, name: str) -> list[YamlProblem]:
    """Every way ``document.data`` breaks the published schema ``name``, sorted by line.

    One problem per path and reason; paths are dotted (``skill.capabilities[0].type``)."""
    problems: dict[tuple[str, str], YamlProblem] = {}
    for error in _validator(name).iter_errors(document.data):
        if error.validator in ("if", "then", "else"):
            continue
        path, reason = _reason(error, _path(error.absolute_path), document)
        problems.setdefault((path, reason), YamlProblem(path, document.line_of(path), reason))
    return sorted(problems.values(), key=lambda p: (p.line, p.path))
