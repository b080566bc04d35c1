"""Names and titles an operator sets that the pages show in lists (a task's title, a role's
display name, a project's name, a card's name, a snapshot's label...) are plain text: no
control characters (tab and line ends aside) and no bidirectional controls, which would let
an entry disguise itself or the entries after it (a right-to-left override, U+202E).

``hidden_character_problem`` is the one check; each layer turns its answer into its own
refusal (400 naming the field): ``runs.tasks.check_plain_text``, the role, project and card
checks in ``capabilities``, the configuration import in ``team``.
"""

from __future__ import annotations

import re

HIDDEN_CHARACTERS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\u200e\u200f\u202a-\u202e\u2066-\u2069]")
"""Control characters (all but tab and line ends) and bidirectional controls (LRM, RLM, the
embeddings, overrides and isolates)."""


def hidden_character_problem(value: str) -> str | None:
    """Why ``value`` is not plain text (which character, and where), or None."""
    found = HIDDEN_CHARACTERS.search(value)
    if found is None:
        return None
    return f"holds an invisible control character (U+{ord(found.group(0)):04X} at position {found.start()}); remove it"


_HIDDEN = HIDDEN_CHARACTERS.pattern[1:-1]
PLAIN_TEXT_PATTERN = f"^[^{_HIDDEN}]*$"
"""JSON Schema ``pattern`` of plain text (what ``hidden_character_problem`` passes), for the
API schema of the fields it checks."""
NON_BLANK_PLAIN_TEXT_PATTERN = f"^[^{_HIDDEN}]*[^{_HIDDEN}\\s][^{_HIDDEN}]*$"
"""JSON Schema ``pattern`` of plain text holding something other than white space (a name
that must not be blank once stripped)."""
