"""The English indefinite article for a name put into a message ("an ACTIVATED skill",
"a pm", "an urgent message"), so messages built from states, roles and types read right."""

from __future__ import annotations

_CONSONANT_SOUND = ("unique", "unit", "union", "unif", "univ", "unic", "use", "usu", "uti", "one", "eu")
"""Beginnings written with a vowel but said with a consonant ("a unit", "a user")."""
_SILENT_H = ("hour", "honest", "honor", "honour", "heir")
"""Beginnings written with a consonant but said with a vowel ("an hour")."""


def article(word: str) -> str:
    """``"an"`` when ``word`` (any case) starts with a vowel sound, else ``"a"``.

    Decided by the spelling: a vowel letter means a vowel sound, apart from the few
    beginnings above; letters read one by one ("an HTTP executor") are not recognised."""
    lowered = str(word).strip().lower()
    if lowered.startswith(_SILENT_H):
        return "an"
    if not lowered or lowered[0] not in "aeiou" or lowered.startswith(_CONSONANT_SOUND):
        return "a"
    return "an"


def with_article(word: str) -> str:
    """``word`` after its indefinite article: ``with_article("ERROR")`` is ``"an ERROR"``."""
    return f"{article(word)} {word}"
