"""Login required everywhere (pages redirect to the login page, the API answers 401 itself);
the Content-Security-Policy header on every response."""

from __future__ import annotations

from inspect import iscoroutinefunction
from typing import Any

from asgiref.sync import sync_to_async
from django.contrib.auth.middleware import LoginRequiredMiddleware
from django.core.exceptions import DisallowedHost
from django.http import JsonResponse
from django.shortcuts import render
from django.utils.decorators import sync_and_async_middleware
from django.utils.translation import gettext


class LoginRequiredForPagesMiddleware(LoginRequiredMiddleware):
    """Django's LoginRequiredMiddleware for pages; ``/api/`` is left to DRF, whose token and
    session authentication answer 401/403 instead of redirecting a program to a login form."""

    def process_view(self, request: Any, view_func: Any, view_args: Any, view_kwargs: Any) -> Any:
        if request.path_info.startswith("/api/"):
            return None
        return super().process_view(request, view_func, view_args, view_kwargs)


def content_security_policy(request: Any) -> str:
    """The page's Content-Security-Policy: everything from this site only (scripts, styles,
    fonts, frames, forms; images also as ``data:`` URIs), no plugins, never framed, and
    sockets only to this site (``'self'`` plus its own ``ws:``/``wss:`` origin, spelled out for
    browsers whose ``'self'`` leaves sockets out). No inline script or style is allowed."""
    socket_scheme = "wss" if request.is_secure() else "ws"
    try:
        own_socket = f" {socket_scheme}://{request.get_host()}"
    except DisallowedHost:
        own_socket = ""
    return (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self'; "
        f"connect-src 'self'{own_socket}; object-src 'none'; base-uri 'self'; form-action 'self'; "
        "frame-ancestors 'none'"
    )


@sync_and_async_middleware
def content_security_policy_middleware(get_response: Any) -> Any:
    """Adds ``content_security_policy`` to every response that has none of its own (Django's
    SecurityMiddleware sets no CSP); synchronous or asynchronous as the stack around it."""

    def add_header(request: Any, response: Any) -> Any:
        if "Content-Security-Policy" not in response:
            response["Content-Security-Policy"] = content_security_policy(request)
        return response

    if iscoroutinefunction(get_response):

        async def middleware(request: Any) -> Any:
            return add_header(request, await get_response(request))

    else:

        def middleware(request: Any) -> Any:  # type: ignore[misc]
            return add_header(request, get_response(request))

    return middleware


NUL_DETAIL = "the URL may not contain a NUL character (%00)"
"""The API's refusal of a URL with NUL in its path or query (English: programs read it)."""


@sync_and_async_middleware
def nul_free_urls_middleware(get_response: Any) -> Any:
    """Refuse a request whose path or query string holds a NUL character (``%00``) with 400
    (the API's error shape under /api/, the error page elsewhere, in the operator's language)
    before any view looks it up: PostgreSQL text cannot hold NUL, so a lookup by it would
    fail with a 500, and no name in the product holds one."""

    if iscoroutinefunction(get_response):

        async def middleware(request: Any) -> Any:
            if _has_nul(request):
                return await sync_to_async(_nul_refusal)(request)
            return await get_response(request)

    else:

        def middleware(request: Any) -> Any:  # type: ignore[misc]
            if _has_nul(request):
                return _nul_refusal(request)
            return get_response(request)

    return middleware


def _has_nul(request: Any) -> bool:
    if "\x00" in request.path_info:
        return True
    return any("\x00" in key or any("\x00" in value for value in values) for key, values in request.GET.lists())


def _nul_refusal(request: Any) -> Any:
    if request.path_info.startswith("/api/"):
        return JsonResponse({"detail": NUL_DETAIL, "errors": {"url": ["may not contain %00"]}}, status=400)
    message = gettext("the address may not contain a NUL character (%00)")
    return render(request, "error.html", {"status": 400, "message": message}, status=400)
