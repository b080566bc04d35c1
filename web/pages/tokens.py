"""Pages: role-bound tokens for MCP and A2A clients (issue 16), staff only.

The list shows every token (role, prefix, created, last used, revoked); the issue form takes a
role and a name and shows the new secret once, on the page that answers the form (it is never
stored, only its SHA-256 digest: ``interop.role_tokens``); revoking asks first and keeps the row.
"""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST

from capabilities.models import AgentRole
from interop import role_tokens
from interop.mcp_server import MCP_PATH
from interop.models import RoleToken


def _require_staff(request: HttpRequest) -> None:
    if not request.user.is_staff:
        raise PermissionDenied(_("managing role tokens needs a staff account"))


@never_cache  # the answer to an issue shows the secret: no cache may keep it
@require_http_methods(["GET", "POST"])
def token_list(request: HttpRequest) -> HttpResponse:
    """Every role token newest first and the issue form; a POST issues one and shows its
    secret once (HTTP 201), or the form again with the reasons (HTTP 400)."""
    _require_staff(request)
    form = {"role": "", "name": ""}
    errors: dict[str, list[str]] = {}
    issued: role_tokens.IssuedToken | None = None
    status = 200
    if request.method == "POST":
        form = {"role": request.POST.get("role", ""), "name": request.POST.get("name", "")}
        try:
            issued = role_tokens.issue(form["role"], form["name"], request.user)
        except role_tokens.RoleTokenError as exc:
            errors, status = {exc.field: [exc.reason]}, 400
        else:
            form, status = {"role": "", "name": ""}, 201
    return render(
        request,
        "interop/token_list.html",
        {
            "nav": "tokens",
            "tokens": RoleToken.objects.select_related("role", "created_by"),
            "roles": AgentRole.objects.filter(enabled=True).order_by("role"),
            "form": form,
            "errors": errors,
            "issued": issued,
            "mcp_url": request.build_absolute_uri(MCP_PATH),
        },
        status=status,
    )


@require_POST
def token_revoke(request: HttpRequest, token_id: int) -> HttpResponse:
    """Revoke a token (the page asks first); its clients are refused from their next request."""
    _require_staff(request)
    try:
        row = role_tokens.revoke(token_id)
    except RoleToken.DoesNotExist:
        messages.error(request, _("There is no role token %(id)s.") % {"id": token_id})
    else:
        messages.success(request, _("Token “%(name)s” revoked.") % {"name": row.name})
    return redirect("tokens")
