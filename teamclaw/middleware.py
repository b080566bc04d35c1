"""Login required everywhere: pages redirect to the login page, the API answers 401 itself."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.middleware import LoginRequiredMiddleware


class LoginRequiredForPagesMiddleware(LoginRequiredMiddleware):
    """Django's LoginRequiredMiddleware for pages; ``/api/`` is left to DRF, whose token and
    session authentication answer 401/403 instead of redirecting a program to a login form."""

    def process_view(self, request: Any, view_func: Any, view_args: Any, view_kwargs: Any) -> Any:
        if request.path_info.startswith("/api/"):
            return None
        return super().process_view(request, view_func, view_args, view_kwargs)
