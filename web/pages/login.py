"""The login page: Django's LoginView, plus a true hint of where the ``admin`` password is
(``capabilities.admin_password``: the generated-password file, the environment, or neither)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.views import LoginView

from capabilities.admin_password import ENVIRONMENT_VARIABLE, admin_password_file, admin_password_source, shown_path


class LoginPage(LoginView):
    """``/login/``: the form, and ``admin_password`` ``{source, file, variable}`` for the hint
    under it (``source`` as ``admin_password_source``)."""

    template_name = "login.html"

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        context["admin_password"] = {
            "source": admin_password_source(),
            "file": shown_path(admin_password_file()),
            "variable": ENVIRONMENT_VARIABLE,
        }
        return context
