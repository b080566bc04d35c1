"""What the governed configuration's endpoints share: the project parameter of the schema
and the 409 of a stale version with the current document."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiParameter
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from capabilities.access import CanChangeConfig
from capabilities.errors import StaleVersion

PROJECT_PARAM = OpenApiParameter("project", str, description="Project slug: that project's layer (overrides).")


def with_current(exc: StaleVersion, current: dict[str, Any] | None) -> StaleVersion:
    """``exc`` carrying the ``current`` document too (the 409's ``current`` key), so the
    client sees what it would overwrite."""
    if current is not None:
        exc.extra["current"] = current
    return exc


class GovernanceView(APIView):
    """Base view of a governed config document: ``CanChangeConfig``; a stale save's 409 also
    carries the ``current`` document (refusals reach the API's one error handler)."""

    permission_classes = [CanChangeConfig]
    config_actions: dict[str, str] = {}

    def current_document(self, request: Request) -> dict[str, Any] | None:
        """The document as it is now (None: the 409 shows only the changes since)."""
        return None

    def handle_exception(self, exc: Exception) -> Response:
        if isinstance(exc, StaleVersion):
            with_current(exc, self.current_document(self.request))
        return super().handle_exception(exc)
