"""The pages' one place for a refusal that no view turned into a form error: a
``DomainError`` raised while serving a page becomes the site's error page with the error's
status and message (the API answers it in its error shape: ``teamclaw.api_errors``)."""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from teamclaw.errors import DomainError


def domain_error_page(request: HttpRequest, exc: DomainError) -> HttpResponse:
    """The error page for ``exc``: its status, its message and the fields at fault."""
    context = {"status": exc.status, "message": exc.message, "errors": exc.errors}
    return render(request, "error.html", context, status=exc.status)


class DomainErrorPagesMiddleware:
    """Renders ``domain_error_page`` for a DomainError a page view raised (never for the
    API under ``/api/``, whose exception handler answers it)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if isinstance(exception, DomainError) and not request.path_info.startswith("/api/"):
            return domain_error_page(request, exception)
        return None
