"""How a requirement review's phase and quality checks read on a page, in its language; the
API and the artifacts keep the identifiers (``monitoring.outcome.task_phase``, the quality
check of ``teamclaw.workflows.consolidation``)."""

from __future__ import annotations

import re
from collections.abc import Iterable

from django import template
from django.utils.translation import gettext, gettext_lazy

from teamclaw.labels import list_separator

register = template.Library()

PHASE_LABELS = {
    "interview": gettext_lazy("phase: interview"),
    "draft": gettext_lazy("phase: draft"),
    "review": gettext_lazy("phase: review"),
    "decisions": gettext_lazy("phase: decisions"),
    "done": gettext_lazy("phase: done"),
    "ended": gettext_lazy("phase: ended"),
}
"""Whole badges ("phase: done"), not bare words: a phase is an identifier, and the catalog's
bare "done" is an agent's progress step, translated only where one is shown
(``monitoring.step_labels``)."""
CHECK_LABELS = {
    "structure": gettext_lazy("structure"),
    "clarity": gettext_lazy("clarity"),
    "objectivity": gettext_lazy("objectivity"),
    "consistency": gettext_lazy("consistency"),
    "closure": gettext_lazy("closure"),
    "completeness": gettext_lazy("completeness"),
    "unresolved": gettext_lazy("unresolved points"),
}


@register.filter
def phase_label(phase: str) -> str:
    """``done`` -> "phase: done" / "阶段：已完成"; an unknown phase after "phase:"."""
    return str(PHASE_LABELS.get(phase) or f"{gettext('phase:')} {phase}")


@register.filter
def check_labels(names: Iterable[str]) -> str:
    """Quality check names, translated and joined by the language's list separator
    (``teamclaw.labels.list_separator``: "、" in Chinese)."""
    return list_separator().join(str(CHECK_LABELS.get(name, name)) for name in names or ())


DOCUMENT_TITLES = (
    (re.compile(r"^requirement\.md$"), gettext_lazy("The requirement as submitted")),
    (re.compile(r"^requirement\.v(?P<version>\d+)\.md$"), gettext_lazy("Requirement draft, version %(version)s")),
    (re.compile(r"^requirement_final\.md$"), gettext_lazy("Final document")),
    (
        re.compile(r"^requirement_final\.r(?P<version>\d+)\.md$"),
        gettext_lazy("Revised final document, version %(version)s"),
    ),
)
"""A review's documents by file name (``teamclaw.workflows.revision``; ``requirement.vN.md``
are the draft's revisions): ``(pattern, title)`` rows, the title formatted with the
pattern's groups."""


@register.filter
def document_title(name: str) -> str:
    """``{{ "requirement_final.r1.md"|document_title }}`` -> "Revised final document, version 1"
    / "修订后的最终文档，第 1 版"; another artifact's name is returned as it is."""
    for pattern, title in DOCUMENT_TITLES:
        match = pattern.match(str(name))
        if match:
            return str(title) % match.groupdict()
    return str(name)
