"""Skills (seed 003 REST API): list, discover (upload), install, activate, deactivate,
uninstall, dependents; and the published JSON Schemas."""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.parsers import BaseParser, FormParser, MultiPartParser
from rest_framework.permissions import SAFE_METHODS, BasePermission
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.utils import html
from rest_framework.views import APIView

from capabilities.lifecycle import (
    LifecycleError,
    activate_skill,
    deactivate_skill,
    discover_skill,
    install_skill,
    require_skill,
    skill_dependents,
    uninstall_skill,
)
from capabilities.models import Skill
from capabilities.published_schemas import load_schema
from capabilities.skill_documents import skill_document
from capabilities.skill_index import MAX_SKILL_INDEX_BYTES
from capabilities.skill_models import SkillStatus
from monitoring.skill_contexts import running_contexts
from teamclaw import api_fields
from teamclaw.api_docs import openapi_dialect
from teamclaw.api_errors import error_response
from teamclaw.api_parsers import SafeJSONParser
from teamclaw.api_query import query_parameters
from teamclaw.json_types import json_type_name
from web.api.governance import RefusalAudit

SKILL_STATES = [str(state) for state in SkillStatus]
"""The lifecycle states a skill can be in (seed 003)."""


class YamlParser(BaseParser):
    """``application/yaml``: hands the raw bytes to the view (read strictly there)."""

    media_type = "application/yaml"

    def parse(  # type: ignore[override]  # request.data is then the raw bytes, which the view reads itself
        self, stream: Any, media_type: str | None = None, parser_context: Any = None
    ) -> bytes:
        return stream.read(MAX_SKILL_INDEX_BYTES + 1) if stream is not None else b""


class TextYamlParser(YamlParser):
    media_type = "text/yaml"


class XYamlParser(YamlParser):
    media_type = "application/x-yaml"


PARSERS = [YamlParser, TextYamlParser, XYamlParser, SafeJSONParser, MultiPartParser, FormParser]


class StaffForChanges(BasePermission):
    """Reads for every signed-in user; writes for staff (docs/architecture.md §9)."""

    message = "changing skills and workflows needs a staff account"

    def has_permission(self, request: Request, view: Any) -> bool:
        user = request.user
        if not (user and user.is_authenticated):
            return False
        return request.method in SAFE_METHODS or bool(user.is_staff)


def yaml_body(request: Request) -> bytes | str | None:
    """The uploaded YAML from a YAML body, JSON ``{"yaml"}`` or a multipart ``file``; a 400
    naming ``yaml`` when that is not a string, or naming any other key of the body."""
    data = request.data
    if isinstance(data, bytes | str):
        return data
    api_fields.refuse_unknown_fields(data, ("yaml", "file") if html.is_html_input(data) else ("yaml",))
    upload = request.FILES.get("file") if hasattr(request, "FILES") else None
    if upload is not None:
        return upload.read(MAX_SKILL_INDEX_BYTES + 1)
    if hasattr(data, "get"):
        value = data.get("yaml")
        if value is not None and not isinstance(value, str):
            raise ValidationError({"yaml": [f"must be a string, not {json_type_name(value)}"]})
        return value
    return None


def skill_or_404(skill_id: str) -> Skill:
    """The skill, or a 404 whose detail names the id."""
    skill = Skill.objects.filter(skill_id=skill_id).first()
    if skill is None:
        raise NotFound(gettext("there is no skill '%(skill)s'") % {"skill": skill_id})
    return skill


def with_skill_state(exc: LifecycleError, skill_id: str) -> LifecycleError:
    """``exc`` carrying what the client needs next: the skill's ``status`` now, the failed
    attempt's ``operationId`` and the refusal's details (dependents, phases)."""
    current = Skill.objects.filter(skill_id=skill_id).values_list("status", flat=True).first()
    if current:
        exc.extra["status"] = current
    if exc.operation is not None:
        exc.extra["operationId"] = exc.operation.id
    exc.extra.update({k: v for k, v in exc.details.items() if v})
    return exc


