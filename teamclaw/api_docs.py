"""The interactive API page (``/api/v1/docs/``, Swagger UI from drf-spectacular's sidecar)."""

from __future__ import annotations

from drf_spectacular.views import SpectacularSwaggerView
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response


class ApiDocsView(SpectacularSwaggerView):
    """Swagger UI; a refusal (401 without a login, 403) is answered like every API error,
    ``{"detail", "errors": {}}`` in JSON, instead of a bare "401 Unauthorized" text page."""

    def handle_exception(self, exc: Exception) -> Response:
        self.request.accepted_renderer = JSONRenderer()
        self.request.accepted_media_type = JSONRenderer.media_type
        return super().handle_exception(exc)
