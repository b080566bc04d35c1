"""Who may change prompts (PRD §4.5): viewing needs a login; saving, rolling back and
activating versions needs the staff flag or the ``prompts.add_promptversion`` permission."""

from __future__ import annotations

from typing import Any

EDIT_PERMISSION = "prompts.add_promptversion"


def can_edit_prompts(user: Any) -> bool:
    """Staff, or a user granted ``prompts.add_promptversion``."""
    return bool(user and user.is_authenticated and (user.is_staff or user.has_perm(EDIT_PERMISSION)))
