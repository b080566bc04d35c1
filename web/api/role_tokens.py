"""Role-bound tokens for MCP and A2A clients (issue 16), staff only.

- ``POST /auth/role-tokens {"role", "name"}`` -> 201 ``{"token", ...}``: the secret appears once.
- ``GET /auth/role-tokens`` (``?active=true|false``): every token, without secrets, newest first.
- ``DELETE /auth/role-tokens/{id}``: revoke (the row stays, for the audit)."""

from __future__ import annotations

from django.db.models import QuerySet
from django.utils.cache import add_never_cache_headers
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.permissions import IsAdminUser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from interop import role_tokens
from interop.models import RoleToken
from teamclaw import api_fields
from teamclaw.api_errors import error_response
from teamclaw.api_query import StrictPagination, query_parameters


class RoleTokenRequestSerializer(api_fields.StrictSerializer):
    role = api_fields.StrictCharField(
        max_length=40, help_text="An existing role's slug (a role that does not exist: 400 naming role)."
    )
    name = api_fields.StrictCharField(max_length=100)


def role_token_document(row: RoleToken) -> dict[str, object]:
    """``{id, name, role, prefix, active, createdBy, createdAt, lastUsedAt, revokedAt}`` (no secret)."""
    return {
        "id": row.pk,
        "name": row.name,
        "role": row.role.role,
        "prefix": row.prefix,
        "active": row.active,
        "createdBy": row.created_by.get_username() if row.created_by else None,
        "createdAt": row.created_at,
        "lastUsedAt": row.last_used_at,
        "revokedAt": row.revoked_at,
    }


def filtered_tokens(active: str | None) -> QuerySet[RoleToken]:
    """Tokens newest first; ``active`` is 'true', 'false' or None (all). Raises ValueError otherwise."""
    rows = RoleToken.objects.select_related("role", "created_by")
    if active is None:
        return rows
    if active not in ("true", "false"):
        raise ValueError("active must be true or false")
    return rows.filter(revoked_at__isnull=active == "true")


class RoleTokenListView(APIView):
    """List and issue role-bound tokens."""

    permission_classes = [IsAdminUser]

    @extend_schema(responses=OpenApiTypes.OBJECT)
    @query_parameters(OpenApiParameter("active", OpenApiTypes.STR, enum=["true", "false"]), paginated=True)
    def get(self, request: Request) -> Response:
        try:
            rows = filtered_tokens(request.query_params.get("active"))
        except ValueError as exc:
            return error_response("invalid query", errors={"active": [str(exc)]})
        paginator = StrictPagination()
        page = paginator.paginate_queryset(rows, request, view=self)
        return paginator.get_paginated_response([role_token_document(r) for r in page or []])

    @extend_schema(request=RoleTokenRequestSerializer, responses={201: OpenApiTypes.OBJECT, 400: OpenApiTypes.OBJECT})
    def post(self, request: Request) -> Response:
        data = RoleTokenRequestSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            issued = role_tokens.issue(data.validated_data["role"], data.validated_data["name"], request.user)
        except role_tokens.RoleTokenError as exc:
            return error_response("cannot issue the token", errors={exc.field: [exc.reason]})
        response = Response({**role_token_document(issued.row), "token": issued.secret}, status=201)
        add_never_cache_headers(response)  # it carries the secret: no cache may keep it
        return response


class RoleTokenDetailView(APIView):
    """Revoke one token."""

    permission_classes = [IsAdminUser]

    @extend_schema(request=None, responses={200: OpenApiTypes.OBJECT, 404: OpenApiTypes.OBJECT})
    def delete(self, request: Request, token_id: int) -> Response:
        try:
            row = role_tokens.revoke(token_id)
        except RoleToken.DoesNotExist:
            return error_response(f"there is no role token {token_id}", code=404)
        return Response(role_token_document(row))
