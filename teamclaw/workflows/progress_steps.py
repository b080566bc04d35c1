"""The steps the workflows report as their progress (PRD §4.6 ``current_step``, shown live),
marked for the message catalogs (``teamclaw.runtime.progress``: the marker and the
runtime's own steps).

A workflow reports one of the constants below, a template filled with ``%``
(``INTERVIEW_ROUND % {"number": 2}``); the pages translate exactly these
(``monitoring.step_labels``), never any other text that happens to be a catalog entry.
"""

from __future__ import annotations

from teamclaw.runtime.progress import gettext_noop

REVIEWING = gettext_noop("reviewing the requirement")
REVIEW_WRITTEN = gettext_noop("review written")
EVALUATING = gettext_noop("evaluating the other reviews")
EVALUATION_WRITTEN = gettext_noop("evaluation written")
RESPONDING = gettext_noop("responding to the evaluations")
RESPONSE_WRITTEN = gettext_noop("response written")
ENDED_AFTER_DRAFT = gettext_noop("ended after the draft")
CONSOLIDATING = gettext_noop("consolidating")
CONSOLIDATING_OPERATOR_DECIDES = gettext_noop("consolidating: the operator decides")
QUALITY_CHECK = gettext_noop("quality check")
SAVING = gettext_noop("saving to the project folder")
DONE = gettext_noop("done")
DONE_WITH_FINDINGS = gettext_noop("done, with findings")
PM_ANALYSIS = gettext_noop("analysis by the product manager")
WRITING_REQUIREMENT = gettext_noop("writing requirement.md")

FIXED_STEPS = frozenset(
    {
        REVIEWING,
        REVIEW_WRITTEN,
        EVALUATING,
        EVALUATION_WRITTEN,
        RESPONDING,
        RESPONSE_WRITTEN,
        ENDED_AFTER_DRAFT,
        CONSOLIDATING,
        CONSOLIDATING_OPERATOR_DECIDES,
        QUALITY_CHECK,
        SAVING,
        DONE,
        DONE_WITH_FINDINGS,
        PM_ANALYSIS,
        WRITING_REQUIREMENT,
    }
)
"""Every fixed step the workflows report."""

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
"""Every step with values in it (``%(name)s``) the workflows report."""
