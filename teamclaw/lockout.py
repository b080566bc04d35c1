"""What a locked-out login attempt gets (django-axes ``AXES_LOCKOUT_CALLABLE``)."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render


def lockout_response(
    request: HttpRequest, response: Any = None, credentials: Any = None, *args: Any, **kwargs: Any
) -> HttpResponse:
    """HTTP 429: JSON in the API's error shape for /api/, the explanation page otherwise."""
    if request.path_info.startswith("/api/"):
        return JsonResponse(
            {"detail": "too many failed logins for this user from this address; try again later", "errors": {}},
            status=429,
        )
    return render(request, "locked_out.html", status=429)
