"""Capability health: PRD §4.2's available/unavailable (``/capabilities/{id}/health``) and seed
003's HealthStatus (``/health/{id}``), and a capability's metrics (``/metrics/{id}``)."""

from __future__ import annotations

import time
from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from capabilities.models import CapabilityCard, Project
from capabilities.skill_index import parse_duration
from monitoring.metrics import capability_metrics
from runs.health_here import capability_health_here, capability_status_here
from runs.workers import worker_for
from teamclaw.api_errors import error_response


class CapabilityHealthView(APIView):
    """``GET /capabilities/{id}/health``: available/unavailable and the serving instances (§4.2)."""

    @extend_schema(responses=OpenApiTypes.OBJECT)
    def get(self, request: Request, capability_id: str) -> Response:
        project = request.query_params.get("project") or None
        if project and not Project.objects.filter(slug=project).exists():
            raise NotFound(f"project '{project}' does not exist")

        try:
            return Response(_hosts_for(request, capability_health_here(project, capability_id)))
        except KeyError:
            raise NotFound(f"capability '{capability_id}' does not exist") from None


def _hosts_for(request: Request, health: dict[str, Any]) -> dict[str, Any]:
    """``health`` with each instance's ``worker`` (``<hostname>-<pid>-<hex>``) as the user may
    see it: for staff only, None for others (``runs.workers.worker_for``; issue 31)."""
    instances = [
        {**i, "worker": worker_for(request.user, i["worker"] or "")} if "worker" in i else i
        for i in health.get("instances", [])
    ]
    return {**health, "instances": instances} if "instances" in health else health


def _not_found(capability_id: str) -> Response:
    return error_response(f"capability '{capability_id}' does not exist", code=404)


class HealthView(APIView):
    """``GET /health/{capabilityId}`` -> ``{status: HEALTHY|DEGRADED|UNHEALTHY, lastCheck,
    message, lastHeartbeat, instances, outputFailures, providers}``."""

    @extend_schema(responses=OpenApiTypes.OBJECT)
    def get(self, request: Request, capability_id: str) -> Response:
        if not CapabilityCard.objects.filter(capability_id=capability_id).exists():
            return _not_found(capability_id)
        health = capability_status_here(capability_id)
        if health is None:  # registered after the runtime's last config load and gone since
            return _not_found(capability_id)
        return Response(_hosts_for(request, health))


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
