"""Error responses: JSON in the API's error shape (``{"detail", "errors": {}}``, teamclaw.api_errors)
under /api/, the site's pages elsewhere."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render

MESSAGES = {
    400: "the request could not be read (too large, or malformed)",
    403: "you may not do this",
    404: "there is nothing here",
    500: "the server failed; the error is logged",
}


def _respond(request: HttpRequest, status: int) -> HttpResponse:
    if request.path_info.startswith("/api/"):
        return JsonResponse({"detail": MESSAGES[status], "errors": {}}, status=status)
    hint = "Documents are limited to a few megabytes; upload a smaller file." if status == 400 else ""
    return render(request, "error.html", {"status": status, "message": MESSAGES[status], "hint": hint}, status=status)


def bad_request(request: HttpRequest, exception: Any = None) -> HttpResponse:
    return _respond(request, 400)


def permission_denied(request: HttpRequest, exception: Any = None) -> HttpResponse:
    return _respond(request, 403)


def page_not_found(request: HttpRequest, exception: Any = None) -> HttpResponse:
    return _respond(request, 404)


def server_error(request: HttpRequest) -> HttpResponse:
    if request.path_info.startswith("/api/"):
        return JsonResponse({"detail": MESSAGES[500], "errors": {}}, status=500)
    # no template context processors here: the failure may be in them
    return HttpResponse("<h1>Server error</h1><p>The server failed; the error is logged.</p>", status=500)
