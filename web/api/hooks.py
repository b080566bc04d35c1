"""Firing a hook as a role (PRD §4.3/§4.4 ``hook``): the receivers' acks."""

from __future__ import annotations

from typing import Any

from adrf.views import APIView as AsyncAPIView
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.permissions import IsAdminUser
from rest_framework.request import Request
from rest_framework.response import Response

from runs.commands import call_anywhere
from teamclaw import api_fields
from teamclaw.api_errors import error_response
from web.api.invoke import ProjectField, RoleField, bounded, validated


class HookSerializer(api_fields.StrictSerializer):
    """``HookEvent`` (PRD §4.4) plus ``from_role``."""

    event_type = api_fields.StrictRegexField(r"\A[A-Za-z][A-Za-z0-9_.:-]{0,99}\Z")
    from_role = RoleField(max_length=40)
    payload = serializers.DictField(required=False, default=dict)
    broadcast = api_fields.StrictBooleanField(required=False, default=False)
    target_roles = serializers.ListField(child=RoleField(max_length=40), required=False, max_length=64)
    capability_id = api_fields.StrictCharField(required=False, max_length=300)
    project = ProjectField(required=False)
    task_id = api_fields.StrictCharField(required=False, max_length=64)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        bounded(attrs.get("payload") or {}, "payload")
        if not attrs.get("broadcast") and not attrs.get("target_roles"):
            raise serializers.ValidationError({"target_roles": ["name at least one role, or set broadcast"]})
        return attrs


class HookView(AsyncAPIView):
    """Fire a hook as ``from_role`` (staff only); each receiver acks on enqueue:
    ``{"acks": [{instance_id, role, status, reason?}]}``."""

    parser_classes = api_fields.JSON_BODY_ONLY

    permission_classes = [IsAdminUser]

    @extend_schema(request=HookSerializer, responses={200: OpenApiTypes.OBJECT})
    async def post(self, request: Request) -> Response:
        values = await validated(HookSerializer, request.data)
        payload = {
            "event_type": values["event_type"],
            "payload": values.get("payload") or {},
            "broadcast": values.get("broadcast", False),
            "target_roles": values.get("target_roles"),
            "capability_id": values.get("capability_id"),
            "from_role": values["from_role"],
            "project": values.get("project"),
            "task_id": values.get("task_id"),
        }
        body, error = await call_anywhere("hook", payload)
        if error is not None:
            return error_response(error["detail"], error.get("errors"), code=error["status"], **error.get("extra", {}))
        return Response(body)
