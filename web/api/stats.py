"""Token statistics (US-11) by role, task or project; the live sockets' counters (issue 31)."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.permissions import IsAdminUser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from monitoring import token_stats
from monitoring.live_sink import get_live_sink
from monitoring.metrics import live_drops
from teamclaw.api_errors import error_response
from teamclaw.api_query import query_parameters


class TokenStatsView(APIView):
    """Token usage (US-11) grouped by ``role`` (default), ``task`` or ``project``, for contexts
    started ``since`` an ISO 8601 date or datetime: ``{group_by, since, rows: [{key, label,
    input_tokens, output_tokens, total_tokens, api_calls, contexts, estimated_contexts,
    estimated}], totals}``. ``estimated`` rows include offline-executor estimates."""

    @extend_schema(responses=OpenApiTypes.OBJECT)
    @query_parameters(
        OpenApiParameter("group_by", str, enum=list(token_stats.GROUP_BY)),
        OpenApiParameter(
            "since",
            {"type": "string", "anyOf": [{"format": "date"}, {"format": "date-time"}]},
            description="ISO 8601 date or datetime (UTC when no zone), e.g. 2025-01-31 or 2025-01-31T08:00:00Z",
        ),
    )
    def get(self, request: Request) -> Response:
        errors: dict[str, list[str]] = {}
        group_by, since = "role", None
        try:
            group_by = token_stats.parse_group_by(request.query_params.get("group_by"))
        except token_stats.StatsError as exc:
            errors[exc.field] = [exc.reason]
        try:
            since = token_stats.parse_since(request.query_params.get("since"))
        except token_stats.StatsError as exc:
            errors[exc.field] = [exc.reason]
        if errors:
            field, reasons = next(iter(errors.items()))
            return error_response(f"{field}: {reasons[0]}", errors)
        stats = token_stats.token_stats(request.user, group_by, since)
        return Response({"group_by": group_by, "since": since, "rows": stats.rows, "totals": stats.totals})


class LiveStatsView(APIView):
    """``GET /stats/live`` (staff only): this server process's live sockets and what they
    dropped for slow browsers since it started: ``{sockets, backlog, dropped: {reason: count}}``
    (every reason of ``monitoring.metrics.LIVE_DROP_REASONS``, which gives each one's meaning and
    unit; counts are per process and not in the record, README "Live viewer")."""

    permission_classes = [IsAdminUser]

    @extend_schema(responses=OpenApiTypes.OBJECT)
    def get(self, request: Request) -> Response:
        sink = get_live_sink()
        return Response(
            {
                "sockets": sink.clients,
                "backlog": sink.backlog,
                "dropped": live_drops.counts(),
            }
        )
