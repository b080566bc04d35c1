"""Request parsers for the whole API."""

from __future__ import annotations

import json
from typing import Any

from rest_framework import parsers
from rest_framework.exceptions import ParseError


class SafeJSONParser(parsers.JSONParser):
    """DRF's JSON parser, answering 400 instead of 500 for a body nested too deeply to parse
    or holding text that is not valid Unicode (a lone surrogate such as the escape ``\\ud800``, which
    JSON can spell but no database, renderer or model can store)."""

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
        return data
