"""Registering plugin capabilities through the API (US-12; PRD §4.2 注册流程).

A card is validated before it joins the index: every problem is reported at once (unknown
keys, fields, SemVer, category, owners, tools, 2020-12 schemas without unknown keywords or
dangling ``required`` names). A plugin runs on the ``http`` executor: the server POSTs params to the
card's URL, whose host must be listed in TEAMCLAW_HTTP_EXECUTOR_ALLOWED_HOSTS, so a
registration can never make the server call an arbitrary address. ``idempotent`` (default
false) says calling the plugin twice does no harm: only then is a failure after the request
was sent (a 500, a dropped connection, a read timeout) retried. The card's ``name`` and
``description`` are plain text (``teamclaw.plain_text``: no control or bidirectional control
characters), as every name the pages list is.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction

from capabilities.config import record_change
from capabilities.executors import plugin_url_errors
from capabilities.models import AgentRole, CapabilityCard
from teamclaw.api_fields import unknown_field_errors
from teamclaw.errors import DomainError
from teamclaw.plain_text import hidden_character_problem
from teamclaw.runtime.schemas import CARD_REQUIRED, validate_card

CARD_FIELDS = (*CARD_REQUIRED, "required_tools", "timeout", "tags", "executor", "executor_config", "idempotent")
"""The keys a registered card may have (PRD §2.2 fields plus its executor); any other is refused."""
PLAIN_TEXT_FIELDS = ("name", "description")
"""The card's texts the registry and the pages show (PRD §2.2): plain text only."""


class RegistrationError(DomainError):
    """The card was refused: ``errors`` is ``{field: [reasons]}``; ``status`` 400, or 409 when
    the id is taken; the message names the first field and its first reason."""

    def __init__(self, errors: dict[str, list[str]], status: int = 400) -> None:
        field, reasons = next(iter(errors.items()))
        super().__init__(f"{field}: {reasons[0]}", errors=errors, status=status)


def register_capability(document: dict[str, Any], *, actor: Any = None, note: str = "") -> CapabilityCard:
    """Create a plugin card from ``document`` (the PRD §2.2 fields plus ``executor_config.url``).

    Raises RegistrationError(400) listing every problem (a key outside ``CARD_FIELDS`` is one),
    or (409) when the id is taken.
    """
    known = set(AgentRole.objects.values_list("role", flat=True))
    errors = {**unknown_field_errors(document, CARD_FIELDS), **validate_card(document, known)}
    for name in PLAIN_TEXT_FIELDS:
        value = document.get(name)
        if isinstance(value, str) and (reason := hidden_character_problem(value)):
            errors.setdefault(name, []).append(reason)
    executor = document.get("executor", "http")
    if executor != "http":
        errors.setdefault("executor", []).append("plugins registered through the API run on the http executor")
    if not isinstance(document.get("idempotent", False), bool):
        errors.setdefault("idempotent", []).append(
            "must be true or false: true when calling the plugin twice does no harm (failures after the "
            "request was sent are then retried)"
        )
    config = document.get("executor_config") or {}
    if not isinstance(config, dict):
        errors.setdefault("executor_config", []).append("must be an object with a url")
    else:
        if not config.get("url"):
            errors.setdefault("executor_config.url", []).append("an http capability needs the URL to POST to")
        else:
            for reason in plugin_url_errors(config.get("url")):
                errors.setdefault("executor_config.url", []).append(reason)
        timeout = config.get("timeout_s", 60)
        if not isinstance(timeout, int) or isinstance(timeout, bool) or not 1 <= timeout <= 3600:
            errors.setdefault("executor_config.timeout_s", []).append("must be a whole number of seconds, 1 to 3600")
        extra = set(config) - {"url", "timeout_s"}
        if extra:
            errors.setdefault("executor_config", []).append(f"unknown keys: {', '.join(sorted(extra))}")
    if errors:
        raise RegistrationError(errors)
    with transaction.atomic():
        if CapabilityCard.objects.select_for_update().filter(capability_id=document["id"]).exists():
            raise RegistrationError({"id": [f"capability {document['id']!r} already exists"]}, status=409)
        card = CapabilityCard.objects.create(
            capability_id=document["id"],
            name=document["name"],
            description=document["description"],
            category=document["category"],
            input_schema=document["input_schema"],
            output_schema=document["output_schema"],
            version=document["version"],
            required_tools=document.get("required_tools", []),
            timeout_s=document.get("timeout", 60),
            tags=document.get("tags", []),
            executor="http",
            idempotent=document.get("idempotent", False),
            executor_config={
                "url": config["url"],
                **({"timeout_s": config["timeout_s"]} if "timeout_s" in config else {}),
            },
        )
        card.owner_roles.set(AgentRole.objects.filter(role__in=document["owner_roles"]))
        record_change(
            "capability",
            changed_fields=["capability_id", "owner_roles", "executor"],
            changes={"capability_id": {"old": None, "new": card.capability_id}},
            role=",".join(document["owner_roles"])[:40],
            note=note or "plugin capability registered",
            actor=actor,
        )
    return card