class SkillForceSerializer(api_fields.StrictSerializer):
    """``{force}``: go ahead although skills, workflows or running contexts depend on the skill."""

    force = api_fields.StrictBooleanField(required=False, default=False)


def _force(request: Request) -> bool:
    """``?force=`` (text: 1, true, yes or on), else the body's ``force`` (JSON true/false)."""
    data = SkillForceSerializer(data=request.data if hasattr(request.data, "get") else {})
    data.is_valid(raise_exception=True)
    value = request.query_params.get("force")
    if value is not None:
        return value.lower() in ("1", "true", "yes", "on")
    return bool(data.validated_data["force"])


class SkillInstallSerializer(api_fields.ObjectBodySerializer):
    """``{config?}``: the skill's configuration, checked against its ``config_schema``."""

    config = api_fields.PassThroughField(required=False, allow_null=True)


class SkillActivateSerializer(api_fields.StrictSerializer):
    """``{role}``: the role that will own the skill's capability cards."""

    role = api_fields.StrictCharField(
        max_length=40,
        error_messages={
            "required": "the role that will own the capabilities is required",
            "blank": "the role that will own the capabilities is required",
        },
    )


SKILL_INDEX_YAML = openapi_dialect(load_schema("skill-index"))
"""The request body of ``POST /skills``: a skill-index.yaml of the published schema
(``GET /api/v1/skills/schema``, seed 003), as ``capabilities.skill_index`` checks it first
(JSON ``{"yaml": text}`` and a multipart ``file`` are read too, for forms)."""


class SkillListView(RefusalAudit):
    """``GET /skills`` (``?status=``) and ``POST /skills`` (skill-index.yaml -> DISCOVERED)."""

    refusal_types = {"POST": "skill"}

    permission_classes = [StaffForChanges]
    parser_classes = PARSERS

    @extend_schema(operation_id="skills_list", responses=OpenApiTypes.OBJECT)
    @query_parameters(OpenApiParameter("status", str, enum=[*SKILL_STATES, *(state.lower() for state in SKILL_STATES)]))
    def get(self, request: Request) -> Response:
        skills = Skill.objects.all()
        if wanted := request.query_params.get("status"):
            skills = skills.filter(status=wanted.upper())
        rows = [skill_document(s, full=False) for s in skills]
        return Response({"count": len(rows), "skills": rows})

    @extend_schema(
        request={"application/yaml": SKILL_INDEX_YAML},
        parameters=[OpenApiParameter("allow_downgrade", bool, description="replace a newer version with an older one")],
        responses={201: OpenApiTypes.OBJECT},
    )
    def post(self, request: Request) -> Response:
        raw = yaml_body(request)
        if raw is None or (isinstance(raw, bytes | str) and not raw):
            return error_response(
                "send the skill-index.yaml as application/yaml (or JSON {yaml}, or a multipart file)",
                {"document": ["the document is empty"]},
            )
        downgrade = (request.query_params.get("allow_downgrade") or "").lower() in ("1", "true", "yes", "on")
        skill, operation, created = discover_skill(raw, actor=request.user, allow_downgrade=downgrade)
        body = {
            "skillId": skill.skill_id,
            "status": skill.status,
            "operationId": operation.id,
            "warnings": skill.warnings,
        }
        return Response(body, status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)


class SkillDetailView(RefusalAudit):
    """``GET /skills/{skillId}`` and ``DELETE /skills/{skillId}`` (uninstall; ``?force=true``
    goes ahead although skills or workflows depend on it)."""

    refusal_types = {"DELETE": "skill"}

    permission_classes = [StaffForChanges]
    parser_classes = PARSERS

    @extend_schema(responses=OpenApiTypes.OBJECT)
    def get(self, request: Request, skill_id: str) -> Response:
        return Response(skill_document(skill_or_404(skill_id)))

    @extend_schema(parameters=[OpenApiParameter("force", bool)], responses=OpenApiTypes.OBJECT)
    def delete(self, request: Request, skill_id: str) -> Response:
        try:
            operation = uninstall_skill(
                skill_id, actor=request.user, force=_force(request), running_contexts=running_contexts
            )
        except LifecycleError as exc:
            raise with_skill_state(exc, skill_id) from None
        return Response({"skillId": skill_id, "status": operation.to_status, "operationId": operation.id})


