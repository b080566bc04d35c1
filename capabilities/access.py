"""Who may change which configuration (issue 5; docs/architecture.md §9).

Viewing needs a login. Changing config needs the staff flag or the matching Django
permission, so an installation can hand out, say, only the tool matrix to a security lead.
The same check guards the API (``CanChangeConfig``) and the pages (``require_change``).
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied
from rest_framework.permissions import SAFE_METHODS, BasePermission

PERMISSIONS: dict[str, str] = {
    "invoke_matrix": "capabilities.change_invokepermission",
    "tool_matrix": "capabilities.change_toolpermission",
    "constraints": "capabilities.change_roleconstraint",
    "role_create": "capabilities.add_agentrole",
    "role": "capabilities.change_agentrole",
    "role_delete": "capabilities.delete_agentrole",
    "capability": "capabilities.change_capabilitycard",
    "project_create": "capabilities.add_project",
    "project": "capabilities.change_project",
    "import": "capabilities.import_config",
}
"""Config action -> the Django permission that grants it (besides the staff flag)."""


def can_change(user: Any, action: str) -> bool:
    """True when ``user`` may perform config ``action`` (a key of PERMISSIONS)."""
    if user is None or not getattr(user, "is_authenticated", False) or not user.is_active:
        return False
    return bool(user.is_staff or user.has_perm(PERMISSIONS[action]))


def refusal(action: str) -> str:
    """The reason shown when ``can_change`` says no."""
    return f"changing this needs the staff flag or the '{PERMISSIONS[action]}' permission"


def require_change(user: Any, action: str) -> None:
    """Raise PermissionDenied (HTTP 403) unless ``user`` may perform ``action``."""
    if not can_change(user, action):
        raise PermissionDenied(refusal(action))


STAFF_ONLY = "this change needs a staff user"
"""Why a signed-in user's write is refused where no Django permission grants it (only staff)."""


class CanChangeConfig(BasePermission):
    """DRF permission: reads need a login (401 "authentication required"); writes need
    ``view.config_actions[method]`` (403 ``refusal(action)``), or the staff flag where the
    view names no action for the method (403 ``STAFF_ONLY``)."""

    message = "authentication required"

    def has_permission(self, request: Any, view: Any) -> bool:
        if not (request.user and request.user.is_authenticated):
            return False
        if request.method in SAFE_METHODS:
            return True
        action = getattr(view, "config_actions", {}).get(request.method)
        if action is None:  # no Django permission grants this write: staff only
            if request.user.is_staff:
                return True
            self.message = STAFF_ONLY
            return False
        if can_change(request.user, action):
            return True
        self.message = refusal(action)
        return False
