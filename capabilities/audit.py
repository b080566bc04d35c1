"""Reading the audit trail (PRD §4.8 ConfigChangeEvent plus who, when and why).

``ConfigChange`` rows are written only by ``capabilities.config.record_change``; this module
filters and shapes them for the API and the audit page.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.db.models import Q, QuerySet

from capabilities.errors import Problems
from capabilities.models import ConfigChange
from teamclaw.whole_numbers import whole_number_problem

CONFIG_TYPES = tuple(value for value, _label in ConfigChange.CONFIG_TYPES)


OUTCOMES = tuple(value for value, _label in ConfigChange.OUTCOMES)


def filter_changes(params: Mapping[str, Any]) -> QuerySet[ConfigChange]:
    """ConfigChange rows (applied changes and refused attempts), newest first, filtered by
    ``outcome`` (applied or refused), ``config_type``, ``project`` (a slug, or ``global``),
    ``role``, ``actor`` (username), ``since_version`` and ``q`` (in the note or the changed
    fields). Raises ConfigInvalid naming a bad filter."""
    problems = Problems()
    rows = ConfigChange.every.select_related("actor", "project").order_by("-new_version", "-id")
    outcome = params.get("outcome") or ""
    if outcome:
        if outcome not in OUTCOMES:
            problems.add("outcome", f"must be one of {', '.join(OUTCOMES)}")
        rows = rows.filter(outcome=outcome)
    config_type = params.get("config_type") or ""
    if config_type:
        if config_type not in CONFIG_TYPES:
            problems.add("config_type", f"must be one of {', '.join(CONFIG_TYPES)}")
        rows = rows.filter(config_type=config_type)
    project = params.get("project") or ""
    if project == "global":
        rows = rows.filter(project__isnull=True)
    elif project:
        rows = rows.filter(project__slug=project)
    if role := params.get("role") or "":
        rows = rows.filter(role=role)
    if actor := params.get("actor") or "":
        rows = rows.filter(actor__username=actor)
    since = params.get("since_version") or ""
    if since:
        if problem := whole_number_problem(str(since)):
            problems.add("since_version", problem)
        else:
            rows = rows.filter(new_version__gt=int(since))
    if q := (params.get("q") or "").strip():
        rows = rows.filter(Q(note__icontains=q) | Q(changed_fields__icontains=q))
    problems.raise_if_any()
    return rows


def change_document(change: ConfigChange) -> dict[str, Any]:
    """One audit row: ``{id, outcome, config_type, role, project, old_version, new_version,
    changed_fields, changes, note, actor, created_at, refusal}`` (``refusal``: why a refused
    attempt was refused, ``null`` for an applied change)."""
    return {
        "id": change.pk,
        "outcome": change.outcome,
        "config_type": change.config_type,
        "role": change.role,
        "project": change.project.slug if change.project_id and change.project else None,
        "old_version": change.old_version,
        "new_version": change.new_version,
        "changed_fields": list(change.changed_fields),
        "changes": change.changes,
        "note": change.note,
        "actor": change.actor.get_username() if change.actor else None,
        "created_at": change.created_at.isoformat(),
        "refusal": change.refusal if change.outcome == ConfigChange.REFUSED else None,
    }