class SkillInstallView(RefusalAudit):
    """``POST /skills/{skillId}/install {config}`` -> ``{installId, status}``."""

    refusal_types = {"POST": "skill"}

    permission_classes = [StaffForChanges]

    @extend_schema(request=SkillInstallSerializer, responses=OpenApiTypes.OBJECT)
    def post(self, request: Request, skill_id: str) -> Response:
        require_skill(skill_id)  # an unknown skill is a 404 whatever the body
        config = api_fields.read_body(SkillInstallSerializer, request.data).get("config")
        try:
            operation = install_skill(skill_id, config, actor=request.user)
        except LifecycleError as exc:
            raise with_skill_state(exc, skill_id) from None
        body = {"installId": operation.id, "status": operation.to_status, "warnings": operation.warnings}
        if operation.to_status == "ERROR":
            reasons = [r.strip() for r in operation.error.split(":", 1)[-1].split(";")]
            return error_response(
                operation.error, {"dependencies": reasons}, status.HTTP_409_CONFLICT, errorCode="dependency", **body
            )
        return Response(body)


class SkillActivateView(RefusalAudit):
    """``POST /skills/{skillId}/activate {role}`` -> ``{activationId, status, phases}``."""

    refusal_types = {"POST": "skill"}

    permission_classes = [StaffForChanges]

    @extend_schema(request=SkillActivateSerializer, responses=OpenApiTypes.OBJECT)
    def post(self, request: Request, skill_id: str) -> Response:
        data = SkillActivateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        role = data.validated_data["role"]
        try:
            operation = activate_skill(skill_id, role, actor=request.user)
        except LifecycleError as exc:
            with_skill_state(exc, skill_id)
            if exc.operation is not None:
                exc.extra["activationId"] = exc.operation.id
            raise
        return Response(
            {
                "activationId": operation.id,
                "status": operation.to_status,
                "phases": operation.phases,
                "warnings": operation.warnings,
            }
        )


class SkillDeactivateView(RefusalAudit):
    """``POST /skills/{skillId}/deactivate`` (``{force}``) -> ``{status: DEACTIVATED}``."""

    refusal_types = {"POST": "skill"}

    permission_classes = [StaffForChanges]

    @extend_schema(request=SkillForceSerializer, responses=OpenApiTypes.OBJECT)
    def post(self, request: Request, skill_id: str) -> Response:
        try:
            operation = deactivate_skill(
                skill_id, actor=request.user, force=_force(request), running_contexts=running_contexts
            )
        except LifecycleError as exc:
            raise with_skill_state(exc, skill_id) from None
        return Response({"skillId": skill_id, "status": operation.to_status, "operationId": operation.id})


class SkillDependentsView(APIView):
    """``GET /skills/{skillId}/dependents``: capabilities, skills, workflows, roles and
    running contexts that depend on the skill (what deactivating or uninstalling touches)."""

    @extend_schema(responses=OpenApiTypes.OBJECT)
    def get(self, request: Request, skill_id: str) -> Response:
        return Response(skill_dependents(skill_or_404(skill_id), running_contexts))


class SchemaView(APIView):
    """The published JSON Schemas: ``skill-index`` and ``orchestration``."""

    @extend_schema(responses=OpenApiTypes.OBJECT)
    def get(self, request: Request, name: str) -> Response:
        if name not in ("skill-index", "orchestration"):
            return error_response(f"no schema {name!r}: skill-index or orchestration", code=404)
        return Response(load_schema(name))
