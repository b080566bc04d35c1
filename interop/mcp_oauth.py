"""OAuth 2.1 for the MCP server (issue 29; MCP specification 2025-11-25, "Authorization"), so a
desktop client's remote connector adds TeamClaw by its URL alone, without ``mcp-remote``.

TeamClaw is both the protected resource (``/mcp``) and its own authorization server, against its
own users; the routes, checks and error shapes are the official ``mcp`` SDK's
(``mcp.server.auth``), this module supplies the storage (``TeamClawOAuthProvider``):

- ``GET /.well-known/oauth-protected-resource/mcp`` (RFC 9728) names the resource and this
  server as its authorization server; a 401 from ``/mcp`` points there in its
  ``WWW-Authenticate: Bearer resource_metadata="…"``.
- ``GET /.well-known/oauth-authorization-server`` (RFC 8414), ``POST /register`` (dynamic client
  registration, RFC 7591), ``GET /authorize`` (authorization code with PKCE S256 only),
  ``POST /token`` (code and refresh-token grants), ``POST /revoke`` (RFC 7009).
- ``/authorize`` sends the person to ``/oauth/consent/<grant>/`` (a Django page behind the
  login): a **staff** user picks the one role the client will act as and approves, as only staff
  issue role tokens by hand (README "MCP"); anyone may deny. The redirect back carries the code.
- The access token **is a role token** (``RoleToken`` with ``oauth_client`` and ``expires_at``):
  ``/mcp`` and ``/a2a`` read it as any role token, so the invoke matrix, constraints and budgets
  of that role apply, and the tokens page lists and revokes it. Refresh tokens rotate on use.

Lifetimes: a code lives ``CODE_TTL_S``, a grant waiting for consent ``GRANT_TTL_S``, an access
token ``ACCESS_TTL_S``, a refresh token ``REFRESH_TTL_S`` (seconds). Secrets (codes, tokens) are
stored as SHA-256 digests only; a registered client's record is kept as the SDK gives it.

Registration and ``/authorize`` are open to anyone, so what they store is bounded: a client
record of at most ``REGISTRATION_MAX_BYTES``, redirect URIs of no browser-run scheme
(``UNSAFE_REDIRECT_SCHEMES``), at most ``MAX_PENDING_CLIENTS`` clients waiting for a first approval
(deleted after ``PENDING_CLIENT_TTL_S``), at most ``MAX_OPEN_GRANTS_PER_CLIENT`` grants of one
client waiting for consent (old grants deleted as new ones open), and the per-host route sets
``HOST_APPS``.
"""

from __future__ import annotations

import json
import secrets
from collections import OrderedDict
from datetime import timedelta
from typing import Any

from channels.db import database_sync_to_async
from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    AuthorizeError,
    RefreshToken,
    RegistrationError,
    TokenError,
    construct_redirect_uri,
)
from mcp.server.auth.routes import create_auth_routes, create_protected_resource_routes
from mcp.server.auth.settings import ClientRegistrationOptions, RevocationOptions
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from pydantic import AnyHttpUrl
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse

from capabilities.models import AgentRole
from interop import role_tokens
from interop.a2a import base_url
from interop.models import OAuthClient, OAuthGrant, OAuthRefreshToken, RoleToken
from interop.mounts import ProtocolHeaders

CODE_TTL_S = 300
GRANT_TTL_S = 15 * 60
ACCESS_TTL_S = 60 * 60
REFRESH_TTL_S = 30 * 24 * 60 * 60
CONSENT_PATH = "/oauth/consent/{grant}/"

