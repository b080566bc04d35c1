"""REST API onto the running runtime: invoke, hook, capability health, tool confirmations
(PRD §4.2-§4.4, §4.7; seed 003's invoke call).

Invoke and hook views are async (adrf): a call may wait up to its timeout, and an async view
waits on the runtime's loop without holding the thread Django runs synchronous views on.
Runtime failures are HTTP 200 with ``success: false``; malformed requests are 4xx.
"""

from __future__ import annotations

import json
from typing import Any

from adrf.views import APIView as AsyncAPIView
from asgiref.sync import sync_to_async
from django.contrib.auth.models import AbstractBaseUser
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.exceptions import NotFound
from rest_framework.permissions import IsAdminUser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from capabilities.models import AgentRole, Project
from runs.confirmations import ConfirmationError, decide
from runs.health import capability_health
from runs.host import get_host
from teamclaw import api_fields
from teamclaw.api_errors import error_response
from teamclaw.runtime import HookEvent, InvokeRequest, Priority, RoutingStrategy, TaskNotRunning
from teamclaw.runtime.address import AddressError, parse_address

PRIORITIES = ["low", "normal", "high", "urgent"]


class _RoleField(api_fields.StrictCharField):
    def to_internal_value(self, data: Any) -> str:
        value = super().to_internal_value(data)
        if not AgentRole.objects.filter(role=value).exists():
            raise serializers.ValidationError(f"there is no role '{value}'")
        return value


class _ProjectField(api_fields.StrictSlugField):
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
    from_role = _RoleField(max_length=40)
    target_role = _RoleField(required=False, max_length=40)
    target_instance_id = api_fields.StrictCharField(required=False, max_length=64)
    routing = api_fields.StrictChoiceField(choices=[s.value for s in RoutingStrategy], required=False)
    params = serializers.DictField(required=False, default=dict)
    timeout = api_fields.StrictFloatField(required=False, min_value=0.001, max_value=3600)
    priority = api_fields.StrictChoiceField(choices=PRIORITIES, required=False, default="normal")
    project = _ProjectField(required=False)
    task_id = api_fields.StrictCharField(required=False, max_length=64)

    def validate_address(self, value: str) -> str:
        try:
            parse_address(value)
        except AddressError as exc:
            raise serializers.ValidationError(str(exc)) from None
        return value

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        _bounded(attrs.get("params") or {}, "params")
        if bool(attrs.get("capability_id")) == bool(attrs.get("address")):
            raise serializers.ValidationError({"capability_id": ["give exactly one of capability_id or address"]})
        if attrs.get("routing") == RoutingStrategy.BY_INSTANCE and not attrs.get("target_instance_id"):
            raise serializers.ValidationError({"target_instance_id": ["by_instance routing needs an instance id"]})
        return attrs


class HookSerializer(api_fields.StrictSerializer):
    """``HookEvent`` (PRD §4.4) plus ``from_role``."""

    event_type = api_fields.StrictRegexField(r"\A[A-Za-z][A-Za-z0-9_.:-]{0,99}\Z")
    from_role = _RoleField(max_length=40)
    payload = serializers.DictField(required=False, default=dict)
    broadcast = api_fields.StrictBooleanField(required=False, default=False)
    target_roles = serializers.ListField(child=_RoleField(max_length=40), required=False, max_length=64)
    capability_id = api_fields.StrictCharField(required=False, max_length=300)
    project = _ProjectField(required=False)
    task_id = api_fields.StrictCharField(required=False, max_length=64)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        _bounded(attrs.get("payload") or {}, "payload")
        if not attrs.get("broadcast") and not attrs.get("target_roles"):
            raise serializers.ValidationError({"target_roles": ["name at least one role, or set broadcast"]})
        return attrs


MAX_PARAMS_BYTES = 1_000_000
"""Largest ``params`` / ``payload`` an API call may send (bytes of JSON)."""


