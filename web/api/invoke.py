"""Invoking a capability as a role (PRD §4.4 ``invoke``) through the running runtime.

The view is async (adrf): the HTTP worker waits on the runtime's loop without holding the
thread Django runs synchronous views on."""

from __future__ import annotations

import json
from typing import Any

from adrf.views import APIView as AsyncAPIView
from asgiref.sync import sync_to_async
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.permissions import IsAdminUser
from rest_framework.request import Request
from rest_framework.response import Response

from capabilities.models import AgentRole, Project
from runs import idempotency
from runs.commands import call_anywhere, call_wait_s
from teamclaw import api_fields
from teamclaw.api_errors import error_response
from teamclaw.runtime import RoutingStrategy
from teamclaw.runtime.address import AddressError, parse_address

PRIORITIES = ["low", "normal", "high", "urgent"]


class RoleField(api_fields.StrictCharField):
    def to_internal_value(self, data: Any) -> str:
        value = super().to_internal_value(data)
        if not AgentRole.objects.filter(role=value).exists():
            raise serializers.ValidationError(f"there is no role '{value}'")
        return value


class ProjectField(api_fields.StrictSlugField):
    def to_internal_value(self, data: Any) -> str:
        value = super().to_internal_value(data)
        if not Project.objects.filter(slug=value).exists():
            raise serializers.ValidationError(f"project '{value}' does not exist")
        return value


class InvokeSerializer(api_fields.StrictSerializer):
    """``InvokeRequest`` (PRD §4.4) plus who calls: ``from_role``. Give ``capability_id`` or
    ``address`` (``cap://skill/capability[?query]``). ``timeout`` is seconds."""

    capability_id = api_fields.StrictCharField(required=False, max_length=300)
    address = api_fields.StrictCharField(required=False, max_length=1000)
    from_role = RoleField(max_length=40)
    target_role = RoleField(required=False, max_length=40)
    target_instance_id = api_fields.StrictCharField(required=False, max_length=64)
    routing = api_fields.StrictChoiceField(choices=[s.value for s in RoutingStrategy], required=False)
    params = serializers.DictField(required=False, default=dict)
    timeout = api_fields.StrictFloatField(required=False, min_value=0.001, max_value=3600)
    priority = api_fields.StrictChoiceField(choices=PRIORITIES, required=False, default="normal")
    project = ProjectField(required=False)
    task_id = api_fields.StrictCharField(required=False, max_length=64)

    def validate_address(self, value: str) -> str:
        try:
            parse_address(value)
        except AddressError as exc:
            raise serializers.ValidationError(str(exc)) from None
        return value

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        bounded(attrs.get("params") or {}, "params")
        if bool(attrs.get("capability_id")) == bool(attrs.get("address")):
            raise serializers.ValidationError({"capability_id": ["give exactly one of capability_id or address"]})
        if attrs.get("routing") == RoutingStrategy.BY_INSTANCE and not attrs.get("target_instance_id"):
            raise serializers.ValidationError({"target_instance_id": ["by_instance routing needs an instance id"]})
        return attrs


MAX_PARAMS_BYTES = 1_000_000
"""Largest ``params`` / ``payload`` an API call may send (bytes of JSON)."""


def bounded(value: dict[str, Any], field: str) -> dict[str, Any]:
    size = len(json.dumps(value, ensure_ascii=False).encode("utf-8"))
    if size > MAX_PARAMS_BYTES:
        raise serializers.ValidationError({field: [f"is {size:,} bytes of JSON; the limit is {MAX_PARAMS_BYTES:,}"]})
    return value


async def validated(serializer_class: type[api_fields.StrictSerializer], data: Any) -> dict[str, Any]:
    serializer = serializer_class(data=data)
    await sync_to_async(serializer.is_valid)(raise_exception=True)
    return dict(serializer.validated_data)


class InvokeView(AsyncAPIView):
    """Invoke a capability through the runtime as ``from_role`` (staff only: the caller acts
    for that agent, so the invoke matrix applies to the role it names).

    Returns the PRD §4.4 ``InvokeResult`` ``{success, data, error{code,message,details},
    latency_ms, from_instance, attempts, invoke_id, task_id}`` plus seed 003's ``result``
    (same as ``data``). HTTP 200 even when ``success`` is false.
    """

    parser_classes = api_fields.JSON_BODY_ONLY

    permission_classes = [IsAdminUser]

    @extend_schema(
        request=InvokeSerializer,
        parameters=[
            OpenApiParameter(
                idempotency.HEADER,
                str,
                OpenApiParameter.HEADER,
                required=False,
                description=(
                    "Makes a retry safe: a request with the key of an earlier one of the same user "
                    "and the same body gets that request's answer (with the header "
                    "Idempotent-Replayed: true) instead of running again, waiting for it while it "
                    "still runs; the same key with another body is refused with 422 naming the key. "
                    "1-255 printable ASCII characters; kept 24 hours; a 5xx answer is not kept."
                ),
            )
        ],
        responses={
            200: OpenApiTypes.OBJECT,
            409: OpenApiResponse(description="the first request with this Idempotency-Key is still running"),
            422: OpenApiResponse(description="this Idempotency-Key was used with another request body"),
        },
    )
    async def post(self, request: Request) -> Response:
        key = idempotency.key_of(request.headers)
        values = await validated(InvokeSerializer, request.data)
        payload = {
            "capability": values.get("capability_id") or values["address"],
            "params": values.get("params") or {},
            "target_role": values.get("target_role"),
            "target_instance_id": values.get("target_instance_id"),
            "routing": values.get("routing"),
            "timeout": values.get("timeout"),
            "priority": values.get("priority"),
            "from_role": values["from_role"],
            "project": values.get("project"),
            "task_id": values.get("task_id"),
        }

        async def run() -> Response:
            body, error = await call_anywhere("invoke", payload)
            if error is not None:
                extra = error.get("extra", {})
                return error_response(error["detail"], error.get("errors"), code=error["status"], **extra)
            return Response(body)

        if key is None:
            return await run()
        assert request.user.pk is not None  # IsAdminUser: signed in
        return await idempotency.once(
            request.user.pk, key, "capabilities/invoke", request.data, run, call_wait_s(payload)
        )
