"""Strict JSON parsing hooks shared by the API's parser (``teamclaw.api_parsers``) and the
configuration documents (``capabilities.safe_yaml.load_json``): an object may name a key only
once, and ``NaN`` / ``Infinity`` are not JSON numbers."""

from __future__ import annotations

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
