"""Pages: role-bound tokens for MCP and A2A clients (issue 16), staff only.

The list shows every token (role, prefix, created, last used, revoked); the issue form takes a
role and a name and shows the new secret once, on the page that answers the form (it is never
stored, only its SHA-256 digest: ``interop.role_tokens``); revoking asks first and keeps the row.
"""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST

from capabilities.models import AgentRole
from interop import role_tokens
from interop.mcp_server import MCP_PATH
from interop.models import RoleToken
from teamclaw.errors import DomainError
from web.forms import refuse_into


def _require_staff(request: HttpRequest) -> None:
    if not request.user.is_staff:
        raise PermissionDenied(_("managing role tokens needs a staff account"))


class TokenIssueForm(forms.Form):
    """The issue form: the role the token acts as (an enabled role) and a name saying who or
    what uses it (1..100 characters, the ``RoleToken.name`` column). ``interop.role_tokens.issue``
    checks the same again; its refusal is put on the form (``refuse_into``)."""

    role = forms.CharField(
        max_length=64,
        label=gettext_lazy("Role"),
        error_messages={"required": gettext_lazy("Choose the role the token acts as.")},
    )
    name = forms.CharField(
        max_length=RoleToken._meta.get_field("name").max_length,
        label=gettext_lazy("Name (who or what uses it)"),
        error_messages={"required": gettext_lazy("Give the token a name that says who or what uses it.")},
    )

    def clean_role(self) -> str:
        """The role, which must exist and be enabled."""
        role = str(self.cleaned_data["role"])
        row = AgentRole.objects.filter(role=role).first()
        if row is None:
            raise forms.ValidationError(_("There is no role “%(role)s”.") % {"role": role})
        if not row.enabled:
            raise forms.ValidationError(
                _("Role “%(role)s” is disabled; enable it before issuing a token for it.") % {"role": role}
            )
        return role


@never_cache  # the answer to an issue shows the secret: no cache may keep it
@require_http_methods(["GET", "POST"])
def token_list(request: HttpRequest) -> HttpResponse:
    """Every role token newest first and the issue form (``TokenIssueForm``); a POST issues
    one and shows its secret once (HTTP 201), or the form again with what was typed and the
    reasons next to the fields (HTTP 400)."""
    _require_staff(request)
    form = TokenIssueForm()
    issued: role_tokens.IssuedToken | None = None
    status = 200
    if request.method == "POST":
        form = TokenIssueForm(request.POST)
        if form.is_valid():
            try:
                issued = role_tokens.issue(form.cleaned_data["role"], form.cleaned_data["name"], request.user)
            except role_tokens.RoleTokenError as exc:
                refuse_into(form, DomainError(exc.reason, errors={exc.field: [exc.reason]}))
        if issued is not None:
            form, status = TokenIssueForm(), 201
        else:
            status = 400
    return render(
        request,
        "interop/token_list.html",
        {
            "nav": "tokens",
            "tokens": RoleToken.objects.select_related("role", "created_by"),
            "roles": AgentRole.objects.filter(enabled=True).order_by("role"),
            "form": form,
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
