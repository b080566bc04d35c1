"""Agents' progress steps in the page's language (PRD §4.6 ``current_step``).

The runtime records each step in English, as the workflow reported it
(``teamclaw.workflows.progress_steps``); the context cards and the inspector show it through
``step_label``: a fixed step is looked up in the message catalog as it is, and a step with
values in it (``interview round 2``) is matched against the workflows' ``TEMPLATES``, whose
translation is then filled with the same values. A step no catalog knows (a model's streamed
text, a plugin's URL, a custom workflow's words) is shown as it was recorded.
"""

from __future__ import annotations

import re
from functools import cache

from django.utils.translation import gettext

from teamclaw.workflows.progress_steps import TEMPLATES

PLACEHOLDER = re.compile(r"%\((\w+)\)s")


@cache
def _patterns() -> list[tuple[re.Pattern[str], str]]:
    """Each template as a pattern that matches the steps made from it (values: digits)."""
    patterns = []
    for template in TEMPLATES:
        parts = PLACEHOLDER.split(template)  # text, name, text, name, ..., text
        regex = "".join(re.escape(part) if i % 2 == 0 else rf"(?P<{part}>\d+)" for i, part in enumerate(parts))
        patterns.append((re.compile(f"^{regex}$"), template))
    return patterns


def step_label(step: str) -> str:
    """``step`` in the active language (module docstring); ``step`` itself when no catalog
    entry fits. Never raises."""
    if not step:
        return step
    translated = gettext(step)
    if translated != step:
        return translated
    for pattern, template in _patterns():
        match = pattern.match(step)
        if match is not None:
            try:
                return gettext(template) % match.groupdict()
            except (KeyError, ValueError, TypeError):  # a catalog entry with other placeholders
                return step
    return step
