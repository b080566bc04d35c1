"""What the governed configuration's endpoints share: the project scope, the body's envelope
(the document version loaded, the change note) and the 409 of a stale version."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from drf_spectacular.utils import OpenApiParameter
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from capabilities.access import CanChangeConfig
from capabilities.errors import StaleVersion
from teamclaw import api_fields
from teamclaw.json_types import json_type_name

PROJECT_PARAM = OpenApiParameter("project", str, description="Project slug: that project's layer (overrides).")


NOTE_MAX = 2000


def body(request: Request, fields: Iterable[str] | None) -> dict[str, Any]:
    """The JSON object body; 400 when it is not an object or has a key outside ``fields``.

    ``fields`` are the envelope's keys (what each value holds is checked by the domain code it
    goes to); None when that domain code refuses unknown keys itself, listed with every other
    problem of the body (roles, cards, projects)."""
    data = request.data
    if not isinstance(data, dict):
        raise ValidationError({"non_field_errors": ["the body must be a JSON object"]})
    if fields is not None:
        api_fields.refuse_unknown_fields(data, fields)
    return dict(data)


def version_of(data: dict[str, Any], field: str = "version") -> int:
    """The client's document version; 400 when missing or not a whole number >= 0."""
    value = data.pop(field, None)
    if value is None:
        raise ValidationError({field: ["this field is required: the version you loaded (optimistic concurrency)"]})
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValidationError({field: ["must be a whole number >= 0"]})
    return value


def note_of(data: dict[str, Any]) -> str:
    """The change note (optional, up to 2,000 characters)."""
    note = data.pop("note", "") or ""
    if not isinstance(note, str):
        raise ValidationError({"note": [f"must be a string, not {json_type_name(note)}"]})
    if len(note) > NOTE_MAX:
        raise ValidationError({"note": [f"must be at most {NOTE_MAX} characters"]})
    return note.strip()


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
