"""The page's language for what is not a catalog string: ``{{ value|label:"status" }}``, an
identifier's words (``teamclaw.labels``; ``{{ values|labels:"config" }}`` for a list), and
``card_name``, ``card_description``, ``role_title``: configuration's names in the language
(``capabilities.names``)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django import template
from django.utils.translation import gettext

from capabilities import names
from capabilities.lifecycle import NOTE_TEMPLATES
from capabilities.models import AgentRole, CapabilityCard
from teamclaw import labels as vocabularies

register = template.Library()


@register.filter
def label(value: object, vocabulary: str) -> str:
    """``teamclaw.labels.label``: ``"running"|label:"status"`` -> "running" / "运行中"."""
    return vocabularies.label(value, vocabulary)


@register.filter
def labels(values: Iterable[object] | str | None, vocabulary: str) -> str:
    """``teamclaw.labels.labels``: every value's label, joined with commas."""
    return vocabularies.labels(values, vocabulary)


@register.simple_tag
def colon() -> str:
    """``{% colon %}``: ": " in English, "：" in Chinese (``teamclaw.labels.colon``)."""
    return vocabularies.colon()


@register.simple_tag
def bracket_open() -> str:
    """``{% bracket_open %}``: "(" in English, "（" in Chinese (``teamclaw.labels.brackets``)."""
    return vocabularies.brackets()[0]


@register.simple_tag
def bracket_close() -> str:
    """``{% bracket_close %}``: ")" in English, "）" in Chinese."""
    return vocabularies.brackets()[1]


@register.filter
def bracketed(text: object) -> str:
    """``{{ text|bracketed }}``: "(text)" in English, "（text）" in Chinese
    (``teamclaw.labels.bracketed``; autoescaped like any string)."""
    return vocabularies.bracketed(text)


def _card_field(card: Any, field: str) -> str:
    """A card's ``field`` (name or description) in the active language, for a
    ``CapabilityCard`` or a card document (``{"id", "name", "description"...}``)."""
    if isinstance(card, CapabilityCard):
        return card.shown_name if field == "name" else card.shown_description
    if isinstance(card, dict):
        return names.card_text(str(card.get("id") or card.get("capability_id") or ""), field, card.get(field) or "")
    return str(card or "")


@register.filter
def card_name(card: Any) -> str:
    """``{{ card|card_name }}``: the card's name in the page's language (``capabilities.names``)."""
    return _card_field(card, "name")


@register.filter
def card_description(card: Any) -> str:
    """``{{ card|card_description }}``: the card's description in the page's language."""
    return _card_field(card, "description")


@register.filter
def role_title(role: Any) -> str:
    """``{{ role|role_title }}``: a role's display name in the page's language, for an
    ``AgentRole``, a role document (``{"role", "display_name"...}``) or a slug."""
    if isinstance(role, AgentRole):
        return role.shown_name
    if isinstance(role, dict):
        return names.role_name(str(role.get("role") or ""), role.get("display_name") or "")
    if hasattr(role, "role") and hasattr(role, "display_name"):  # a page's own record of a role
        return names.role_name(str(role.role), str(role.display_name))
    return names.role_name(str(role or ""))


@register.filter
def note(text: str) -> str:
    """An audit row's note in the page's language when the system wrote it (a fixed note,
    ``teamclaw.labels`` "note", or one of ``capabilities.lifecycle.NOTE_TEMPLATES``, whose
    operation is worded too); an operator's note as written."""
    text = str(text or "")
    if text in vocabularies.VOCABULARIES["note"]:
        return vocabularies.label(text, "note")
    found = vocabularies.reword(text, NOTE_TEMPLATES)
    if found is None:
        return text
    template, values = found
    if "operation" in values:
        values["operation"] = vocabularies.label(values["operation"], "skill action")
    return gettext(template) % values
