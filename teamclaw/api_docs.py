"""The interactive API page (``/api/v1/docs/``, Swagger UI from drf-spectacular's sidecar)."""

from __future__ import annotations

from drf_spectacular.views import SpectacularSwaggerSplitView
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response


class ApiDocsView(SpectacularSwaggerSplitView):
    """Swagger UI, its init script served from ``?script`` and its styles from files, so the
    Content-Security-Policy needs no inline script or style; a refusal (401 without a login,
    403) is answered like every API error, ``{"detail", "errors": {}}`` in JSON, instead of a
    bare "401 Unauthorized" text page."""

    template_name = "api_docs/swagger_ui.html"

    def handle_exception(self, exc: Exception) -> Response:
        self.request.accepted_renderer = JSONRenderer()
        self.request.accepted_media_type = JSONRenderer.media_type
        return super().handle_exception(exc)
