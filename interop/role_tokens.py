"""Issuing, checking and revoking role-bound tokens (issue 16; model ``interop.models.RoleToken``).

A token's secret is ``tcr_`` followed by 43 URL-safe characters (256 random bits); only its
SHA-256 digest is stored, so a leaked database does not leak usable tokens. Clients send it as
``Authorization: Bearer <secret>``."""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.contrib.auth.models import AnonymousUser, User
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from capabilities.models import AgentRole
from interop.models import OAuthClient, RoleToken

TOKEN_PREFIX = "tcr_"
LAST_USED_RESOLUTION = timedelta(minutes=1)
"""``last_used_at`` is written at most this often per token, so a busy client costs no write per call."""


class RoleTokenError(ValueError):
    """A token request that cannot be honoured; ``field`` names the offending input."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(reason)
        self.field = field
        self.reason = reason


@dataclass(frozen=True)
class IssuedToken:
    """A newly issued token: the stored row and the secret, which is never shown again."""

    row: RoleToken
    secret: str


def digest_of(secret: str) -> str:
    """Hex SHA-256 of ``secret`` (what ``RoleToken.digest`` holds)."""
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def issue(
    role: str,
    name: str,
    created_by: User | AnonymousUser | None = None,
    *,
    expires_at: datetime | None = None,
    oauth_client: OAuthClient | None = None,
) -> IssuedToken:
    """Issue a token acting as ``role`` (``expires_at`` and ``oauth_client``: an OAuth access
    token, ``interop.mcp_oauth``).

    Raises ``RoleTokenError`` when the role does not exist or is disabled, or the name is blank."""
    name = (name or "").strip()
    if not name:
        raise RoleTokenError("name", "give the token a name that says who or what uses it")
    agent_role = AgentRole.objects.filter(role=role).first()
    if agent_role is None:
        raise RoleTokenError("role", f"there is no role '{role}'")
    if not agent_role.enabled:
        raise RoleTokenError("role", f"role '{role}' is disabled; enable it before issuing a token for it")
    secret = TOKEN_PREFIX + secrets.token_urlsafe(32)
    row = RoleToken.objects.create(
        name=name[:100],
        role=agent_role,
        digest=digest_of(secret),
        prefix=secret[: len(TOKEN_PREFIX) + 4],
        created_by=created_by if isinstance(created_by, User) else None,
        expires_at=expires_at,
        oauth_client=oauth_client,
    )
    return IssuedToken(row=row, secret=secret)


def authenticate(secret: str) -> RoleToken | None:
    """The active token whose secret this is, or None (unknown, malformed, revoked or expired).

    Touches ``last_used_at`` (at most once a minute per token)."""
    if not secret or not secret.startswith(TOKEN_PREFIX) or len(secret) > 200:
        return None
    now = timezone.now()
    live = RoleToken.objects.filter(Q(expires_at__isnull=True) | Q(expires_at__gt=now), revoked_at__isnull=True)
    row = live.select_related("role").filter(digest=digest_of(secret)).first()
    if row is None or not row.role.enabled:
        return None
    if row.last_used_at is None or now - row.last_used_at >= LAST_USED_RESOLUTION:
        RoleToken.objects.filter(pk=row.pk).update(last_used_at=now)
        row.last_used_at = now
    return row


def bearer_secret(authorization: str | None) -> str:
    """The secret of an ``Authorization: Bearer <secret>`` header value, or '' when there is none."""
    scheme, _, value = (authorization or "").partition(" ")
    return value.strip() if scheme.lower() == "bearer" else ""


def revoke(token_id: int) -> RoleToken:
    """Revoke a token (idempotent: revoking a revoked token keeps its first revocation time).

    Raises ``RoleToken.DoesNotExist`` for an unknown id."""
    with transaction.atomic():
        row = RoleToken.objects.select_for_update().select_related("role").get(pk=token_id)
        if row.revoked_at is None:
            row.revoked_at = timezone.now()
            row.save(update_fields=["revoked_at"])
    return row
