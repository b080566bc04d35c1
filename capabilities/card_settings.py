"""Edit a capability card's settings and switch it on/off, globally or per project (US-06).

PRD §4.8 热加载场景 3 "运行时启用/禁用特定能力": a disabled card is refused at invoke time
with ``capability_disabled`` from the next task start. Globally an operator may also change
``name``, ``description``, ``timeout`` (s, 1..3600), ``tags`` and ``owner_roles``; a project
may only switch ``enabled`` (``null`` = inherit the global value). Cards of a skill package
are governed by the skill's lifecycle (seed 003) and refused here.

The document version of a card is ``document_version`` (a card's ``version`` is its SemVer).
"""

from __future__ import annotations

from typing import Any

from django.db import transaction

from capabilities.errors import ConfigInvalid, Problems
from capabilities.matrices import SaveResult
from capabilities.models import AgentRole, CapabilityCard, Project, ProjectCapabilityOverride
from capabilities.registry import card_document
from capabilities.snapshot import governance_snapshot
from capabilities.switches import set_enabled_override
from capabilities.versions import commit_change, document_version, expect_version, lock_config
from teamclaw.api_fields import unknown_field_reason
from teamclaw.plain_text import hidden_character_problem

EDITABLE_FIELDS = ("enabled", "name", "description", "timeout", "tags", "owner_roles")
EDIT_REQUEST_FIELDS = ("document_version", *EDITABLE_FIELDS, "note")
"""The keys of an edit request (the caller takes ``document_version`` and ``note``); any other
key, read-only fields such as ``input_schema`` included, is refused."""
MAX_TAGS = 20


def capability_document(
    card: CapabilityCard, project: Project | None = None, document: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The card as ``project`` sees it (PRD §2.2 fields; ``document`` when the caller already
    built it) plus ``document_version``, ``global_enabled`` and, for a project,
    ``project_enabled`` (``None`` = inherits)."""
    if document is None:
        document = card_document(governance_snapshot(project).cards[card.capability_id])
    doc = dict(document)
    doc["document_version"] = document_version(f"capability:{card.capability_id}", project)
    doc["global_enabled"] = card.enabled
    if project is not None:
        override = ProjectCapabilityOverride.objects.filter(project=project, card=card).first()
        doc["project_enabled"] = override.enabled if override else None
    return doc


def check_card_edit(card: CapabilityCard, data: Any, project: Project | None) -> dict[str, Any]:
    """Validate an edit of ``card``; returns the cleaned fields. Raises ConfigInvalid."""
    if not isinstance(data, dict):
        raise ConfigInvalid({"non_field_errors": ["expected an object"]})
    problems = Problems()
    if card.skill is not None:
        problems.add(
            "capability",
            f"{card.capability_id} belongs to skill {card.skill.skill_id}; its skill's lifecycle governs it",
        )
        problems.raise_if_any()
    clean: dict[str, Any] = {}
    for name in data:
        if name not in EDITABLE_FIELDS:
            problems.add(name, unknown_field_reason(EDIT_REQUEST_FIELDS))
        elif project is not None and name != "enabled":
            problems.add(name, "only 'enabled' can be set per project; edit the other fields globally")
    if "enabled" in data:
        value = data["enabled"]
        if value is None and project is not None:
            clean["enabled"] = None
        elif isinstance(value, bool):
            clean["enabled"] = value
        else:
            problems.add("enabled", "must be true or false" + (" (or null to inherit)" if project else ""))
    if project is None:
        _check_global_fields(data, problems, clean)
    problems.raise_if_any()
    return clean


def _check_global_fields(data: dict[str, Any], problems: Problems, clean: dict[str, Any]) -> None:
    """The fields a card has globally only: name, description, timeout (s), tags, owners."""
    for name, limit in (("name", 200), ("description", 5000)):
        if name in data:
            value = data[name]
            if not isinstance(value, str) or not value.strip():
                problems.add(name, "must be a non-blank string")
            elif len(value) > limit:
                problems.add(name, f"must be at most {limit} characters")
            elif reason := hidden_character_problem(value):
                problems.add(name, reason)
            else:
                clean[name] = value.strip()
    if "timeout" in data:
        value = data["timeout"]
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 3600:
            problems.add("timeout", "must be a whole number of seconds between 1 and 3600")
        else:
            clean["timeout_s"] = value
    if "tags" in data:
        value = data["tags"]
        if not isinstance(value, list) or not all(isinstance(t, str) and 0 < len(t) <= 50 for t in value):
            problems.add("tags", "must be a list of strings of 1-50 characters")
        elif len(value) > MAX_TAGS:
            problems.add("tags", f"at most {MAX_TAGS} tags")
        else:
            clean["tags"] = list(dict.fromkeys(value))
    if "owner_roles" in data:
        value = data["owner_roles"]
        known = set(AgentRole.objects.values_list("role", flat=True))
        if not isinstance(value, list) or not value or not all(isinstance(r, str) for r in value):
            problems.add("owner_roles", "must be a non-empty list of role slugs")
        else:
            for role in value:
                if role not in known:
                    problems.add("owner_roles", f"unknown role {role!r}")
            clean["owner_roles"] = sorted(set(value))


def update_capability(
    card: CapabilityCard,
    *,
    project: Project | None,
    version: int | None,
    data: Any,
    note: str = "",
    actor: Any = None,
) -> SaveResult:
    """Edit ``card`` or switch it for ``project`` as one change (US-06, PRD §4.8).

    ``version`` is the card's ``document_version``. Raises ConfigInvalid or StaleVersion.
    """
    clean = check_card_edit(card, data, project)
    name = f"capability:{card.capability_id}"
    with transaction.atomic():
        lock_config()
        expect_version(name, project, version)
        card = CapabilityCard.objects.filter(pk=card.pk).first() or _gone(card)
        prefix = f"capabilities.{card.capability_id}"
        changes: dict[str, dict[str, Any]] = {}
        if project is None:
            owners = clean.pop("owner_roles", None)
            for field, value in clean.items():
                if getattr(card, field) != value:
                    key = "timeout" if field == "timeout_s" else field
                    changes[f"{prefix}.{key}"] = {"old": getattr(card, field), "new": value}
                    setattr(card, field, value)
            if changes:
                card.save()
            if owners is not None:
                old = sorted(card.owner_roles.values_list("role", flat=True))
                if old != owners:
                    card.owner_roles.set(AgentRole.objects.filter(role__in=owners))
                    changes[f"{prefix}.owner_roles"] = {"old": old, "new": owners}
        elif "enabled" in clean:
            switched = set_enabled_override(
                ProjectCapabilityOverride, project, "card", card, card.enabled, clean["enabled"]
            )
            if switched:
                changes[f"{prefix}.enabled"] = switched
        change = commit_change("capability", documents=[name], changes=changes, project=project, note=note, actor=actor)
    return SaveResult(change, capability_document(card, project))


def _gone(card: CapabilityCard) -> CapabilityCard:
    raise ConfigInvalid({"capability": [f"capability {card.capability_id!r} no longer exists"]})
