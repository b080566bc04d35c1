"""The progress steps the runtime itself reports (PRD §4.6 ``current_step``, shown live),
marked for the message catalogs, and the marker the workflows use for theirs
(``teamclaw.workflows.progress_steps``).

The runtime records a step in English, as it was reported; a page shows it in its operator's
language (``monitoring.step_labels``). A step with values in it is one of the templates
here, filled with ``%`` (``MODEL_ROUND % {"what": ..., "round": 1, "rounds": 3}``), so a page
can find the template and the values again. ``gettext_noop`` is the catalogs' keyword
(``makemessages`` finds these strings): it returns the text unchanged, so no Django is
needed here.
"""

from __future__ import annotations


def gettext_noop(text: str) -> str:
    """``text`` unchanged, marked for the message catalogs (module docstring)."""
    return text


MODEL_ROUND = gettext_noop("%(what)s: model round %(round)s/%(rounds)s")
REPAIRING = gettext_noop("%(what)s: repairing the answer")
ANSWERED = gettext_noop("%(what)s: answered")
ANSWERED_DROPPING = gettext_noop("%(what)s: answered, %(count)s invalid item(s) dropped")
CALLING_PLUGIN = gettext_noop("calling plugin at %(url)s")
RESUMED = gettext_noop("its worker stopped; the task resumed (attempt %(attempt)s)")

RUNTIME_TEMPLATES: tuple[str, ...] = (MODEL_ROUND, REPAIRING, ANSWERED, ANSWERED_DROPPING, CALLING_PLUGIN, RESUMED)
"""The runtime's steps with values in them (``%(name)s``), for the pages to translate."""

# What triggered a snapshot and its label (PRD §4.6), recorded in English like the steps.
SNAPSHOT_START = gettext_noop("start")
SNAPSHOT_FINAL = gettext_noop("final state")
BEFORE_INVOKE = gettext_noop("before invoke %(capability)s")
AFTER_INVOKE = gettext_noop("after invoke %(capability)s")
KNOWLEDGE_FOR = gettext_noop("knowledge for %(capability)s")
SNAPSHOT_FIXED: frozenset[str] = frozenset({SNAPSHOT_START, SNAPSHOT_FINAL})
"""Snapshot triggers and labels without values (statuses, ``ok`` and ``error`` are worded
as statuses by the pages)."""
SNAPSHOT_TEMPLATES: tuple[str, ...] = (BEFORE_INVOKE, AFTER_INVOKE, KNOWLEDGE_FOR)
"""Snapshot triggers with a capability id in them."""
