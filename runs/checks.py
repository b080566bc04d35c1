"""System checks of the review's Django side: the requirement-quality rule files are refused
at start-up, not at the first review (issue 27; docs/review-rules.md)."""

from __future__ import annotations

from typing import Any

from django.core import checks

from teamclaw.workflows import quality_rules


@checks.register()
def review_rule_files(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """``runs.E001`` naming the file, the rule and the reason when a rule file of
    ``teamclaw/workflows/rule_files`` cannot be loaded (unknown category, a pattern that does
    not compile, a language without its texts...)."""
    try:
        quality_rules.load_rules(quality_rules.RULES_DIR)
    except quality_rules.RuleFileError as error:
        return [checks.Error(f"review rule file refused: {error}", id="runs.E001")]
    return []
