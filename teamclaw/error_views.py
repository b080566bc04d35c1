"""Error responses: JSON in the API's error shape (``{"detail", "errors": {}}``, teamclaw.api_errors)
under /api/, the site's pages elsewhere."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.utils.translation import gettext, gettext_lazy

MESSAGES = {
    400: "the request could not be read (too large, or malformed)",
    403: "you may not do this",
    404: "there is nothing here",
    500: "the server failed; the error is logged",
}
"""The API's error details (English: programs read them)."""
PAGE_MESSAGES = {
    400: gettext_lazy("the request could not be read (too large, or malformed)"),
    403: gettext_lazy("you may not do this"),
    404: gettext_lazy("there is nothing here"),
}
"""The same on the site's error pages, in the operator's language (500 has no template)."""


def _respond(request: HttpRequest, status: int) -> HttpResponse:
    if request.path_info.startswith("/api/"):
        return JsonResponse({"detail": MESSAGES[status], "errors": {}}, status=status)
    hint = gettext("Documents are limited to a few megabytes; upload a smaller file.") if status == 400 else ""
    context = {"status": status, "message": PAGE_MESSAGES[status], "hint": hint}
    return render(request, "error.html", context, status=status)


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
    title, text = gettext("Server error"), gettext("The server failed; the error is logged.")
    return HttpResponse(f"<h1>{title}</h1><p>{text}</p>", status=500)
