"""What the governed configuration's endpoints share: the project parameter of the schema,
the 409 of a stale version with the current document, and the audit of refused writes."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from drf_spectacular.utils import OpenApiParameter
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from capabilities.access import CanChangeConfig
from capabilities.config import record_refusal
from capabilities.errors import StaleVersion
from capabilities.models import Project
from teamclaw.errors import DomainError

log = logging.getLogger(__name__)

ACTION_TYPES = {
    "constraints": "constraint",
    "import": "import",
    "invoke_matrix": "permission",
    "tool_matrix": "tool_binding",
    "project": "project",
    "project_create": "project",
    "role": "role",
    "role_create": "role",
    "role_delete": "role",
    "capability": "capability",
}
"""``config_actions`` action -> the audit trail's ``config_type``."""
ENVELOPE = frozenset({"version", "document_version", "note"})
REFUSED_STATUSES = frozenset({400, 409, 413, 415, 422})
"""The answers to a governed write that are refusals of it (PRD §4.8: audited as
``outcome: refused``): a body or value refused, a stale version; and a 403 to a signed-in
user (``refused_write``). A 401 (nobody to name) and a 404 are not."""


def refused_write(status: int, user: Any) -> bool:
    """Whether an answer with ``status`` to a governed write by ``user`` refuses it (issue 31:
    every refused write is audited): a status of REFUSED_STATUSES, or a 403 to a user who
    signed in (an anonymous caller's 401 or 403 names nobody and stays out of the trail)."""
    if status in REFUSED_STATUSES:
        return True
    return status == 403 and bool(getattr(user, "is_authenticated", False))


class RefusalAudit(APIView):
    """For a view of governed config writes (``config_actions``, or ``refusal_types`` for one
    whose permission is checked otherwise: ``{method: config_type}``): a write the service
    refused (a DomainError such as a 409 stale version, a 400 naming fields, a body that
    cannot be read) is audited as ``outcome: refused`` (``capabilities.config.record_refusal``)
    once the error answer is made, after the attempt's transaction rolled back. Which
    refusals count is read from the answer's status (``REFUSED_STATUSES``), not from the
    exception's class, so none escapes the trail (issue 31: a Django ValidationError, a 413
    or a 415 did). A signed-in user's write refused for want of permission (403) is audited
    too; an anonymous one (401), and anything not found, is not."""

    config_actions: dict[str, str] = {}
    refusal_types: dict[str, str] = {}

    def handle_exception(self, exc: Exception) -> Response:
        response = super().handle_exception(exc)
        if refused_write(response.status_code, getattr(self.request, "_user", None)):
            config_type = self.refusal_types.get(self.request.method or "") or ACTION_TYPES.get(
                self.config_actions.get(self.request.method or "", "")
            )
            if config_type:
                try:
                    self._audit_refusal(config_type, response, exc)
                except Exception:  # the refusal is answered whether or not it could be audited
                    log.exception("could not audit a refused %s write", config_type)
        return response

    def _audit_refusal(self, config_type: str, response: Response, exc: Exception) -> None:
        request = self.request
        body = response.data if isinstance(response.data, Mapping) else {}
        try:
            sent = request.data
        except Exception:  # the body itself was refused (not JSON, duplicate keys...)
            sent = None
        sent = sent if isinstance(sent, Mapping) else {}
        slug = request.query_params.get("project") or self.kwargs.get("slug") or ""
        note = sent.get("note")
        record_refusal(
            config_type,
            refusal={
                "status": response.status_code,
                "code": exc.code if isinstance(exc, DomainError) else getattr(exc, "default_code", "invalid"),
                "detail": str(body.get("detail", ""))[:2000],
                "errors": body.get("errors") or {},
                "method": request.method,
                "path": request.path,
            },
            attempted_fields=[key for key in sent if key not in ENVELOPE],
            role=str(self.kwargs.get("role") or ""),
            project=Project.objects.filter(slug=slug).first() if slug else None,
            note=note if isinstance(note, str) else "",
            actor=request.user,
        )


PROJECT_PARAM = OpenApiParameter("project", str, description="Project slug: that project's layer (overrides).")


def with_current(exc: StaleVersion, current: dict[str, Any] | None) -> StaleVersion:
    """``exc`` carrying the ``current`` document too (the 409's ``current`` key), so the
    client sees what it would overwrite."""
    if current is not None:
        exc.extra["current"] = current
    return exc


class GovernanceView(RefusalAudit):
    """Base view of a governed config document: ``CanChangeConfig``; a stale save's 409 also
    carries the ``current`` document (refusals reach the API's one error handler and are
    audited, ``RefusalAudit``)."""

    permission_classes = [CanChangeConfig]
    config_actions: dict[str, str] = {}

    def current_document(self, request: Request) -> dict[str, Any] | None:
        """The document as it is now (None: the 409 shows only the changes since)."""
        return None

    def handle_exception(self, exc: Exception) -> Response:
        if isinstance(exc, StaleVersion):
            with_current(exc, self.current_document(self.request))
        return super().handle_exception(exc)