REGISTRATION_MAX_BYTES = 16 * 1024
"""Largest client record ``POST /register`` stores (bytes of JSON). Registration is open to
anyone (RFC 7591), so without a bound each anonymous request could store the SDK's 4 MiB body."""
PENDING_CLIENT_TTL_S = 24 * 60 * 60
"""A registered client that no one approved within this many seconds is deleted (at the next
registration): it never got a token, and its registration can be made again."""
MAX_PENDING_CLIENTS = 1000
"""At most this many registered clients waiting for a first approval at once; past it
``/register`` refuses (``invalid_client_metadata`` saying so) until some expire or are approved."""
MAX_OPEN_GRANTS_PER_CLIENT = 20
"""At most this many authorization requests of one client waiting for consent at once; past it
``/authorize`` answers ``temporarily_unavailable``. Undecided grants older than ``GRANT_TTL_S``
and answered ones older than ``ANSWERED_GRANT_KEEP_S`` are deleted when a new one opens."""
ANSWERED_GRANT_KEEP_S = 24 * 60 * 60
UNSAFE_REDIRECT_SCHEMES = frozenset({"javascript", "data", "vbscript", "file", "blob", "about"})
"""Schemes a redirect URI may not use (RFC 9700 §4.1: a browser runs or reads them in place)."""
HOST_APPS = 16
"""How many per-host route sets ``OAuthEndpoint`` keeps (each allowed ``Host`` and port)."""

OAUTH_PATHS = (
    "/.well-known/oauth-authorization-server",
    "/.well-known/oauth-protected-resource",
    "/authorize",
    "/token",
    "/register",
    "/revoke",
)
"""Where the OAuth routes are mounted (``teamclaw.asgi``): each path and what lies under it."""


def resource_metadata_url(base: str) -> str:
    """The protected-resource metadata document of ``/mcp`` under ``base`` (RFC 9728 §3.1)."""
    return base + "/.well-known/oauth-protected-resource/mcp"


# --------------------------------------------------------------------------- storage (sync)


def _client_row(client_id: str) -> OAuthClientInformationFull | None:
    row = OAuthClient.objects.filter(pk=client_id).first()
    return OAuthClientInformationFull.model_validate(row.info) if row else None


