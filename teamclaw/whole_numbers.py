"""Whole numbers read from text (a query parameter, a form field, a header, a path part): the
one reading every app uses, so no entry point turns ``int(...)`` into a 500.

``str.isdigit`` is no test for ``int``: ``"²".isdigit()`` is True while ``int("²")`` raises,
and text of more than 4,300 digits is past Python's int-conversion limit. A whole number here
is 1 to ``MAX_DIGITS`` ASCII digits (``0``-``9``; no sign, blank, ``²`` or ``١٢``), which fits
a 64-bit database column. It imports nothing of Django, so every layer (the runtime included)
may use it.

- ``whole_number_or_none(raw)``: the int, or None when ``raw`` is no whole number;
- ``whole_number_problem(raw, minimum, maximum)``: why ``raw`` is not one in the bounds
  (``"must be a whole number from 0 to 999999999999999999"``), or None;
- ``whole_number(raw, field, minimum, maximum)``: the int, else ``InvalidField`` (400) naming
  ``field`` with that reason.
"""

from __future__ import annotations

from teamclaw.errors import InvalidField

MAX_DIGITS = 18
"""Most digits a whole number read from text may have (``10**18 - 1`` fits a signed 64-bit column)."""

LARGEST = 10**MAX_DIGITS - 1
"""The largest whole number ``MAX_DIGITS`` digits spell, the default upper bound."""


def whole_number_or_none(raw: str) -> int | None:
    """``raw`` as an int when it is 1 to ``MAX_DIGITS`` ASCII digits, else None."""
    if isinstance(raw, str) and 0 < len(raw) <= MAX_DIGITS and raw.isascii() and raw.isdigit():
        return int(raw)
    return None


def whole_number_problem(raw: str, minimum: int = 0, maximum: int = LARGEST) -> str | None:
    """Why ``raw`` is not a whole number from ``minimum`` to ``maximum`` (one English
    sentence naming the bounds), or None when it is one."""
    value = whole_number_or_none(raw)
    if value is None or not minimum <= value <= maximum:
        return f"must be a whole number from {minimum} to {maximum}"
    return None


def whole_number(raw: str, field: str, *, minimum: int = 0, maximum: int = LARGEST) -> int:
    """``raw`` as an int from ``minimum`` to ``maximum``.

    Raises InvalidField (400, ``{field: ["must be a whole number from <minimum> to
    <maximum>"]}``) when ``raw`` is not 1 to ``MAX_DIGITS`` ASCII digits or is out of bounds."""
    problem = whole_number_problem(raw, minimum, maximum)
    if problem is not None:
        raise InvalidField(problem, field)
    return int(raw)
