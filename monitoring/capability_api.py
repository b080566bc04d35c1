"""REST API: capability health and metrics (seed 003 ``/health``, ``/metrics``) and alerts."""

from __future__ import annotations

import time

from django.shortcuts import get_object_or_404
from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.pagination import PageNumberPagination
from rest_framework.permissions import IsAdminUser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from capabilities.models import CapabilityCard
from capabilities.skill_index import parse_duration
from monitoring.metrics import capability_metrics
from monitoring.models import Alert
from runs.health import capability_status
from runs.host import get_host
from teamclaw.api_errors import error_response


def _not_found(capability_id: str) -> Response:
    return error_response(f"capability '{capability_id}' does not exist", code=404)


class HealthView(APIView):
    """``GET /health/{capabilityId}`` -> ``{status: HEALTHY|DEGRADED|UNHEALTHY, lastCheck,
    message, lastHeartbeat, instances, outputFailures, providers}``."""

    @extend_schema(responses=OpenApiTypes.OBJECT)
    def get(self, request: Request, capability_id: str) -> Response:
        if not CapabilityCard.objects.filter(capability_id=capability_id).exists():
            return _not_found(capability_id)
        health = capability_status(get_host(), capability_id)
        if health is None:  # registered after the runtime's last config load and gone since
            return _not_found(capability_id)
        return Response(health)


class MetricsView(APIView):
    """``GET /metrics/{capabilityId}`` (``?window=5m`` for the last 5 minutes) ->
    ``{callCount, successRate, avgLatencyMs, p99LatencyMs, ...}`` from recorded invokes."""

    @extend_schema(
        parameters=[OpenApiParameter("window", str, description="e.g. 30s, 5m, 1h")], responses=OpenApiTypes.OBJECT
    )
    def get(self, request: Request, capability_id: str) -> Response:
        card = CapabilityCard.objects.filter(capability_id=capability_id).select_related("skill").first()
        if card is None:
            return _not_found(capability_id)
        since_ms = None
        if window := request.query_params.get("window"):
            try:
                since_ms = int(time.time() * 1000 - parse_duration(window) * 1000)
            except ValueError as exc:
                return error_response(f"window: {exc}", {"window": [str(exc)]})
        aliases = tuple(a for a in (card.address, card.skill and f"cap://{card.skill.skill_id}/{card.name}") if a)
        return Response(capability_metrics(capability_id, since_ms=since_ms, aliases=aliases))


def alert_document(alert: Alert) -> dict[str, object]:
    """``{id, kind, severity, message, capabilityId, rule, status: open|resolved|event, ...}``;
    runtime alerts without a rule are one-off ``event``s."""
    state = (
        "event" if alert.rule_id is None and alert.kind != "alert_rule" else "resolved" if alert.resolved_at else "open"
    )
    return {
        "id": alert.pk,
        "kind": alert.kind,
        "severity": alert.severity,
        "message": alert.message,
        "capabilityId": alert.capability_id or alert.details.get("capability_id") or None,
        "rule": alert.rule.name if alert.rule_id else None,
        "status": state,
        "details": alert.details,
        "createdAt": alert.created_at,
        "resolvedAt": alert.resolved_at,
    }


def alerts_queryset(params: dict) -> object:
    """Alerts filtered by ``status`` (open|resolved), ``severity``, ``kind``, ``capability``."""
    alerts = Alert.objects.select_related("rule")
    state = params.get("status")
    if state == "open":
        alerts = alerts.filter(resolved_at__isnull=True, rule__isnull=False)
    elif state == "resolved":
        alerts = alerts.filter(resolved_at__isnull=False)
    for key, column in (("severity", "severity"), ("kind", "kind"), ("capability", "capability_id")):
        if params.get(key):
            alerts = alerts.filter(**{column: params[key]})
    return alerts


class AlertListView(APIView):
    """``GET /alerts`` (``?status=open|resolved&severity=&kind=&capability=``), newest first."""

    @extend_schema(responses=OpenApiTypes.OBJECT)
    def get(self, request: Request) -> Response:
        paginator = PageNumberPagination()
        page = paginator.paginate_queryset(alerts_queryset(request.query_params), request, view=self)
        return paginator.get_paginated_response([alert_document(a) for a in page])


class AlertResolveView(APIView):
    """``POST /alerts/{id}/resolve``: an operator closes an open alert (staff)."""

    permission_classes = [IsAdminUser]

    @extend_schema(request=None, responses=OpenApiTypes.OBJECT)
    def post(self, request: Request, alert_id: int) -> Response:
        alert = get_object_or_404(Alert, pk=alert_id)
        if alert.resolved_at is None:
            alert.resolved_at = timezone.now()
            alert.details = {**alert.details, "resolved_by": request.user.get_username()}
            alert.save(update_fields=["resolved_at", "details"])
        return Response(alert_document(alert))
