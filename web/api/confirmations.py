"""Tool confirmations (PRD §4.7 ⚠️): approve or reject one."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework.permissions import IsAdminUser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from runs.confirmations import decide
from teamclaw import api_fields


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
