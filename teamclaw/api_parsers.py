"""Request parsers for the whole API."""

from __future__ import annotations

import codecs
import json
from collections.abc import Callable
from typing import Any

from django.conf import settings
from rest_framework import parsers
from rest_framework.exceptions import ParseError, ValidationError

from teamclaw.strict_json import DuplicateKey, finite_float, refuse_constant, refuse_duplicate_keys


class SafeJSONParser(parsers.JSONParser):
    """DRF's JSON parser, answering 400 instead of 500 for a body nested too deeply to parse
    or holding text that is not valid Unicode (a lone surrogate such as the escape ``\\ud800``, which
    JSON can spell but no database, renderer or model can store), or a NUL character (which
    PostgreSQL text and jsonb refuse). An object that repeats a key is refused naming the key
    (``duplicate key 'enabled'``) instead of letting the last value silently win, as the YAML
    and JSON documents (``capabilities.safe_yaml``) are; ``NaN`` and ``Infinity`` are refused
    as DRF's strict parser does."""

    def parse(self, stream: Any, media_type: Any = None, parser_context: Any = None) -> Any:
        encoding = (parser_context or {}).get("encoding", settings.DEFAULT_CHARSET)
        try:
            data = json.load(
                codecs.getreader(encoding)(stream),
                object_pairs_hook=refuse_duplicate_keys,
                parse_constant=refuse_constant,
                parse_float=finite_float,
            )
        except DuplicateKey as exc:
            reason = f"JSON parse error - duplicate key {exc.key!r}: an object may name a key only once"
            raise ParseError({"non_field_errors": [reason]}) from None
        except RecursionError:
            raise ParseError("JSON parse error - the document nests too deeply") from None
        except ValueError as exc:
            raise ParseError(f"JSON parse error - {exc}") from None
        try:
            json.dumps(data, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            # Named like any other field error, as a NUL below is.
            path = _text_path(data, _has_surrogate)
            raise ValidationError(
                {path or "non_field_errors": ["holds an unpaired surrogate (not valid Unicode)"]}
            ) from None
        except RecursionError:
            raise ParseError("JSON parse error - the document nests too deeply") from None
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
