"""Agents' progress steps in the page's language (PRD §4.6 ``current_step``).

The runtime records each step in English, as it was reported (``teamclaw.runtime.progress``
for the runtime's own steps, ``teamclaw.workflows.progress_steps`` for the workflows'); the
context cards and the inspector show it through ``step_label``. Only those steps are
translated: a fixed one (``FIXED_STEPS``) is looked up in the message catalog, and one with
values in it (``interview round 2``) is matched against the templates and the translation is
filled with the same values. A capability id (recorded while its call starts, and left as
the step when the call ends) reads as its card's name in the page's language
(``capabilities.names.card_text``: "需求质量检查", not ``requirement_quality_check``).
Anything else (a model's streamed text, a custom workflow's words) is shown as recorded,
even when it happens to be a catalog entry ("search", "draft").
"""

from __future__ import annotations

import re
from functools import cache

from django.utils.translation import gettext

from capabilities.names import card_text
from monitoring.task_replay import snapshot_step
from teamclaw.labels import VOCABULARIES, label
from teamclaw.runtime.progress import RUNTIME_TEMPLATES, SNAPSHOT_FIXED, SNAPSHOT_TEMPLATES
from teamclaw.workflows.progress_steps import FIXED_STEPS, TEMPLATES

PLACEHOLDER = re.compile(r"%\((\w+)\)s")
NUMERIC = frozenset({"number", "revision", "count", "round", "rounds", "attempt"})
"""Placeholders that always hold a whole number (matched as digits only)."""


@cache
def _patterns(kind: str = "step") -> list[tuple[re.Pattern[str], str]]:
    """Each template of ``kind`` (``step`` or ``snapshot``) as a pattern matching the texts
    made from it."""
    patterns = []
    for template in (*TEMPLATES, *RUNTIME_TEMPLATES) if kind == "step" else SNAPSHOT_TEMPLATES:
        parts = PLACEHOLDER.split(template)  # text, name, text, name, ..., text
        regex = "".join(
            re.escape(part) if i % 2 == 0 else (rf"(?P<{part}>[0-9]+)" if part in NUMERIC else rf"(?P<{part}>.+?)")
            for i, part in enumerate(parts)
        )
        patterns.append((re.compile(f"^{regex}$", re.DOTALL), template))
    return patterns


def step_label(step: str) -> str:
    """``step`` in the active language (module docstring); ``step`` itself when it is none
    of the reported steps or its catalog entry does not fit. Never raises."""
    if not step:
        return step
    if step in FIXED_STEPS:
        return gettext(step)
    shown = _filled(step, "step")
    return card_text(step, "name", step) if shown == step else shown


def _filled(text: str, kind: str) -> str:
    """``text`` translated through the first template of ``kind`` it was made from, else
    ``text`` itself."""
    for pattern, template in _patterns(kind):
        match = pattern.match(text)
        if match is not None:
            try:
                return gettext(template) % match.groupdict()
            except (KeyError, ValueError, TypeError):  # a catalog entry with other placeholders
                return text
    return text


def snapshot_words(text: str) -> str:
    """A snapshot's trigger or label (PRD §4.6: ``start``, ``before invoke X``, a status,
    ``ok``, ``final state``...) in the active language (``teamclaw.runtime.progress``
    ``SNAPSHOT_*``); anything else (an operator's instruction, an error's code) as recorded.
    Never raises."""
    if not text:
        return text
    if text in SNAPSHOT_FIXED:
        return gettext(text)
    if text in VOCABULARIES["status"]:
        return label(text, "status")
    if text in VOCABULARIES["round"]:  # a call's snapshot is labelled with its round
        return label(text, "round")
    kind, shown = snapshot_step(text)  # the triggers of a call, a tool use, an operator wait
    return shown if kind != "snapshot" else _filled(text, "snapshot")
