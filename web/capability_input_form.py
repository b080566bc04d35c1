"""A form built from a capability's ``input_schema`` (JSON Schema 2020-12, PRD §4.2 能力卡片),
so an operator can try an ENTRY capability from the dashboard (seed 003: ENTRY capabilities
are the user-facing entry points).

``input_fields(schema)`` gives one field per top-level property, in declared order:

- ``string`` -> a text input, ``number`` / ``integer`` -> a number input,
  ``boolean`` -> a choice of true / false (unset is not false), any ``enum`` -> a select of
  its values;
- anything else (objects, arrays, ``anyOf``, no ``type``) -> a JSON textarea.

``read_params(schema, post)`` turns the posted form back into params and checks them with
``jsonschema`` (the validator the runtime uses, so the form never accepts what the invoke
would refuse): ``(params, errors)`` where ``errors`` maps a property name (or ``"params"``
for the object itself) to its reasons. An empty optional field is left out; an empty
required one is reported by the schema's own ``required`` check.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.utils.translation import gettext
from jsonschema import Draft202012Validator

from teamclaw.strict_json import loads

FIELD_PREFIX = "param:"
"""Posted field names are ``param:<property>`` so they never clash with the form's own."""

SIMPLE_TYPES = ("string", "number", "integer", "boolean")


@dataclass(frozen=True, slots=True)
class InputField:
    """One form field for the property ``name``: ``widget`` is ``text``, ``number``,
    ``boolean``, ``enum`` or ``json``; ``choices`` the enum's values as posted strings (JSON
    for non-strings); ``step`` ``1`` for integers, ``any`` for numbers."""

    name: str
    widget: str
    required: bool
    description: str
    json_type: str
    choices: tuple[str, ...] = ()
    step: str = ""

    @property
    def html_name(self) -> str:
        """The posted field's name (``param:<property>``)."""
        return FIELD_PREFIX + self.name


def _enum_value(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _field(name: str, prop: Any, required: bool) -> InputField:
    prop = prop if isinstance(prop, Mapping) else {}
    kind = prop.get("type")
    description = str(prop.get("description") or prop.get("title") or "")
    if isinstance(prop.get("enum"), list) and prop["enum"]:
        choices = tuple(_enum_value(v) for v in prop["enum"])
        return InputField(name, "enum", required, description, str(kind or "enum"), choices)
    if kind not in SIMPLE_TYPES:
        return InputField(name, "json", required, description, str(kind or "any"))
    if kind == "boolean":
        return InputField(name, "boolean", required, description, kind, ("true", "false"))
    if kind in ("number", "integer"):
        return InputField(name, "number", required, description, kind, step="1" if kind == "integer" else "any")
    return InputField(name, "text", required, description, kind)


def input_fields(schema: Any) -> list[InputField]:
    """The form fields of ``schema``'s top-level ``properties`` (module docstring). A schema
    that is not an object with properties gives no field (the form then offers one JSON
    textarea for the whole params: ``whole_params_field``)."""
    if not isinstance(schema, Mapping) or not isinstance(schema.get("properties"), Mapping):
        return []
    required = set(schema.get("required") or ())
    return [_field(str(name), prop, name in required) for name, prop in schema["properties"].items()]


WHOLE_PARAMS = "params"
"""The posted name of the JSON textarea used when the schema has no properties to list."""


def loads_strict(text: str) -> Any:
    """The one bounded JSON parser (``teamclaw.strict_json.loads``: no duplicate keys, no
    NaN / Infinity, at most ``MAX_DEPTH`` levels and ``DATA_UPLOAD_MAX_MEMORY_SIZE`` bytes);
    ``JsonRefused`` (a ValueError) on text it refuses."""
    return loads(text, max_bytes=int(settings.DATA_UPLOAD_MAX_MEMORY_SIZE))


def _parse(field: InputField, raw: str, errors: dict[str, list[str]]) -> tuple[bool, Any]:
    """``(present, value)`` of one posted field; a value that cannot be read adds a reason."""
    if raw == "":
        return False, None
    if field.widget == "enum":
        for value, posted in zip(_enum_values(field), field.choices, strict=True):
            if posted == raw:
                return True, value
        errors.setdefault(field.name, []).append(gettext("is not one of the listed values"))
        return False, None
    if field.widget == "boolean":
        if raw in ("true", "false"):
            return True, raw == "true"
        errors.setdefault(field.name, []).append(gettext("must be true or false"))
        return False, None
    if field.widget == "number":
        try:
            number = float(raw)
        except ValueError:
            errors.setdefault(field.name, []).append(gettext("is not a number"))
            return False, None
        if field.json_type == "integer":
            if not number.is_integer():
                errors.setdefault(field.name, []).append(gettext("must be a whole number"))
                return False, None
            return True, int(number)
        if number != number or number in (float("inf"), float("-inf")):
            errors.setdefault(field.name, []).append(gettext("is not a finite number"))
            return False, None
        return True, int(number) if number.is_integer() and "." not in raw and "e" not in raw.lower() else number
    if field.widget == "json":
        try:
            return True, loads_strict(raw)
        except ValueError as exc:
            errors.setdefault(field.name, []).append(gettext("is not JSON: %(reason)s") % {"reason": exc})
            return False, None
    return True, raw


def _enum_values(field: InputField) -> tuple[Any, ...]:
    """The enum's values in their JSON types, read back from the posted strings."""
    values = []
    for posted in field.choices:
        if field.json_type == "string":
            values.append(posted)
            continue
        try:
            values.append(loads_strict(posted))
        except ValueError:
            values.append(posted)
    return tuple(values)


def read_params(schema: Any, post: Mapping[str, str]) -> tuple[dict[str, Any], dict[str, list[str]]]:
    """The params an operator posted for ``schema`` and what is wrong with them:
    ``(params, {property or "params": [reason]})`` (module docstring). The reasons come from
    ``jsonschema`` (Draft 2020-12) once every field could be read."""
    errors: dict[str, list[str]] = {}
    fields = input_fields(schema)
    params: dict[str, Any] = {}
    if not fields:
        raw = (post.get(WHOLE_PARAMS) or "").strip() or "{}"
        try:
            whole = loads_strict(raw)
        except ValueError as exc:
            return {}, {WHOLE_PARAMS: [gettext("is not JSON: %(reason)s") % {"reason": exc}]}
        if not isinstance(whole, dict):
            return {}, {WHOLE_PARAMS: [gettext("must be a JSON object")]}
        params = whole
    for field in fields:
        present, value = _parse(field, post.get(field.html_name, ""), errors)
        if present:
            params[field.name] = value
    if errors:
        return params, errors
    if isinstance(schema, Mapping):
        for name in schema.get("required") or ():
            if name not in params:
                errors.setdefault(str(name), []).append(gettext("is required"))
        for error in Draft202012Validator(schema).iter_errors(params):
            if error.validator == "required" and not error.path:
                continue  # told above, by field
            where = str(error.path[0]) if error.path else WHOLE_PARAMS
            if fields and where not in {f.name for f in fields}:
                where = WHOLE_PARAMS
            errors.setdefault(where, []).append(error.message)
    return params, errors
