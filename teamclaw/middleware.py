"""Login required everywhere (pages redirect to the login page, the API answers 401 itself);
the Content-Security-Policy header on every response."""

from __future__ import annotations

from inspect import iscoroutinefunction
from typing import Any

from django.contrib.auth.middleware import LoginRequiredMiddleware
from django.core.exceptions import DisallowedHost
from django.utils.decorators import sync_and_async_middleware


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
