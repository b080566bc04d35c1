"""Serializer fields for the whole API: a JSON value is taken with the type it was sent as.

DRF's own fields coerce: ``CharField`` turns ``123`` into ``"123"``, ``BooleanField`` reads
``"yes"`` and ``1`` as true, ``FloatField`` reads ``"5"`` as 5.0. An operator who sends the
wrong type should hear so (400 naming the field: "must be a string, not a number") instead of
having a number stored as their persona. Every API serializer uses these fields; ruff's
banned-api rule (pyproject.toml) refuses DRF's coercing ones.

A form or multipart body can only carry text, so there booleans and numbers keep DRF's
reading of their text (``"true"``, ``"5"``); strings are strict in every body.

A body's keys are strict too: a key the endpoint does not know is a 400 naming it
(``"unknown field; expected one of: a, b, c"``), never dropped, so a misspelt
``prompt_enhancment`` cannot start a task without its enhancement. ``StrictSerializer`` does
this for every API serializer (ruff's banned-api rule refuses DRF's plain ``Serializer``);
views that read a body by hand use ``refuse_unknown_fields``, and domain checks that list every
problem of a body at once (roles, projects, cards, plugin registrations) add
``unknown_field_errors`` or ``unknown_field_reason`` to theirs. Only the envelope's own keys
are checked: object values (``params``, ``payload``, ``input``, ``config``, ``matrix``...) keep
their own validation (JSON Schemas, matrix and constraint checks), and a configuration import
is a document checked against its own JSON Schema. Form and multipart bodies are checked the
same way, except for Django's ``csrfmiddlewaretoken`` (which a browser form adds and the CSRF
check reads).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.utils import html

from teamclaw.api_parsers import SafeJSONParser
from teamclaw.json_types import json_type_name

JSON_BODY_ONLY = (SafeJSONParser,)
"""``parser_classes`` of a view whose body holds objects, lists or typed values (a matrix,
answers, a card, a role): a form or multipart body cannot carry them, so it is refused as
415 "Unsupported media type" and the API schema documents only ``application/json``. Views
with flat text bodies keep the default parsers (forms and multipart work there)."""

FORM_ONLY_KEYS = frozenset({"csrfmiddlewaretoken"})
"""Keys a browser form adds that no endpoint declares (Django's CSRF check reads them)."""


def sent_as_form(field: Any) -> bool:
    """Whether the body ``field`` reads came from a form or multipart request (text only)."""
    return html.is_html_input(getattr(field.root, "initial_data", None))


class StrictTypeMixin:
    """Refuses a value whose JSON type is not ``json_types`` before the field reads it.

    ``accepts_form_text``: from a form body, text is read the DRF way (forms send no
    booleans or numbers)."""

    json_types: tuple[type, ...] = (str,)
    expected = "a string"
    accepts_form_text = False

    def has_json_type(self, data: Any) -> bool:
        """Whether ``data`` is one of ``json_types`` (a boolean is no number here)."""
        if isinstance(data, bool):
            return bool in self.json_types
        return isinstance(data, self.json_types)

    def to_internal_value(self, data: Any) -> Any:
        form_text = self.accepts_form_text and isinstance(data, str) and sent_as_form(self)
        if not (self.has_json_type(data) or form_text):
            raise serializers.ValidationError(f"must be {self.expected}, not {json_type_name(data)}", code="invalid")
        return super().to_internal_value(data)  # type: ignore[misc]


class StrictCharField(StrictTypeMixin, serializers.CharField):  # noqa: TID251
    """A ``CharField`` that refuses numbers, booleans, arrays and objects."""


class StrictRegexField(StrictTypeMixin, serializers.RegexField):  # noqa: TID251
    """A ``RegexField`` that refuses anything but a string."""


class StrictSlugField(StrictTypeMixin, serializers.SlugField):  # noqa: TID251
    """A ``SlugField`` that refuses anything but a string (``5`` is not the slug ``"5"``)."""


class StrictChoiceField(StrictTypeMixin, serializers.ChoiceField):  # noqa: TID251
    """A ``ChoiceField`` of text choices that refuses anything but a string."""


class StrictBooleanField(StrictTypeMixin, serializers.BooleanField):  # noqa: TID251
    """A ``BooleanField`` that takes JSON ``true``/``false`` only (not ``"yes"``, ``1``)."""

    json_types = (bool,)
    expected = "true or false"
    accepts_form_text = True


class StrictIntegerField(StrictTypeMixin, serializers.IntegerField):  # noqa: TID251
    """An ``IntegerField`` that refuses strings and booleans (``5.0`` is still 5)."""

    json_types = (int, float)
    expected = "a number"
    accepts_form_text = True


class StrictFloatField(StrictTypeMixin, serializers.FloatField):  # noqa: TID251
    """A ``FloatField`` that refuses strings and booleans."""

    json_types = (int, float)
    expected = "a number"
    accepts_form_text = True


def unknown_field_reason(expected: Iterable[str]) -> str:
    """The reason given for a key the body may not have: ``"unknown field; expected one of:
    a, b, c"`` (``expected`` in its order, without repeats)."""
    known = list(dict.fromkeys(expected))
    return f"unknown field; expected one of: {', '.join(known)}" if known else "unknown field; send no fields"


def unknown_field_errors(data: Any, expected: Iterable[str]) -> dict[str, list[str]]:
    """``{key: [unknown_field_reason(expected)]}`` for every top-level key of the body ``data``
    that is not in ``expected`` (in the order sent); ``{}`` when there is none or ``data`` is
    not an object. A form body's ``FORM_ONLY_KEYS`` are not unknown."""
    if not isinstance(data, Mapping):
        return {}
    known = list(dict.fromkeys(expected))
    ignored = FORM_ONLY_KEYS if html.is_html_input(data) else frozenset()
    return {str(key): [unknown_field_reason(known)] for key in data if key not in known and key not in ignored}


def refuse_unknown_fields(data: Any, expected: Iterable[str]) -> None:
    """Raise a ValidationError (400) naming every key of ``data`` outside ``expected``; for
    views that check a body's values by hand or in the domain code they call."""
    errors = unknown_field_errors(data, expected)
    if errors:
        raise serializers.ValidationError(errors, code="unknown")


class StrictSerializer(serializers.Serializer):  # noqa: TID251
    """A ``Serializer`` that refuses keys it has no writable field for (400 naming each one,
    with the fields it expects), reported together with any other field's error."""

    def to_internal_value(self, data: Any) -> Any:
        writable = [name for name, field in self.fields.items() if not field.read_only]
        unknown = unknown_field_errors(data, writable)
        try:
            value = super().to_internal_value(data)
        except serializers.ValidationError as exc:
            if unknown and isinstance(exc.detail, dict):
                raise serializers.ValidationError({**unknown, **exc.detail}) from None
            raise
        if unknown:
            raise serializers.ValidationError(unknown, code="unknown")
        return value


VERSION_REQUIRED = "this field is required: the version you loaded (optimistic concurrency)"


@extend_schema_field({"type": "integer", "minimum": 0})
class DocumentVersionField(serializers.Field):
    """The config document version the client loaded (optimistic concurrency): a whole
    number >= 0, required (``null`` counts as missing)."""

    default_error_messages = {
        "required": VERSION_REQUIRED,
        "null": VERSION_REQUIRED,
        "invalid": "must be a whole number >= 0",
    }

    def to_internal_value(self, data: Any) -> int:
        if isinstance(data, bool) or not isinstance(data, int) or data < 0:
            self.fail("invalid")
        return int(data)

    def to_representation(self, value: Any) -> int:
        return int(value)


NOTE_MAX = 2000
"""Longest change note (characters)."""


@extend_schema_field(OpenApiTypes.STR)
class ChangeNoteField(serializers.Field):
    """The note of a config change: optional text up to ``NOTE_MAX`` characters, stripped
    (an empty or missing note is ``""``)."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("required", False)
        kwargs.setdefault("allow_null", True)
        kwargs.setdefault("default", "")
        super().__init__(**kwargs)

    def validate_empty_values(self, data: Any) -> tuple[bool, Any]:
        if not data:  # missing, null, "" (and a falsy non-string, as before): no note
            return True, ""
        return super().validate_empty_values(data)

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            raise serializers.ValidationError(f"must be a string, not {json_type_name(data)}")
        if len(data) > NOTE_MAX:
            raise serializers.ValidationError(f"must be at most {NOTE_MAX} characters")
        return data.strip()

    def to_representation(self, value: Any) -> str:
        return str(value)


class PassThroughField(serializers.JSONField):
    """A value handed as sent (``null`` included) to the domain check that validates it (a
    matrix, constraint values, a document field): the serializer only says the key exists;
    refusals name paths inside it. A form body's value is its text, as sent: DRF's JSONField
    would parse it as JSON, so ``executor=offline`` would be refused as invalid JSON and
    ``matrix={}`` accepted as an object."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("allow_null", True)
        super().__init__(**kwargs)

    def get_value(self, dictionary: Any) -> Any:
        return dictionary.get(self.field_name, serializers.empty)


class DocumentedField(PassThroughField):
    """A ``PassThroughField`` whose value the API schema describes with ``schema`` (a JSON
        Schema in OpenAPI 3.0's dialect, ``teamclaw.api_docs.DocumentedFieldSchema``): the domain
        check still validates it and names every refusal, the document tells a client in advance
        what that check takes. ``null`` is refused (400 naming the field) unless ``schema`` says
    ``nullable``. ``documented_required``: the domain check refuses a body without
        it ("this field is required"), so the schema lists it as required."""

    def __init__(self, schema: dict[str, Any], *, documented_required: bool = False, **kwargs: Any) -> None:
        kwargs.setdefault("required", False)
        kwargs.setdefault("allow_null", bool(schema.get("nullable")))
        super().__init__(**kwargs)
        self.schema = schema
        self.documented_required = documented_required


NOT_AN_OBJECT = "the body must be a JSON object"


class ObjectBodySerializer(StrictSerializer):
    """A ``StrictSerializer`` whose body must be a JSON object (``non_field_errors``: "the
    body must be a JSON object" otherwise, ``null`` included): the governed config endpoints'
    bodies."""

    def validate_empty_values(self, data: Any) -> tuple[bool, Any]:
        if data is None:
            raise serializers.ValidationError({"non_field_errors": [NOT_AN_OBJECT]})
        return super().validate_empty_values(data)

    def to_internal_value(self, data: Any) -> Any:
        if not isinstance(data, Mapping):
            raise serializers.ValidationError({"non_field_errors": [NOT_AN_OBJECT]})
        return super().to_internal_value(data)


class DocumentSerializer(ObjectBodySerializer):
    """The body of a governed config document (a role, a project, a card).

    The serializer checks the ``envelope`` (the document ``version`` loaded, the change
    ``note``) and hands the document's own keys, as sent and in the order sent, to the domain
    check as ``validated_data["document"]``; that check refuses unknown keys together with its
    other refusals (every problem at once). Declare the document's fields as optional
    ``PassThroughField``s so the API schema shows them (the domain check says which it needs)."""

    envelope: tuple[str, ...] = ("version", "note")

    def to_internal_value(self, data: Any) -> Any:
        if not isinstance(data, Mapping):
            raise serializers.ValidationError({"non_field_errors": [NOT_AN_OBJECT]})
        ignored = FORM_ONLY_KEYS if html.is_html_input(data) else frozenset()
        value = serializers.Serializer.to_internal_value(self, data)  # noqa: TID251  (unknown keys: the domain's)
        clean = {name: value[name] for name in self.envelope if name in value}
        clean["document"] = {key: data[key] for key in data if key not in self.envelope and key not in ignored}
        return clean


def read_body(serializer_class: type[serializers.Serializer], data: Any) -> dict[str, Any]:  # noqa: TID251
    """Validate a request body with ``serializer_class``; its ``validated_data``. Raises the
    serializer's ValidationError (a 400 naming every field at fault)."""
    serializer = serializer_class(data=data)
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)
