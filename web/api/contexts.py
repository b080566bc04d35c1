"""Execution contexts (PRD §4.6): list, one, its snapshots (and a manual one), an instruction
to a running agent."""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from monitoring.access import visible_contexts
from monitoring.live_items import from_epoch
from monitoring.models import ExecutionContext, Snapshot
from runs import context_actions
from runs.context_actions import empty_memory
from teamclaw import api_fields
from teamclaw.api_errors import error_response
from teamclaw.api_query import StrictPagination, query_parameters
from teamclaw.runtime.context import ContextStatus

STATUSES = tuple(str(s) for s in ContextStatus)


def context_document(row: ExecutionContext) -> dict[str, Any]:
    """An AgentExecutionContext (PRD §4.6) as the API returns it; tokens in tokens. ``memory``
    is what the agent remembers (seed 003 MemoryContext: ``{history, preferences,
    session_state, budget_tokens, trimmed, tokens}``, token counts estimated), ``knowledge``
    what each of its calls retrieved (seed 003 KnowledgeContext: ``[{capability_id,
    message_id, query, chunks: [{source, heading, chunk, score}]}]``)."""
    usage = row.resource_usage or {}
    return {
        "id": row.id,
        "instance_id": row.instance_id,
        "role": row.role,
        "task_id": row.task_id,
        "task_description": row.task_description,
        "conversation_id": row.conversation_id,
        "project_id": row.project_id,
        "config_version": row.config_version,
        "status": row.status,
        "progress": row.progress,
        "current_step": row.current_step,
        "input_context": row.input_context,
        "output_state": row.output_state,
        "resource_usage": {
            "total_tokens": row.total_tokens,
            "input_tokens": row.input_tokens,
            "output_tokens": row.output_tokens,
            "api_calls": row.api_calls,
            "estimated": bool(usage.get("estimated", row.tokens_estimated)),
        },
        "memory": row.memory or empty_memory(),
        "knowledge": row.knowledge or [],
        "created_at": row.created_at,
        "updated_at": row.updated_at,
    }


def snapshot_document(row: Snapshot) -> dict[str, Any]:
    """A ContextSnapshot (PRD §4.6): ``type`` auto/error/manual, ``trigger``, ``label``, ``state``."""
    return {
        "id": row.id,
        "context_id": row.context_id,
        "type": row.type,
        "trigger": row.trigger,
        "label": row.label,
        "sequence": row.sequence,
        "state": row.state,
        "created_at": row.created_at,
    }


def _stored_snapshot(snapshot: dict[str, Any]) -> dict[str, Any]:
    """The snapshot as stored; the action's own copy if the recorder has not written it yet."""
    row = Snapshot.objects.filter(pk=snapshot["id"]).first()
    if row is not None:
        return snapshot_document(row)
    return {
        **{k: snapshot[k] for k in ("id", "context_id", "type", "trigger", "label", "sequence", "state")},
        "created_at": from_epoch(snapshot["created_at"]),
    }


def _context(request: Request, context_id: str) -> ExecutionContext | None:
    return visible_contexts(request.user).filter(pk=context_id).first()


def _not_found(context_id: str) -> Response:
    return error_response(f"there is no execution context {context_id}", code=status.HTTP_404_NOT_FOUND)


class ContextListView(APIView):
    """Execution contexts the caller may see, newest first, paginated; filter by
    ``task_id``, ``role`` and ``status`` (an AgentStatus of PRD §4.6)."""

    @extend_schema(operation_id="contexts_list", responses=OpenApiTypes.OBJECT)
    @query_parameters(
        OpenApiParameter("task_id", str, description="Only this task's; empty: no filter."),
        OpenApiParameter("role", str),
        OpenApiParameter("status", str, enum=STATUSES),
        paginated=True,
    )
    def get(self, request: Request) -> Response:
        queryset = visible_contexts(request.user).order_by("-created_at", "id")
        params = request.query_params
        if params.get("status"):
            queryset = queryset.filter(status=params["status"])
        if params.get("task_id"):
            queryset = queryset.filter(task_id=params["task_id"])
        if params.get("role"):
            queryset = queryset.filter(role=params["role"])
        paginator = StrictPagination()
        page = paginator.paginate_queryset(queryset, request, view=self)
        return paginator.get_paginated_response([context_document(row) for row in page or []])


class ContextDetailView(APIView):
    """One execution context with its input context, output state and resource usage."""

    @extend_schema(responses=OpenApiTypes.OBJECT)
    def get(self, request: Request, context_id: str) -> Response:
        row = _context(request, context_id)
        if row is None:
            return _not_found(context_id)
        return Response(context_document(row))


class SnapshotCreateSerializer(api_fields.StrictSerializer):
    """``{label?}``: what the manual snapshot is for (PRD §4.6 用户手动触发)."""

    # DRF's serializer metaclass takes declared fields off the class: this does not shadow Field.label.
    label = api_fields.StrictCharField(  # type: ignore[assignment]
        required=False, allow_blank=True, max_length=context_actions.MAX_LABEL_CHARS
    )


class SnapshotListView(APIView):
    """A context's snapshots in order (paginated, each with its full ``state``); POST takes a
    ``manual`` snapshot ``{label}`` (PRD §4.6 用户手动触发), live or from the recorded state."""

    @extend_schema(responses=OpenApiTypes.OBJECT)
    @query_parameters(paginated=True)
    def get(self, request: Request, context_id: str) -> Response:
        row = _context(request, context_id)
        if row is None:
            return _not_found(context_id)
        paginator = StrictPagination()
        page = paginator.paginate_queryset(row.snapshots.order_by("sequence", "created_at"), request, view=self)
        return paginator.get_paginated_response([snapshot_document(s) for s in page or []])

    @extend_schema(request=SnapshotCreateSerializer, responses={201: OpenApiTypes.OBJECT})
    def post(self, request: Request, context_id: str) -> Response:
        data = SnapshotCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        snapshot = context_actions.take_manual_snapshot(request.user, context_id, data.validated_data.get("label", ""))
        return Response(_stored_snapshot(snapshot), status=status.HTTP_201_CREATED)


class InstructionSerializer(api_fields.StrictSerializer):
    text = api_fields.StrictCharField(max_length=context_actions.MAX_INSTRUCTION_CHARS)


class InstructionView(APIView):
    """Give a running agent a user instruction (PRD §4.6): stored in its
    ``input_context.user_instructions``, sent as ``context_sync``, snapshotted with trigger
    ``user_instruction``, in whichever worker runs it. 409 when the context is not running.
    Sent to a context whose task was taken over meanwhile, it goes to the one agent of the same
    role running in the resumed task (its ``context_id`` is in the answer)."""

    @extend_schema(request=InstructionSerializer, responses={201: OpenApiTypes.OBJECT})
    def post(self, request: Request, context_id: str) -> Response:
        data = InstructionSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        snapshot = context_actions.send_user_instruction(request.user, context_id, data.validated_data["text"])
        return Response(
            {
                # the context it went to: after a takeover, the agent of that role in the resumed run
                "context_id": snapshot.get("context_id", context_id),
                "text": data.validated_data["text"].strip(),
                "snapshot": _stored_snapshot(snapshot),
            },
            status=status.HTTP_201_CREATED,
        )
