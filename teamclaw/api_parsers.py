"""Request parsers for the whole API."""

from __future__ import annotations

import json
from typing import Any

from rest_framework import parsers
from rest_framework.exceptions import ParseError


class SafeJSONParser(parsers.JSONParser):
    """DRF's JSON parser, answering 400 instead of 500 for a body nested too deeply to parse
    or holding text that is not valid Unicode (a lone surrogate such as the escape ``\\ud800``, which
    JSON can spell but no database, renderer or model can store), or a NUL character (which
    PostgreSQL text and jsonb refuse)."""

    def parse(self, stream: Any, media_type: Any = None, parser_context: Any = None) -> Any:
        try:
            data = super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise ParseError("JSON parse error - the document nests too deeply") from None
        try:
            json.dumps(data, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            raise ParseError("JSON parse error - a string holds an unpaired surrogate (not valid Unicode)") from None
        except RecursionError:
            raise ParseError("JSON parse error - the document nests too deeply") from None
        if _holds_nul(data):  # databases (PostgreSQL text and jsonb) cannot store it
            raise ParseError("JSON parse error - a string holds a NUL character")
        return data


def _holds_nul(value: Any) -> bool:
    """True when a string (or a key) anywhere in the parsed JSON contains U+0000."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if "\x00" in item:
                return True
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False
