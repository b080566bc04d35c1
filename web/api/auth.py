"""Token authentication: ``POST /auth/token {username, password}`` -> ``{token}``."""

from __future__ import annotations

from django.contrib.auth import authenticate
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework.authtoken.models import Token
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.throttling import AnonRateThrottle
from rest_framework.views import APIView

from teamclaw import api_fields
from teamclaw.api_errors import error_response


class TokenRequestSerializer(api_fields.StrictSerializer):
    username = api_fields.StrictCharField()
    password = api_fields.StrictCharField(style={"input_type": "password"}, trim_whitespace=False)


class LoginThrottle(AnonRateThrottle):
    rate = "20/min"


class TokenView(APIView):
    """Exchange a username and password for an API token (``Authorization: Token <token>``)."""

    authentication_classes: list[type] = []
    permission_classes = [AllowAny]
    throttle_classes = [LoginThrottle]

    @extend_schema(request=TokenRequestSerializer, responses={200: OpenApiTypes.OBJECT})
    def post(self, request: Request) -> Response:
        data = TokenRequestSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        # the Django request, not DRF's wrapper: login-failure tracking (django-axes) reads it
        user = authenticate(
            request._request, username=data.validated_data["username"], password=data.validated_data["password"]
        )
        if user is None or not user.is_active:
            return error_response("wrong username or password")
        token, _ = Token.objects.get_or_create(user=user)
        return Response({"token": token.key})
