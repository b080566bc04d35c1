"""System checks of the review's Django side: the requirement-quality rule files and domain packs are refused
at start-up, not at the first review (issue 27; docs/review-rules.md)."""

from __future__ import annotations

from typing import Any

from django.core import checks

from teamclaw.workflows import domain_packs, quality_rules


@checks.register()
def review_rule_files(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    """``runs.E001`` naming the file, its line, the rule and the reason when a rule file of
    ``teamclaw/workflows/rule_files`` or a domain pack of ``teamclaw/workflows/pack_files``
    cannot be loaded (unknown category, a pattern that does not compile, a language without
    its texts...)."""
    try:
        rules = quality_rules.load_rules(quality_rules.RULES_DIR)
        domain_packs.load_packs(domain_packs.PACKS_DIR, (rule.id for rule in rules.rules))
    except quality_rules.RuleFileError as error:
        return [checks.Error(f"review rule file refused: {error}", id="runs.E001")]
    return []
