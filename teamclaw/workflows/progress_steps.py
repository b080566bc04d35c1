"""The steps the workflows report as their progress (PRD §4.6 ``current_step``, shown live),
marked for the message catalogs.

The runtime records a step in English, as the agent reported it; a page shows it in its
operator's language (``monitoring.step_labels``). A fixed step is written
``gettext_noop("review written")`` where it is reported; a step with a number in it is one
of ``TEMPLATES`` below, filled with ``%`` (``INTERVIEW_ROUND % {"number": 2}``), so a page
can find the template and the values again. ``gettext_noop`` is the catalogs' keyword
(``makemessages`` finds these strings): it returns the text unchanged, so this module needs
no Django.
"""

from __future__ import annotations


def gettext_noop(text: str) -> str:
    """``text`` unchanged, marked for the message catalogs (module docstring)."""
    return text


INTERVIEW_ROUND = gettext_noop("interview round %(number)s")
REVISION_SAVED = gettext_noop("revision %(revision)s saved")
FILES_READ = gettext_noop("read %(count)s files")
POINTS_FOR_OPERATOR = gettext_noop("%(count)s point(s) for the operator")
EXPERT_ROUND = {
    "review": gettext_noop("review by %(count)s experts"),
    "evaluate": gettext_noop("evaluate by %(count)s experts"),
    "respond": gettext_noop("respond by %(count)s experts"),
}
"""The review round's step by its seed 002 mode."""

TEMPLATES: tuple[str, ...] = (INTERVIEW_ROUND, REVISION_SAVED, FILES_READ, POINTS_FOR_OPERATOR, *EXPERT_ROUND.values())
"""Every step with values in it (``%(name)s``), for the pages to translate."""
