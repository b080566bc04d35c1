"""The capability registry (PRD §4.2): search and filter cards, one card, switch or edit it
(US-06), register a plugin capability (US-12)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.exceptions import NotFound, PermissionDenied, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from capabilities.access import CanChangeConfig
from capabilities.card_settings import capability_document, update_capability
from capabilities.errors import StaleVersion
from capabilities.models import CAPABILITY_ID, CapabilityCard
from capabilities.registration import register_capability
from capabilities.registry import card_document, filter_capabilities
from team.config_schema import SEMVER
from teamclaw import api_fields, plain_text
from teamclaw.api_query import query_parameters
from teamclaw.runtime.config import CATEGORIES, TOOLS, CapabilityType
from teamclaw.runtime.schemas import CARD_REQUIRED, RESERVED_IDS, TEXT_LIMITS
from web.api.governance import PROJECT_PARAM, RefusalAudit, with_current
from web.api.lookup import found
from web.scope import project_scope, scoped_snapshot


class CapabilityEditSerializer(api_fields.DocumentSerializer):
    """A card edit or switch (US-06); ``document_version`` is the concurrency field (a card's
    ``version`` is its SemVer)."""

    envelope = ("document_version", "note")
    document_version = api_fields.DocumentVersionField(help_text="The document version you loaded.")
    enabled = api_fields.PassThroughField(required=False)
    name = api_fields.PassThroughField(required=False)
    description = api_fields.PassThroughField(required=False)
    timeout = api_fields.PassThroughField(required=False)
    tags = api_fields.PassThroughField(required=False)
    owner_roles = api_fields.PassThroughField(required=False)
    note = api_fields.ChangeNoteField()


ASCII_SEMVER = SEMVER.replace("\\d", "[0-9]")
"""``team.config_schema.SEMVER`` with ASCII digits only (``semver`` reads no other digits)."""
_CARD_SCHEMA_FIELD = {
    "type": "object",
    "required": ["type", "properties"],
    "properties": {
        "type": {"type": "string", "enum": ["object"]},
        "properties": {"type": "object", "minProperties": 1},
    },
    "description": "A JSON Schema (2020-12) of an object that declares its properties. It is checked against the "
    "meta-schema, and unknown keywords, required names it does not declare, formats nothing checks and $ref loops "
    "are refused (400 naming this field).",
}
PLUGIN_CARD_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": [*CARD_REQUIRED, "executor_config"],
    "properties": {
        "id": {
            "type": "string",
            "pattern": CAPABILITY_ID,
            "not": {"enum": sorted(RESERVED_IDS)},
            "description": "The new card's id; an id a card has is refused with 409.",
        },
        **{
            name: {"type": "string", "minLength": 1, "maxLength": limit, "pattern": plain_text.PLAIN_TEXT_PATTERN}
            for name, limit in TEXT_LIMITS.items()
        },
        "category": {"type": "string", "enum": list(CATEGORIES)},
        "input_schema": _CARD_SCHEMA_FIELD,
        "output_schema": _CARD_SCHEMA_FIELD,
        "version": {"type": "string", "pattern": ASCII_SEMVER},
        "owner_roles": {
            "type": "array",
            "minItems": 1,
            "items": {"type": "string"},
            "description": "Roles that offer it: each must exist (400 naming owner_roles otherwise).",
        },
        "required_tools": {"type": "array", "items": {"type": "string", "enum": list(TOOLS)}},
        "timeout": {"type": "integer", "minimum": 1, "maximum": 3600, "description": "Seconds; default 60."},
        "tags": {"type": "array", "items": {"type": "string"}},
        "executor": {"type": "string", "enum": ["http"]},
        "executor_config": {
            "type": "object",
            "additionalProperties": False,
            "required": ["url"],
            "properties": {
                "url": {
                    "type": "string",
                    "minLength": 1,
                    "description": "The URL to POST to: http(s) on a host of TEAMCLAW_HTTP_EXECUTOR_ALLOWED_HOSTS "
                    "(this server's setting; 400 naming executor_config.url otherwise).",
                },
                "timeout_s": {"type": "integer", "minimum": 1, "maximum": 3600},
            },
        },
        "idempotent": {"type": "boolean", "description": "Calling it twice does no harm (then retried)."},
    },
}
"""A plugin card as ``capabilities.registration.register_capability`` takes it (PRD §2.2 fields
and its http executor, US-12); any other key is refused."""


class CapabilityListView(RefusalAudit):
    """The registry: every capability card, filtered by ``role``, ``category``, ``q`` (search),
    ``skillId`` and ``type`` (ENTRY/EXPOSED/INTERNAL); POST registers a plugin card (US-12, staff)."""

    parser_classes = api_fields.JSON_BODY_ONLY

    refusal_types = {"POST": "capability"}

    @extend_schema(operation_id="capabilities_list", responses=OpenApiTypes.OBJECT)
    @query_parameters(
        PROJECT_PARAM,
        OpenApiParameter("role", str),
        OpenApiParameter("category", str, enum=list(CATEGORIES)),
        OpenApiParameter("q", str, description="Keyword in id, name, description or tags; empty: no filter."),
        OpenApiParameter("skillId", str),
        OpenApiParameter("type", str, enum=[t.value for t in CapabilityType]),
    )
    def get(self, request: Request) -> Response:
        params = request.query_params
        category = params.get("category", "")
        capability_type = params.get("type", "")
        snapshot = scoped_snapshot(request)
        cards = filter_capabilities(
            snapshot,
            role=params.get("role", ""),
            category=category,
            q=params.get("q", ""),
            skill_id=params.get("skillId", ""),
            capability_type=capability_type,
        )
        return Response({"count": len(cards), "capabilities": [card_document(c) for c in cards]})

    @extend_schema(request={"application/json": PLUGIN_CARD_SCHEMA}, responses={201: OpenApiTypes.OBJECT})
    def post(self, request: Request) -> Response:
        if not request.user.is_staff:
            raise PermissionDenied("registering capabilities needs a staff account")
        if not isinstance(request.data, dict):
            raise ValidationError({"non_field_errors": ["send a JSON object (a capability card)"]})
        card = register_capability(dict(request.data), actor=request.user)
        return Response(card_document(card), status=201)


CAPABILITY_ID_PARAM = OpenApiParameter(
    "capability_id",
    {"type": "string", "not": {"enum": sorted(RESERVED_IDS)}},
    OpenApiParameter.PATH,
    description="A card's id; never a reserved one (`invoke` is the route POST /capabilities/invoke).",
)


class CapabilityDetailView(RefusalAudit):
    """One capability card; PATCH edits it or switches it on/off (``?project=``, US-06)."""

    parser_classes = api_fields.JSON_BODY_ONLY

    permission_classes = [CanChangeConfig]
    config_actions = {"PATCH": "capability"}

    @extend_schema(parameters=[CAPABILITY_ID_PARAM, PROJECT_PARAM], responses=OpenApiTypes.OBJECT)
    def get(self, request: Request, capability_id: str) -> Response:
        snapshot = scoped_snapshot(request)
        card = snapshot.cards.get(capability_id)
        if card is None:
            raise NotFound(f"capability '{capability_id}' does not exist")
        body: dict[str, Any] = card_document(card)
        return Response(capability_get(request, capability_id, body))

    @extend_schema(
        parameters=[CAPABILITY_ID_PARAM, PROJECT_PARAM], request=OpenApiTypes.OBJECT, responses=OpenApiTypes.OBJECT
    )
    def patch(self, request: Request, capability_id: str) -> Response:
        return capability_patch(request, capability_id)


def capability_get(request: Request, capability_id: str, document: dict[str, Any]) -> dict[str, Any]:
    """The card plus its ``document_version`` and enabled layers."""
    card = found(CapabilityCard, "capability", capability_id=capability_id)
    return capability_document(card, project_scope(request), document)


def capability_patch(request: Request, capability_id: str) -> Response:
    """``PATCH /api/v1/capabilities/{id}?project=``: edit a card or switch it (US-06).
    The concurrency field is ``document_version`` (``version`` is the card's SemVer)."""
    card = CapabilityCard.objects.filter(capability_id=capability_id).first()
    if card is None:
        raise NotFound(f"capability '{capability_id}' does not exist")
    project = project_scope(request)
    data = api_fields.read_body(CapabilityEditSerializer, request.data)
    try:
        result = update_capability(
            card,
            project=project,
            version=data["document_version"],
            data=data["document"],
            note=data["note"],
            actor=request.user,
        )
    except StaleVersion as exc:
        raise with_current(exc, capability_document(card, project)) from None
    return Response({**result.document, "changed": bool(result.change)})
