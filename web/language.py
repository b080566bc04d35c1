"""The page language saved on the operator (issue 32, docs/architecture.md "Translations").

The switcher posts to ``set_language_saved`` (Django's ``set_language``, which sets the
``django_language`` cookie); for a signed-in user the choice is also saved on the user
(``monitoring.OperatorPreference``). ``SavedLanguageMiddleware`` (after authentication)
brings it back where the cookie is missing (another browser, a cleared cookie): it activates
the saved language for the request and sets the cookie on the answer. The cookie, when
present, wins: it is the latest choice in this browser.
"""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.contrib.auth.decorators import login_not_required
from django.http import HttpRequest, HttpResponse
from django.utils import translation
from django.views.decorators.http import require_POST
from django.views.i18n import set_language

from monitoring.models import OperatorPreference

LANGUAGES = {code for code, _name in settings.LANGUAGES}


@login_not_required
@require_POST
def set_language_saved(request: HttpRequest) -> HttpResponse:
    """Django's ``set_language`` (POST ``language``, ``next``), and for a signed-in user the
    language saved on the user; an unknown code is left to Django (which ignores it)."""
    response = set_language(request)
    language = request.POST.get("language", "")
    user = getattr(request, "user", None)
    if language in LANGUAGES and user is not None and user.is_authenticated:
        OperatorPreference.objects.update_or_create(user=user, defaults={"language": language})
    return response


class SavedLanguageMiddleware:
    """Activate the signed-in operator's saved language when the request has no language
    cookie, and set the cookie on the answer (module docstring)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        saved = self._saved(request)
        if saved:
            translation.activate(saved)
            request.LANGUAGE_CODE = saved
        response = self.get_response(request)
        if saved:
            response.set_cookie(settings.LANGUAGE_COOKIE_NAME, saved, samesite="Lax")
        return response

    @staticmethod
    def _saved(request: HttpRequest) -> str:
        if settings.LANGUAGE_COOKIE_NAME in request.COOKIES:
            return ""
        user = getattr(request, "user", None)
        if user is None or not user.is_authenticated:
            return ""
        language = OperatorPreference.objects.filter(user=user).values_list("language", flat=True).first() or ""
        return language if language in LANGUAGES else ""
