"""Request parsers for the whole API."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from rest_framework import parsers
from rest_framework.exceptions import ParseError, ValidationError

from teamclaw.strict_json import JsonRefused, loads


class SafeJSONParser(parsers.JSONParser):
    """DRF's JSON parser through the one bounded parser (``teamclaw.strict_json.loads``):
    400 ``JSON parse error - <reason>`` for a body that is not JSON, nests deeper than
    ``MAX_DEPTH`` levels, or repeats a key; 413 past ``DATA_UPLOAD_MAX_MEMORY_SIZE`` (what
    ``teamclaw.api_errors`` answers for ``RequestDataTooBig``), also for a chunked body; 400 for
    a body holding text that is not valid Unicode (a lone surrogate such as the escape ``\\ud800``, which
    JSON can spell but no database, renderer or model can store), or a NUL character (which
    PostgreSQL text and jsonb refuse). An object that repeats a key is refused naming the key
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
            raise ParseError(f"JSON parse error - {exc}") from None
        try:
            json.dumps(data, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            # Named like any other field error, as a NUL below is.
            path = _text_path(data, _has_surrogate)
            raise ValidationError(
                {path or "non_field_errors": ["holds an unpaired surrogate (not valid Unicode)"]}
            ) from None
        path = _text_path(data, _has_nul)
        if path is not None:  # databases (PostgreSQL text and jsonb) cannot store it
            # Named like any other field error: {"detail": "<field>: ...", "errors": {field: [...]}}.
            raise ValidationError(
                {path or "non_field_errors": ["holds a NUL character (binary data cannot be stored)"]}
            )
        return data


def _has_nul(text: str) -> bool:
    return "\x00" in text


def _has_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _text_path(value: Any, bad: Callable[[str], bool]) -> str | None:
    """Where a string (or a key) in the parsed JSON is ``bad`` (holds U+0000, an unpaired
    surrogate): ``"field.sub[2]"`` (``""`` for the document itself), or None when none is."""
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
