"""Request parsers for the whole API."""

from __future__ import annotations

from typing import Any

from rest_framework import parsers
from rest_framework.exceptions import ParseError


class SafeJSONParser(parsers.JSONParser):
    """DRF's JSON parser, answering 400 instead of 500 for a body nested too deeply to parse."""

    def parse(self, stream: Any, media_type: Any = None, parser_context: Any = None) -> Any:
        try:
            return super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise ParseError("JSON parse error - the document nests too deeply") from None
