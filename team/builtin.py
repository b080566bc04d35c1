"""Load the built-in team into the database, idempotently: roles, cards, both matrices and
constraints (``capabilities.builtin``) and each role's six prompt templates
(``prompts.builtin``).

Only missing rows are created: anything that already exists is left exactly as the operator
last saved it. Loading anything bumps the config version once, audited as ``builtin``.
"""

from __future__ import annotations

from django.db import transaction

from capabilities.builtin import load_builtin_team
from capabilities.config import record_change
from prompts.builtin import load_builtin_prompts


def load_builtin() -> dict[str, int]:
    """Create whatever built-in rows are missing, in one transaction; returns the rows created
    per kind: ``{roles, cards, invoke_cells, tool_cells, constraints, prompts}``.

    Raises ValueError if a built-in card is invalid (a packaging bug, caught by the tests).
    """
    with transaction.atomic():
        team = load_builtin_team()
        created = {**team.created, "prompts": load_builtin_prompts(team.roles)}
        if any(created.values()):
            record_change(
                "builtin",
                changed_fields=[k for k, v in created.items() if v],
                changes={k: {"old": None, "new": v} for k, v in created.items() if v},
                note="built-in TeamClaw team loaded",
            )
    return created
