"""Strict JSON parsing hooks shared by the API's parser (``teamclaw.api_parsers``) and the
configuration documents (``capabilities.safe_yaml.load_json``): an object may name a key only
once, and ``NaN`` / ``Infinity`` are not JSON numbers, nor is a number too large for a float
(``1e400``, which Python would read as infinity)."""

from __future__ import annotations

import math
from typing import Any


class DuplicateKey(ValueError):
    """A JSON object names ``key`` twice (``str``: ``duplicate key 'key'``)."""

    def __init__(self, key: str) -> None:
        super().__init__(f"duplicate key {key!r}")
        self.key = key


def refuse_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``json.loads(object_pairs_hook=...)``: the object as a dict; DuplicateKey when a key repeats."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise DuplicateKey(key)
        out[key] = value
    return out


def refuse_constant(name: str) -> Any:
    """``json.loads(parse_constant=...)``: ValueError for ``NaN``, ``Infinity``, ``-Infinity``."""
    raise ValueError(f"{name} is not a JSON number")


def finite_float(text: str) -> float:
    """``json.loads(parse_float=...)``: the number as a float; ValueError when it is too large
    to be one (``1e400`` would be infinity, which JSON cannot spell back)."""
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text} is too large in magnitude for a JSON number (at most about 1.8e308)")
    return value
