"""Serializer fields for the whole API: a JSON value is taken with the type it was sent as.

DRF's own fields coerce: ``CharField`` turns ``123`` into ``"123"``, ``BooleanField`` reads
``"yes"`` and ``1`` as true, ``FloatField`` reads ``"5"`` as 5.0. An operator who sends the
wrong type should hear so (400 naming the field: "must be a string, not a number") instead of
having a number stored as their persona. Every API serializer uses these fields; ruff's
banned-api rule (pyproject.toml) refuses DRF's coercing ones.

A form or multipart body can only carry text, so there booleans and numbers keep DRF's
reading of their text (``"true"``, ``"5"``); strings are strict in every body.
"""

from __future__ import annotations

from typing import Any

from rest_framework import serializers
from rest_framework.utils import html

from teamclaw.json_types import json_type_name


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
