"""Tool confirmations (PRD §4.7 ⚠️): list them, approve or reject one (from any web process:
``runs.confirmations``)."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.permissions import IsAdminUser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from monitoring.access import visible_tasks
from runs.confirmations import confirmation_dict, decide, list_confirmations
from teamclaw import api_fields
from teamclaw.api_query import StrictPagination, non_blank_text, query_parameters


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
        result = decide(confirmation_id, data.validated_data["approve"], user)
        return Response(result)


class ConfirmationListView(APIView):
    """``GET /confirmations?task_id=&status=``: confirmations newest first (paginated), of the
    tasks the caller may see; ``status`` is pending, approved, rejected or expired."""

    @extend_schema(operation_id="confirmations_list", responses=OpenApiTypes.OBJECT)
    @query_parameters(
        OpenApiParameter("task_id", non_blank_text(), description="only this task's (not blank)"),
        OpenApiParameter("status", str, enum=["pending", "approved", "rejected", "expired"]),
        paginated=True,
    )
    def get(self, request: Request) -> Response:
        rows = list_confirmations(
            task_id=request.query_params.get("task_id"), status=request.query_params.get("status")
        ).filter(task_id__in=visible_tasks(request.user).values("pk"))
        paginator = StrictPagination()
        page = paginator.paginate_queryset(rows, request, view=self)
        return paginator.get_paginated_response([confirmation_dict(row) for row in page or []])
