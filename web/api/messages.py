"""The message log (PRD §4.3, US-04): every message with its delivery status, filtered and
paginated."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from monitoring.message_log import visible_messages
from monitoring.models import Message
from teamclaw.api_query import StrictPagination, query_parameters

MESSAGE_STATUSES = ["queued", "delivered", "dropped", "expired", "denied"]


MESSAGE_TYPES = [
    "invoke_request",
    "invoke_response",
    "invoke_error",
    "hook_event",
    "hook_ack",
    "status_update",
    "progress_report",
    "question_broadcast",
    "artifact_share",
    "context_sync",
]


class MessagePagination(StrictPagination):
    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 500


def message_document(message: Message) -> dict[str, object]:
    """An AgentMessage as recorded (PRD §4.3 shape) with its delivery ``status`` and ``reason``."""
    return {
        "id": message.id,
        "seq": message.seq,
        "type": message.type,
        "from": {"role": message.from_role or None, "instance_id": message.from_instance or None},
        "to": {"role": message.to_role or None, "instance_id": message.to_instance or None},
        "capability_id": message.capability_id,
        "payload": message.payload,
        "context": {
            "task_id": message.task_id,
            "conversation_id": message.conversation_id,
            "correlation_id": message.correlation_id or None,
        },
        "project": message.project_id,
        "timestamp": message.timestamp_ms,
        "priority": message.priority,
        "ttl": message.ttl_ms,
        "status": message.status,
        "reason": message.reason,
    }


class MessageListView(APIView):
    """The message log, newest first (``order=asc`` for send order), filtered by ``task_id``,
    ``conversation_id``, ``from_role``, ``to_role``, ``type`` and ``status``; paginated."""

    @extend_schema(responses=OpenApiTypes.OBJECT)
    @query_parameters(
        OpenApiParameter("task_id", str, description="Only this task's; empty: no filter."),
        OpenApiParameter("conversation_id", str),
        OpenApiParameter("from_role", str),
        OpenApiParameter("to_role", str),
        OpenApiParameter("type", str, enum=MESSAGE_TYPES),
        OpenApiParameter("status", str, enum=MESSAGE_STATUSES),
        OpenApiParameter("order", str, enum=["desc", "asc"]),
        paginated=True,
        max_page_size=500,
    )
    def get(self, request: Request) -> Response:
        params = request.query_params
        queryset = visible_messages(request.user)  # monitoring.access: only tasks the caller may see
        for name in ("task_id", "conversation_id", "from_role", "to_role", "type", "status"):
            if params.get(name):
                queryset = queryset.filter(**{name: params[name]})
        queryset = queryset.order_by("seq" if params.get("order") == "asc" else "-seq")
        paginator = MessagePagination()
        page = paginator.paginate_queryset(queryset, request, view=self)
        return paginator.get_paginated_response([message_document(m) for m in page or []])
