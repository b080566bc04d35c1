"""The site's icon at the address browsers ask for without a ``<link rel="icon">``."""

from __future__ import annotations

from django.contrib.auth.decorators import login_not_required
from django.http import HttpRequest, HttpResponsePermanentRedirect
from django.templatetags.static import static
from django.views.decorators.http import require_safe


@login_not_required
@require_safe
def favicon(request: HttpRequest) -> HttpResponsePermanentRedirect:
    """``/favicon.ico``: a permanent redirect to the SVG icon in the static files (no login,
    so the login page's own request for it is not bounced to the login page)."""
    return HttpResponsePermanentRedirect(static("teamclaw/favicon.svg"))
