"""Page: the OAuth consent step of a desktop client's MCP connector (issue 29;
``interop.mcp_oauth``).

``GET /oauth/consent/<grant>/`` (behind the login) names the client and where it will be sent
back; a staff user picks the role the client will act as and approves, anyone may deny. Either
answer sends the browser back to the client's registered redirect URI (with ``code`` and
``state``, or ``error=access_denied``). A grant that is unknown, expired (15 minutes) or answered
already is a 404 page saying so; a refused approval (non-staff, no such role) shows the form
again with the reason (HTTP 400).
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

from django import forms
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods

from capabilities.models import AgentRole
from interop import mcp_oauth
from interop.models import OAuthGrant
from teamclaw.errors import DomainError
from teamclaw.middleware import content_security_policy

SCHEME = re.compile(r"^[a-z][a-z0-9+.-]{0,30}$")
HOST_PORT = re.compile(r"^[A-Za-z0-9.\-]{1,253}(:[0-9]{1,5})?$|^\[[0-9A-Fa-f:.]{2,45}\](:[0-9]{1,5})?$")


def form_target(redirect_uri: str) -> str:
    """The CSP source of ``redirect_uri``: ``scheme://host[:port]`` for http(s), ``scheme:`` for
    an app's own scheme; '' when it cannot be written safely (then only ``'self'`` is allowed)."""
    parts = urlsplit(redirect_uri)
    scheme = parts.scheme.lower()
    if not SCHEME.match(scheme) or scheme in mcp_oauth.UNSAFE_REDIRECT_SCHEMES:
        return ""
    if scheme not in {"http", "https"}:
        return f"{scheme}:"
    return f"{scheme}://{parts.netloc}" if HOST_PORT.match(parts.netloc) else ""


def consent_policy(request: HttpRequest, redirect_uri: str) -> str:
    """The site's CSP with the client's redirect target added to ``form-action``: Chromium
    applies ``form-action`` to the redirect that answers the form, so with ``'self'`` alone
    the approval (and the denial) never reached the client."""
    target = form_target(redirect_uri)
    policy = content_security_policy(request)
    return policy.replace("form-action 'self'", f"form-action 'self' {target}") if target else policy


class ClientRedirect(HttpResponseRedirect):
    """A redirect to the client's registered redirect URI, which may use an app's own scheme
    (a desktop client's ``myapp://callback``); the SDK checked it against the registration."""

    allowed_schemes = ["http", "https"]

    def __init__(self, to: str, *args: Any, **kwargs: Any) -> None:
        scheme = to.split(":", 1)[0].lower()
        if scheme not in mcp_oauth.UNSAFE_REDIRECT_SCHEMES:
            self.allowed_schemes = [*self.allowed_schemes, scheme]
        super().__init__(to, *args, **kwargs)


class ConsentForm(forms.Form):
    """What the person answers: approve (with a role) or deny."""

    decision = forms.ChoiceField(choices=[("approve", "approve"), ("deny", "deny")])
    role = forms.CharField(required=False, max_length=64, label=gettext_lazy("Role"))


@never_cache
@require_http_methods(["GET", "POST"])
def consent(request: HttpRequest, grant_id: str) -> HttpResponse:
    """The consent form (GET) and its answer (POST): a redirect to the client, or the form
    again with the reason (400)."""
    try:
        grant = mcp_oauth.open_grant(grant_id)
    except OAuthGrant.DoesNotExist:
        gone = _("This connection request is unknown, expired or answered already: start again from the client.")
        raise DomainError(gone, status=404, code="not_found") from None
    form = ConsentForm(request.POST or None)
    errors: dict[str, list[str]] = {}
    if request.method == "POST" and form.is_valid():
        if form.cleaned_data["decision"] == "deny":
            return ClientRedirect(mcp_oauth.deny(grant))
        try:
            return ClientRedirect(mcp_oauth.approve(grant, request.user, form.cleaned_data["role"]))
        except mcp_oauth.ConsentError as refused:
            errors = {refused.field: [str(refused)]}
    elif request.method == "POST":
        errors = {name: [str(m) for m in messages] for name, messages in form.errors.items()}
    params = grant.params
    response = render(
        request,
        "interop/oauth_consent.html",
        {
            "grant": grant,
            "client_name": grant.client.name or grant.client.client_id,
            "redirect_uri": params.get("redirect_uri", ""),
            "roles": AgentRole.objects.filter(enabled=True).order_by("role"),
            "chosen": form["role"].value() or "",
            "errors": errors,
        },
        status=400 if errors else 200,
    )
    response["Content-Security-Policy"] = consent_policy(request, str(params.get("redirect_uri", "")))
    return response