def _has_nul(value: Any) -> bool:
    """True when a string anywhere in ``value`` (JSON: dicts, lists, strings) holds NUL."""
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(_has_nul(k) or _has_nul(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_nul(item) for item in value)
    return False


def _registration_problem(client: OAuthClientInformationFull, info: dict[str, Any]) -> RegistrationError | None:
    for uri in client.redirect_uris or []:
        if str(uri).split(":", 1)[0].strip().lower() in UNSAFE_REDIRECT_SCHEMES:
            return RegistrationError(
                "invalid_redirect_uri", f"redirect_uris: the scheme of {str(uri)[:100]} is not allowed"
            )
    text = json.dumps(info)
    if _has_nul(info):  # PostgreSQL text and jsonb cannot hold NUL: it was a 500 there
        return RegistrationError("invalid_client_metadata", "the client metadata may not contain NUL (\\u0000)")
    size = len(text.encode("utf-8"))
    if size > REGISTRATION_MAX_BYTES:
        return RegistrationError(
            "invalid_client_metadata", f"the client metadata is {size} bytes; at most {REGISTRATION_MAX_BYTES}"
        )
    return None


def _pending_clients() -> Any:
    """Registered clients never approved (no access token was issued to them)."""
    return OAuthClient.objects.filter(access_tokens__isnull=True)


def _register(client: OAuthClientInformationFull) -> None:
    """Store ``client`` (module docstring). Raises ``RegistrationError`` for a redirect URI of an
    unsafe scheme, a record over ``REGISTRATION_MAX_BYTES``, or ``MAX_PENDING_CLIENTS`` reached."""
    info = client.model_dump(mode="json", exclude_none=True)
    problem = _registration_problem(client, info)
    if problem is not None:
        raise problem
    stale = timezone.now() - timedelta(seconds=PENDING_CLIENT_TTL_S)
    OAuthClient.objects.filter(pk__in=_pending_clients().filter(created_at__lt=stale).values("pk")).delete()
    if _pending_clients().count() >= MAX_PENDING_CLIENTS:
        raise RegistrationError(
            "invalid_client_metadata",
            f"{MAX_PENDING_CLIENTS} registered clients are waiting for a first approval; try again later",
        )
    OAuthClient.objects.create(client_id=client.client_id or "", name=(client.client_name or "")[:200], info=info)


def _open_grant(client_id: str, params: AuthorizationParams) -> str:
    """A new grant waiting for consent. Raises ``AuthorizeError`` for a parameter holding NUL
    (``state``...: PostgreSQL cannot store it) or when the client has
    ``MAX_OPEN_GRANTS_PER_CLIENT`` waiting already."""
    stored = params.model_dump(mode="json")
    if _has_nul(stored):
        raise AuthorizeError("invalid_request", "a parameter contains NUL (%00)")
    now = timezone.now()
    OAuthGrant.objects.filter(decided_at=None, created_at__lt=now - timedelta(seconds=GRANT_TTL_S)).delete()
    OAuthGrant.objects.filter(decided_at__lt=now - timedelta(seconds=ANSWERED_GRANT_KEEP_S)).delete()
    if OAuthGrant.objects.filter(client_id=client_id, decided_at=None).count() >= MAX_OPEN_GRANTS_PER_CLIENT:
        raise AuthorizeError(
            "temporarily_unavailable",
            f"{MAX_OPEN_GRANTS_PER_CLIENT} requests of this client are waiting for consent; answer or let them expire",
        )
    grant = OAuthGrant.objects.create(id=secrets.token_urlsafe(24), client_id=client_id, params=stored)
    return grant.id


def _revoke_client_tokens(client_id: str) -> None:
    """Revoke every live access and refresh token of ``client_id``: a code or refresh token came
    back after its one use, so someone else may hold what it gave (OAuth 2.1 §4.1.3, §4.3.1;
    RFC 9700 §4.14.2). The client signs in again."""
    now = timezone.now()
    RoleToken.objects.filter(oauth_client_id=client_id, revoked_at=None).update(revoked_at=now)
    OAuthRefreshToken.objects.filter(client_id=client_id, revoked_at=None).update(revoked_at=now)


def _code(client_id: str, code: str) -> AuthorizationCode | None:
    """The code's authorization, or None. A code used already revokes what it gave (and every
    other token of the client, ``_revoke_client_tokens``)."""
    grant = (
        OAuthGrant.objects.filter(code_digest=role_tokens.digest_of(code), client_id=client_id)
        .select_related("role")
        .first()
    )
    if grant is not None and grant.used_at is not None:
        _revoke_client_tokens(client_id)
        return None
    if grant is None or grant.decided_at is None:
        return None
    params = AuthorizationParams.model_validate(grant.params)
    return AuthorizationCode(
        code=code,
        scopes=params.scopes or [],
        expires_at=grant.decided_at.timestamp() + CODE_TTL_S,
        client_id=client_id,
        code_challenge=params.code_challenge,
        redirect_uri=params.redirect_uri,
        redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
        resource=params.resource,
        subject=str(grant.user_id),
    )


def _tokens(client_id: str, user_id: int | None, role: AgentRole, resource: str) -> OAuthToken:
    """A new access token (a role token) and refresh token for ``role``."""
    client = OAuthClient.objects.get(pk=client_id)
    now = timezone.now()
    issued = role_tokens.issue(
        role.role,
        f"OAuth: {client.name or client.client_id}",
        _user(user_id),
        expires_at=now + timedelta(seconds=ACCESS_TTL_S),
        oauth_client=client,
    )
    refresh = "tcf_" + secrets.token_urlsafe(32)
    OAuthRefreshToken.objects.create(
        digest=role_tokens.digest_of(refresh),
        client=client,
        user_id=user_id,
        role=role,
        access_token=issued.row,
        resource=resource,
        expires_at=now + timedelta(seconds=REFRESH_TTL_S),
    )
    return OAuthToken(access_token=issued.secret, expires_in=ACCESS_TTL_S, refresh_token=refresh)


def _user(user_id: int | None) -> User | None:
    return User.objects.filter(pk=user_id).first() if user_id else None


def _exchange_code(client_id: str, code: str) -> OAuthToken:
    with transaction.atomic():
        grant = (
            OAuthGrant.objects.select_for_update()
            .filter(code_digest=role_tokens.digest_of(code), client_id=client_id, used_at=None)
            .select_related("role")
            .first()
        )
        if grant is None or grant.role is None:
            raise TokenError("invalid_grant", "the authorization code is unknown or was used already")
        grant.used_at = timezone.now()
        grant.save(update_fields=["used_at"])
        resource = AuthorizationParams.model_validate(grant.params).resource or ""
        return _tokens(client_id, grant.user_id, grant.role, resource)


def _refresh_row(client_id: str, token: str) -> RefreshToken | None:
    """The client's unexpired refresh token, used or not (``_exchange_refresh`` tells), or None."""
    row = OAuthRefreshToken.objects.filter(
        digest=role_tokens.digest_of(token), client_id=client_id, expires_at__gt=timezone.now()
    ).first()
    if row is None:
        return None
    return RefreshToken(
        token=token,
        client_id=client_id,
        scopes=[],
        expires_at=int(row.expires_at.timestamp()),
        resource=row.resource or None,
        subject=str(row.user_id),
    )


def _exchange_refresh(client_id: str, token: str) -> OAuthToken:
    """New tokens for a live refresh token, which is used up (rotation). Raises ``TokenError``
    for one unknown or whose role is disabled, and for one rotated or revoked already, which
    also revokes every token of the client (``_revoke_client_tokens``)."""
    with transaction.atomic():
        row = (
            OAuthRefreshToken.objects.select_for_update()
            .filter(digest=role_tokens.digest_of(token), client_id=client_id)
            .select_related("role")
            .first()
        )
        replayed = row is not None and row.revoked_at is not None
        if replayed:
            _revoke_client_tokens(client_id)
        elif row is not None and row.role.enabled:
            row.revoked_at = timezone.now()
            row.save(update_fields=["revoked_at"])
            if row.access_token_id is not None:
                role_tokens.revoke(row.access_token_id)
            return _tokens(client_id, row.user_id, row.role, row.resource)
    if replayed:
        raise TokenError("invalid_grant", "the refresh token was used already: every token of this client is revoked")
    raise TokenError("invalid_grant", "the refresh token is unknown or its role is disabled")


def _access(token: str) -> AccessToken | None:
    row = role_tokens.authenticate(token)
    if row is None:
        return None
    expires = int(row.expires_at.timestamp()) if row.expires_at else None
    client_id = row.oauth_client_id or f"role-token:{row.pk}"
    return AccessToken(token=token, client_id=client_id, scopes=[], expires_at=expires)


def _revoke(token: str) -> None:
    digest = role_tokens.digest_of(token)
    now = timezone.now()
    RoleToken.objects.filter(digest=digest, oauth_client__isnull=False, revoked_at=None).update(revoked_at=now)
    for row in OAuthRefreshToken.objects.filter(digest=digest, revoked_at=None):
        row.revoked_at = now
        row.save(update_fields=["revoked_at"])
        if row.access_token_id is not None:
            role_tokens.revoke(row.access_token_id)


# --------------------------------------------------------------------------- the SDK's provider


class TeamClawOAuthProvider:
    """``mcp.server.auth.provider.OAuthAuthorizationServerProvider`` over TeamClaw's database
    (module docstring). Every method reads or writes through ``database_sync_to_async``."""

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return await database_sync_to_async(_client_row)(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        await database_sync_to_async(_register)(client_info)

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        """The consent page's URL for a new grant (the person signs in there if need be)."""
        if not client.client_id:
            raise AuthorizeError("unauthorized_client", "the client has no id")
        grant = await database_sync_to_async(_open_grant)(client.client_id, params)
        return CONSENT_PATH.format(grant=grant)

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> AuthorizationCode | None:
        return await database_sync_to_async(_code)(client.client_id or "", authorization_code)

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        return await database_sync_to_async(_exchange_code)(client.client_id or "", authorization_code.code)

    async def load_refresh_token(self, client: OAuthClientInformationFull, refresh_token: str) -> RefreshToken | None:
        return await database_sync_to_async(_refresh_row)(client.client_id or "", refresh_token)

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        return await database_sync_to_async(_exchange_refresh)(client.client_id or "", refresh_token.token)

    async def load_access_token(self, token: str) -> AccessToken | None:
        return await database_sync_to_async(_access)(token)

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        await database_sync_to_async(_revoke)(token.token)

    async def exchange_identity_assertion(self, client: OAuthClientInformationFull, params: Any) -> OAuthToken:
        raise TokenError("unsupported_grant_type", "identity assertions are not accepted")


# --------------------------------------------------------------------------- consent (sync)


class ConsentError(ValueError):
    """A consent that cannot be given: ``field`` names the input, the message says why."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(reason)
        self.field = field


def open_grant(grant_id: str) -> OAuthGrant:
    """The undecided, unexpired grant ``grant_id``. Raises ``OAuthGrant.DoesNotExist``."""
    since = timezone.now() - timedelta(seconds=GRANT_TTL_S)
    return OAuthGrant.objects.select_related("client").get(pk=grant_id, decided_at=None, created_at__gt=since)


def approve(grant: OAuthGrant, user: Any, role: str) -> str:
    """Approve ``grant`` for ``role`` as ``user`` (staff): the client's redirect URI with a new
    code and the state. Raises ``ConsentError`` (a non-staff user; an unknown or disabled role)."""
    if not getattr(user, "is_staff", False):
        raise ConsentError("user", _("only a staff user can connect a client (it acts as a role)"))
    agent_role = AgentRole.objects.filter(role=role, enabled=True).first()
    if agent_role is None:
        raise ConsentError("role", _("there is no enabled role “%(role)s”") % {"role": role})
    code = secrets.token_urlsafe(32)
    with transaction.atomic():
        updated = OAuthGrant.objects.filter(pk=grant.pk, decided_at=None).update(
            user=user, role=agent_role, code_digest=role_tokens.digest_of(code), decided_at=timezone.now()
        )
    if not updated:
        raise ConsentError("grant", _("this request was answered already"))
    params = AuthorizationParams.model_validate(grant.params)
    return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)


def deny(grant: OAuthGrant) -> str:
    """Deny ``grant``: the client's redirect URI with ``error=access_denied`` and the state."""
    OAuthGrant.objects.filter(pk=grant.pk, decided_at=None).update(decided_at=timezone.now())
    params = AuthorizationParams.model_validate(grant.params)
    return construct_redirect_uri(str(params.redirect_uri), error="access_denied", state=params.state)


# --------------------------------------------------------------------------- ASGI


class OAuthEndpoint:
    """The SDK's OAuth routes for the host a request came to (issuer and resource URLs are
    absolute, so one Starlette app per allowed host, made on first use)."""

    def __init__(self) -> None:
        self.provider = TeamClawOAuthProvider()
        self._apps: OrderedDict[str, Starlette] = OrderedDict()

    def app_for(self, base: str) -> Starlette:
        """The routes for ``base``; the ``HOST_APPS`` most recently used are kept (every port of
        an allowed host is a new ``base``, so an unbounded map grew by ~19 KB per port asked)."""
        app = self._apps.get(base)
        if app is not None:
            self._apps.move_to_end(base)
        else:
            routes = create_auth_routes(
                self.provider,
                issuer_url=AnyHttpUrl(base),
                client_registration_options=ClientRegistrationOptions(enabled=True),
                revocation_options=RevocationOptions(enabled=True),
            )
            routes += create_protected_resource_routes(
                resource_url=AnyHttpUrl(base + "/mcp"),
                authorization_servers=[AnyHttpUrl(base)],
                resource_name="TeamClaw",
            )
            app = self._apps[base] = Starlette(routes=routes)
            while len(self._apps) > HOST_APPS:
                self._apps.popitem(last=False)
        return app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        base = base_url(Request(scope))
        if base is None:
            body = {"detail": "unknown host", "errors": {"host": ["not an allowed host"]}}
            await JSONResponse(body, status_code=400)(scope, receive, send)
            return
        await self.app_for(base)(scope, receive, send)


oauth_application = ProtocolHeaders(OAuthEndpoint())
"""What ``teamclaw.asgi`` mounts: the routes with the headers every protocol response carries
(``nosniff``, ``frame-ancestors 'none'``...; Django's middleware does not see them)."""
