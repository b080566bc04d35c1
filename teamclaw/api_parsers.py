"""Request parsers for the whole API."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from rest_framework import parsers
from rest_framework.exceptions import ParseError, ValidationError

from teamclaw.strict_json import SURROGATE, JsonRefused, loads, text_path


class SafeJSONParser(parsers.JSONParser):
    """DRF's JSON parser through the one bounded parser (``teamclaw.strict_json.loads``):
    400 ``JSON parse error - <reason>`` for a body that is not JSON, nests deeper than
    ``MAX_DEPTH`` levels, or repeats a key; 413 past ``DATA_UPLOAD_MAX_MEMORY_SIZE`` (what
    ``teamclaw.api_errors`` answers for ``RequestDataTooBig``), also for a chunked body; 400
    for a body holding text that is not valid Unicode (a lone surrogate such as the escape
    ``\\ud800``, which ``loads`` refuses naming where it is) or a NUL character (which
    PostgreSQL text and jsonb refuse), named as a field error. One leading BOM is ignored, as
    ``loads`` does everywhere. An object that repeats a key is refused naming the key
    (``duplicate key 'enabled'``) instead of letting the last value silently win, as the YAML
    and JSON documents (``capabilities.safe_yaml``) are; ``NaN`` and ``Infinity`` are refused
    as DRF's strict parser does."""

    def parse(self, stream: Any, media_type: Any = None, parser_context: Any = None) -> Any:
        encoding = (parser_context or {}).get("encoding", settings.DEFAULT_CHARSET)
        limit = int(settings.DATA_UPLOAD_MAX_MEMORY_SIZE)
        raw = stream.read(limit + 1)
        try:
            text = raw.decode(encoding)
        except (UnicodeDecodeError, LookupError) as exc:
            raise ParseError(f"JSON parse error - the body is not {encoding} text ({exc})") from None
        try:
            data = loads(text, max_bytes=limit)
        except JsonRefused as exc:
            if exc.reason == "too_large":  # a body sent without Content-Length (chunked)
                raise RequestDataTooBig(exc.message) from None
            if exc.reason == "duplicate_key":
                raise ParseError({"non_field_errors": [f"JSON parse error - {exc}"]}) from None
            if exc.path is not None:  # an unpaired surrogate: named like any other field error
                raise ValidationError({exc.path or "non_field_errors": [SURROGATE]}) from None
            raise ParseError(f"JSON parse error - {exc}") from None
        path = text_path(data, _has_nul)
        if path is not None:  # databases (PostgreSQL text and jsonb) cannot store it
            # Named like any other field error: {"detail": "<field>: ...", "errors": {field: [...]}}.
            raise ValidationError(
                {path or "non_field_errors": ["holds a NUL character (binary data cannot be stored)"]}
            )
        return data


def _has_nul(text: str) -> bool:
    return "\x00" in text
