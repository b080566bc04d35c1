"""One error shape for the whole REST API.

Every 4xx/5xx body is a JSON object ``{"detail": str, "errors": {field: [reason, ...]}}``, so a
client can always show the field and the reason:

- ``detail``: one sentence for a person (for a field error, ``"<field>: <first reason>"``);
- ``errors``: always present; each field at fault (``a.b``/``a[0].b`` for nested fields, a JSON
  pointer in imported documents, ``non_field_errors`` for the body as a whole) with its
  reasons, and ``{}`` when the request is refused without a field at fault (not signed in,
  not allowed, nothing there, a body that is not JSON, a version conflict...).

Some refusals add keys of their own next to these two (a 409 conflict: ``current_version``,
``your_version``, ``changes``, ``current``; skill lifecycle refusals: ``errorCode``...).
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.core.exceptions import ValidationError as DjangoValidationError
from rest_framework import status
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler
from rest_framework.views import set_rollback

from teamclaw.errors import DomainError


def _flatten(detail: Any) -> dict[str, list[str]]:
    if isinstance(detail, dict):
        out: dict[str, list[str]] = {}
        for key, value in detail.items():
            if isinstance(value, dict):
                for sub, reasons in _flatten(value).items():
                    out[f"{key}.{sub}"] = reasons
            elif isinstance(value, list) and value and isinstance(value[0], dict):
                for index, item in enumerate(value):
                    for sub, reasons in _flatten(item).items():
                        out[f"{key}[{index}].{sub}"] = reasons
            else:
                out[str(key)] = [str(v) for v in (value if isinstance(value, list) else [value])]
        return out
    if isinstance(detail, list):
        return {"non_field_errors": [str(v) for v in detail]}
    return {"non_field_errors": [str(detail)]}


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """DRF exception handler producing ``{"detail", "errors"}`` for every exception DRF
    answers: a ``DomainError`` (the services' refusals) with its status and extra keys, DRF's
    own exceptions, and Django ValidationErrors as 400s instead of 500s."""
    if isinstance(exc, DomainError):
        set_rollback()
        return Response(exc.body(), status=exc.status)
    if isinstance(exc, RequestDataTooBig):
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        return error_response(
            f"the request body is larger than {limit:,} bytes", code=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
        )
    if isinstance(exc, DjangoValidationError):
        exc = ValidationError(exc.message_dict if hasattr(exc, "error_dict") else exc.messages)
    response = drf_exception_handler(exc, context)
    if response is None:
        return None
    if not isinstance(exc, ValidationError) and isinstance(response.data, dict) and set(response.data) == {"detail"}:
        response.data = {"detail": str(response.data["detail"]), "errors": {}}
    else:  # field errors (a ValidationError, or any APIException raised with a list or mapping)
        errors = _flatten(response.data)
        first = next(iter(errors.items()), ("", [""]))
        detail = f"{first[0]}: {first[1][0]}" if first[0] and first[0] != "non_field_errors" else first[1][0]
        response.data = {"detail": detail or "Invalid input.", "errors": errors}
    return response


def error_response(
    detail: str, errors: dict[str, list[str]] | None = None, code: int = status.HTTP_400_BAD_REQUEST, **extra: Any
) -> Response:
    """A response in the API's error shape, for views that refuse input themselves:
    ``{"detail", "errors"}`` (``errors`` is ``{}`` when no field is at fault) plus ``extra``."""
    body: dict[str, Any] = {"detail": detail, "errors": errors or {}}
    body.update(extra)
    return Response(body, status=code)