def _bounded(value: dict[str, Any], field: str) -> dict[str, Any]:
    size = len(json.dumps(value, ensure_ascii=False).encode("utf-8"))
    if size > MAX_PARAMS_BYTES:
        raise serializers.ValidationError({field: [f"is {size:,} bytes of JSON; the limit is {MAX_PARAMS_BYTES:,}"]})
    return value


async def _valid(serializer_class: type[api_fields.StrictSerializer], data: Any) -> dict[str, Any]:
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

    permission_classes = [IsAdminUser]

    @extend_schema(request=InvokeSerializer, responses={200: OpenApiTypes.OBJECT})
    async def post(self, request: Request) -> Response:
        values = await _valid(InvokeSerializer, request.data)
        invoke_request = InvokeRequest(
            values.get("capability_id") or values["address"],
            values.get("params") or {},
            target_role=values.get("target_role"),
            target_instance_id=values.get("target_instance_id"),
            routing=RoutingStrategy(values["routing"]) if values.get("routing") else None,
            timeout=values.get("timeout"),
            priority=Priority.parse(values.get("priority")),
        )
        host = await sync_to_async(get_host)()
        assert host.runtime is not None
        try:
            result = await host.acall(
                host.runtime.invoke(
                    invoke_request,
                    from_role=values["from_role"],
                    project_id=values.get("project"),
                    task_id=values.get("task_id"),
                )
            )
        except TaskNotRunning as exc:
            return error_response(str(exc), {"task_id": [str(exc)]})
        body = result.as_dict()
        body["result"] = body["data"]
        return Response(body)


class HookView(AsyncAPIView):
    """Fire a hook as ``from_role`` (staff only); each receiver acks on enqueue:
    ``{"acks": [{instance_id, role, status, reason?}]}``."""

    permission_classes = [IsAdminUser]

    @extend_schema(request=HookSerializer, responses={200: OpenApiTypes.OBJECT})
    async def post(self, request: Request) -> Response:
        from teamclaw.runtime import AgentFailure

        values = await _valid(HookSerializer, request.data)
        event = HookEvent(
            values["event_type"],
            values.get("payload") or {},
            values.get("broadcast", False),
            values.get("target_roles"),
            values.get("capability_id"),
        )
        host = await sync_to_async(get_host)()
        assert host.runtime is not None
        try:
            acks = await host.acall(
                host.runtime.hook(
                    event,
                    from_role=values["from_role"],
                    project_id=values.get("project"),
                    task_id=values.get("task_id"),
                )
            )
        except AgentFailure as failure:
            return error_response(failure.error.message, error=failure.error.as_dict())
        except TaskNotRunning as exc:
            return error_response(str(exc), {"task_id": [str(exc)]})
        return Response({"acks": [ack.as_dict() for ack in acks]})


class CapabilityHealthView(APIView):
    """``GET /capabilities/{id}/health``: available/unavailable and the serving instances (§4.2)."""

    @extend_schema(responses=OpenApiTypes.OBJECT)
    def get(self, request: Request, capability_id: str) -> Response:
        project = request.query_params.get("project") or None
        if project and not Project.objects.filter(slug=project).exists():
            raise NotFound(f"project '{project}' does not exist")
        from team.snapshot import build_snapshot

        try:
            return Response(capability_health(get_host(), build_snapshot(project), capability_id))
        except KeyError:
            raise NotFound(f"capability '{capability_id}' does not exist") from None


class ConfirmationDecisionSerializer(api_fields.StrictSerializer):
    approve = api_fields.StrictBooleanField()


class ConfirmationView(APIView):
    """``POST /confirmations/{id} {"approve": true|false}``: resume or fail the waiting tool use."""

    permission_classes = [IsAdminUser]

    @extend_schema(request=ConfirmationDecisionSerializer, responses={200: OpenApiTypes.OBJECT})
    def post(self, request: Request, confirmation_id: str) -> Response:
        data = ConfirmationDecisionSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        user: AbstractBaseUser = request.user  # type: ignore[assignment]
        try:
            result = decide(confirmation_id, data.validated_data["approve"], user)
        except ConfirmationError as exc:
            return error_response(exc.message, code=exc.status)
        return Response(result)
