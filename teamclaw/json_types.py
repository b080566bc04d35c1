"""What JSON calls a parsed value's type, for refusals that say what was sent instead
("must be a string, not a number")."""

from __future__ import annotations

from typing import Any


def json_type_name(value: Any) -> str:
    """The JSON type of ``value`` with its article: ``"a number"``, ``"an object"``, ``"null"``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list | tuple):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return f"a {type(value).__name__}"
