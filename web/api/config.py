"""The configuration as a whole: its audit trail (PRD §4.8), export, import (US-10) and the
import document's JSON Schema."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.exceptions import ValidationError
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.renderers import BaseRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from capabilities.audit import CONFIG_TYPES, OUTCOMES, change_document, filter_changes
from capabilities.models import ConfigChange
from capabilities.safe_yaml import guess_format, load_document, max_config_bytes
from team.config_export import dump, export_document
from team.config_import import import_config
from team.config_schema import config_document_schema
from team.revert import find_change, revert, revert_preview
from teamclaw import api_fields
from teamclaw.api_docs import openapi_dialect
from teamclaw.api_errors import error_response
from teamclaw.api_query import StrictPagination, flag, query_parameters
from teamclaw.whole_numbers import whole_number_or_none
from web.api.governance import PROJECT_PARAM, GovernanceView
from web.scope import project_scope


class ChangePagination(StrictPagination):
    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 200


class ConfigChangeListView(GovernanceView):
    """The audit trail (PRD §4.8), newest first, 50 a page: who, when, type, role, project,
    old -> new version, changed fields, ``changes {field: {old, new}}`` and the note.
    Filters: ``config_type``, ``project``, ``role``, ``actor``, ``since_version``."""

    @extend_schema(responses=OpenApiTypes.OBJECT)
    @query_parameters(
        OpenApiParameter("outcome", str, enum=list(OUTCOMES)),
        OpenApiParameter("config_type", str, enum=list(CONFIG_TYPES)),
        OpenApiParameter("project", str, description="Project slug, or 'global' for global changes only."),
        OpenApiParameter("role", str),
        OpenApiParameter("actor", str, description="Username"),
        OpenApiParameter("since_version", int, description="Only changes with a newer version."),
        OpenApiParameter("q", str, description="Text in the note or the changed fields; empty or blank: no filter."),
        paginated=True,
    )
    def get(self, request: Request) -> Response:
        rows = filter_changes(request.query_params)
        paginator = ChangePagination()
        page = paginator.paginate_queryset(rows, request, view=self)
        return paginator.get_paginated_response([change_document(c) for c in page or []])


class DocumentFormatNegotiation(DefaultContentNegotiation):
    """Here ``?format=`` names the document format (yaml/json), not a DRF renderer:
    answer with the default (JSON) renderer whatever it says."""

    def select_renderer(
        self, request: Request, renderers: Iterable[BaseRenderer], format_suffix: str | None = None
    ) -> tuple[BaseRenderer, str]:
        first = next(iter(renderers))
        return first, first.media_type


class ConfigSchemaView(APIView):
    """The JSON Schema (2020-12) of import/export documents (US-10)."""

    @extend_schema(responses=OpenApiTypes.OBJECT)
    def get(self, request: Request) -> Response:
        return Response(config_document_schema())


class ConfigExportView(APIView):
    """Export roles, capabilities, matrices, constraints and prompts as YAML or JSON (US-10):
    globally, or one project's overrides (``?project=``); ``history=true`` adds every prompt
    version. Never contains executor settings or any secret."""

    content_negotiation_class = DocumentFormatNegotiation

    @extend_schema(
        # the YAML document is the same object as the JSON one (clients and fuzzers parse it)
        responses={(200, "application/yaml"): OpenApiTypes.OBJECT, (200, "application/json"): OpenApiTypes.OBJECT},
    )
    @query_parameters(
        OpenApiParameter("format", str, enum=["yaml", "json"], description="default yaml"),
        PROJECT_PARAM,
        OpenApiParameter("history", bool, description="include every prompt version"),
    )
    def get(self, request: Request) -> HttpResponse:
        fmt = request.query_params.get("format") or "yaml"
        project = project_scope(request)
        document = export_document(project, history=flag(request.query_params, "history", False))
        name = f"teamclaw-config{'-' + project.slug if project else ''}-v{document['config_version']}.{fmt}"
        response = HttpResponse(
            dump(document, fmt),
            content_type="application/json; charset=utf-8" if fmt == "json" else "application/yaml; charset=utf-8",
        )
        response["Content-Disposition"] = f'attachment; filename="{name}"'
        return response


CONFIG_DOCUMENT = openapi_dialect(config_document_schema())
"""An import's body: a config document of ``GET /api/v1/config/schema`` (US-10), in YAML or
JSON. The names it holds (roles, capabilities, tools of the matrices, the project of a project
document) must exist; anything else wrong is refused with 400 naming its JSON pointer."""


class ConfigImportView(GovernanceView):
    """Import a YAML or JSON document sent as the request body (US-10).

    The whole document is validated against ``GET /api/v1/config/schema`` and the current
    configuration first: every problem is listed by JSON pointer and nothing changes.
    ``dry_run=true`` returns the exact change list without applying it; otherwise all
    changes apply in one transaction as one config version. ``expected_version`` refuses
    (409) when the configuration moved since a reviewed dry run. ``format`` overrides a
    Content-Type that names no document format (``text/plain``); ``format=json`` on a YAML
    Content-Type is a contradiction, refused with 400 naming ``format``. ``note`` goes to the
    audit trail.
    """

    config_actions = {"POST": "import"}
    parser_classes: list[type] = []
    content_negotiation_class = DocumentFormatNegotiation

    @extend_schema(
        request={"application/yaml": CONFIG_DOCUMENT, "application/json": CONFIG_DOCUMENT},
        responses=OpenApiTypes.OBJECT,
    )
    @query_parameters(
        OpenApiParameter("dry_run", bool, description="default false"),
        OpenApiParameter("format", str, enum=["yaml", "json"]),
        OpenApiParameter("expected_version", int),
        OpenApiParameter("note", str),
    )
    def post(self, request: Request) -> Response:
        params = request.query_params
        dry_run = flag(params, "dry_run", False)
        fmt = params.get("format") or ""
        expected = params.get("expected_version")
        note = params.get("note") or ""
        if len(note) > api_fields.NOTE_MAX:
            raise ValidationError({"note": [f"must be at most {api_fields.NOTE_MAX} characters"]})
        limit = max_config_bytes()
        length = whole_number_or_none(request.META.get("CONTENT_LENGTH") or "0")
        if length is not None and length > limit:
            return error_response(
                f"the document is {length:,} bytes; the limit is {limit:,} bytes",
                {"document": [f"larger than {limit:,} bytes"]},
                code=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE,
            )
        raw = request.body
        # "{" reads as JSON unless the Content-Type names YAML: only then do the two disagree
        if fmt == "json" and guess_format("{", request.content_type or "") == "yaml":
            raise ValidationError(
                {"format": [f"format=json, but the body is sent as {request.content_type}: send JSON or leave it out"]}
            )
        data = load_document(raw, fmt or guess_format(raw[:64].decode("utf-8", "replace"), request.content_type))
        result = import_config(
            data,
            dry_run=dry_run,
            expected_version=int(expected) if expected is not None else None,
            note=note.strip(),
            actor=request.user,
        )
        return Response(result.as_dict())


class ConfigRevertSerializer(api_fields.StrictSerializer):
    version = api_fields.StrictIntegerField(help_text="the config version the preview showed (its `version`)")
    note = api_fields.StrictCharField(required=False, allow_blank=True, max_length=2000)


class ConfigChangeRevertView(GovernanceView):
    """``GET /config/changes/{change_id}/revert``: what reverting that change would do now
    (``team.revert.revert_preview``: ``{change_id, config_type, version, revertible, reason,
    keys: [{key, old, new, current, after, changed_since, changes_now}]}``).
    ``POST {version, note?}``: write its recorded old values back as a new audited change,
    at the config ``version`` the preview showed (409 ``stale_version`` with the fresh
    preview otherwise; 409 when it cannot be reverted; staff only, 403 otherwise)
    -> ``{change, preview}`` (the new audit row and the preview after it)."""

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        # the refusal's audit type is the reverted change's, known before the permission check
        # (a non-staff attempt is audited as a refused write of that kind, issue 31)
        change_id = int(kwargs.get("change_id") or 0)
        config_type = ConfigChange.every.filter(pk=change_id).values_list("config_type", flat=True).first()
        if config_type:
            self.refusal_types = {"POST": config_type}
        super().initial(request, *args, **kwargs)

    @extend_schema(responses=OpenApiTypes.OBJECT)
    def get(self, request: Request, change_id: int) -> Response:
        return Response(revert_preview(find_change(change_id)))

    @extend_schema(request=ConfigRevertSerializer, responses={201: OpenApiTypes.OBJECT})
    def post(self, request: Request, change_id: int) -> Response:
        change = find_change(change_id)
        data = ConfigRevertSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        reverted = revert(change, version=values["version"], actor=request.user, note=values.get("note", ""))
        body = {"change": change_document(reverted), "preview": revert_preview(change)}
        return Response(body, status=status.HTTP_201_CREATED)
