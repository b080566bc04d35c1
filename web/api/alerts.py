"""Alerts (seed 003 ``alerting``): list and resolve."""

from __future__ import annotations

from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.permissions import IsAdminUser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from monitoring.alerts import filter_alerts
from monitoring.models import Alert
from teamclaw.api_query import StrictPagination, query_parameters
from web.api.lookup import found


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
        "rule": alert.rule.name if alert.rule else None,
        "status": state,
        "details": alert.details,
        "createdAt": alert.created_at,
        "resolvedAt": alert.resolved_at,
    }


class AlertListView(APIView):
    """``GET /alerts`` (``?status=open|resolved&severity=&kind=&capability=``), newest first."""

    @extend_schema(responses=OpenApiTypes.OBJECT)
    @query_parameters(
        OpenApiParameter("status", str, enum=["open", "resolved"]),
        OpenApiParameter("severity", str),
        OpenApiParameter("kind", str),
        OpenApiParameter("capability", str, description="capability id"),
        paginated=True,
    )
    def get(self, request: Request) -> Response:
        paginator = StrictPagination()
        page = paginator.paginate_queryset(filter_alerts(request.query_params), request, view=self)
        return paginator.get_paginated_response([alert_document(a) for a in page or []])


class AlertResolveView(APIView):
    """``POST /alerts/{id}/resolve``: an operator closes an open alert (staff)."""

    permission_classes = [IsAdminUser]

    @extend_schema(request=None, responses=OpenApiTypes.OBJECT)
    def post(self, request: Request, alert_id: int) -> Response:
        alert = found(Alert, "alert", pk=alert_id)
        if alert.resolved_at is None:
            alert.resolved_at = timezone.now()
            alert.details = {**alert.details, "resolved_by": request.user.get_username()}
            alert.save(update_fields=["resolved_at", "details"])
        return Response(alert_document(alert))
