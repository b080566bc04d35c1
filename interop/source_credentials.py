"""Credentials of HTTP MCP tool sources (issue 29): a hosted MCP server that needs a token.

An HTTP source may carry request headers sent on every connection to it (discovery and each
tool call): a ``bearer_token`` (sent as ``Authorization: Bearer <token>``) and/or ``headers``
``{name: value}``. They are

- **checked** (``check_credentials``): at most ``MAX_HEADERS`` headers, names as HTTP tokens,
  values of printable ASCII up to ``MAX_VALUE_CHARS``, none of the
  headers the transport sets itself (``RESERVED``), a bearer token and an ``Authorization``
  header not both; a stdio source takes none. Each refusal names the field;
- **stored sealed** (``seal``/``unseal``): Fernet (AES-128-CBC + HMAC-SHA256, ``cryptography``)
  under a key derived from ``SECRET_KEY``, so a database dump alone does not give them away.
  If ``SECRET_KEY`` changes they cannot be read: the source connects without them and its
  discovery says so;
- **never shown back in full** (``masked``: the header names with the last 4 characters of a
  value of 12 or more, else nothing of it), never exported (the configuration export does not
  hold MCP sources) and **audited by name only** when they change
  (``mcp_sources.<name>.credentials``: the header names before and after).
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from typing import Any

from cryptography.fernet import Fernet, InvalidToken
from django.conf import settings

MAX_HEADERS = 20
MAX_VALUE_CHARS = 4096
HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,100}$")
"""An HTTP header name (RFC 9110 token), at most 100 characters."""
RESERVED = frozenset(
    {"host", "content-length", "content-type", "transfer-encoding", "connection", "accept", "mcp-session-id"}
    | {"mcp-protocol-version", "upgrade", "te", "trailer", "keep-alive", "proxy-connection"}
)
"""Headers the transport sets itself: a source may not set them."""
VALUE_PATTERN = "^[!-~]([ -~]*[!-~])?$"
"""A header value: printable ASCII, not starting or ending with a space (what every HTTP client
sends as is: h11 refuses a value with a line break or an outer space, and its error quotes the
whole value, so such a value would have put the secret into the source's error). Matched whole
(``re.fullmatch``: a ``$`` alone lets a trailing line break through)."""


class CredentialsUnreadable(ValueError):
    """Stored credentials that this ``SECRET_KEY`` cannot open."""


def _fernet() -> Fernet:
    digest = hashlib.sha256(b"teamclaw.mcp-source-credentials\0" + settings.SECRET_KEY.encode()).digest()
    return Fernet(base64.urlsafe_b64encode(digest))


def seal(headers: dict[str, str]) -> str:
    """``headers`` encrypted for storage ('' for none)."""
    if not headers:
        return ""
    return _fernet().encrypt(json.dumps(headers, sort_keys=True).encode()).decode()


def unseal(sealed: str) -> dict[str, str]:
    """The headers ``seal`` stored. Raises CredentialsUnreadable when this ``SECRET_KEY`` cannot
    open them."""
    if not sealed:
        return {}
    try:
        return dict(json.loads(_fernet().decrypt(sealed.encode())))
    except (InvalidToken, ValueError) as exc:
        raise CredentialsUnreadable("the stored credentials cannot be read (was SECRET_KEY changed?)") from exc


def masked(headers: dict[str, str]) -> dict[str, str]:
    """``{name: shown}``: the last 4 characters of a value of 12 or more after '…', else '…'."""
    return {name: ("…" + value[-4:]) if len(value) >= 12 else "…" for name, value in headers.items()}


def _value_problem(value: Any) -> str:
    if not isinstance(value, str) or not value:
        return "a non-empty string"
    if len(value) > MAX_VALUE_CHARS:
        return f"at most {MAX_VALUE_CHARS} characters"
    if not re.fullmatch(VALUE_PATTERN, value):
        return "printable ASCII only (no line breaks, control or non-ASCII characters, no space at either end)"
    return ""


def _header_errors(headers: Any) -> dict[str, list[str]]:
    if not isinstance(headers, dict):
        return {"headers": ["an object of header names to values"]}
    if len(headers) > MAX_HEADERS:
        return {"headers": [f"at most {MAX_HEADERS} headers"]}
    errors: dict[str, list[str]] = {}
    seen: set[str] = set()
    for name, value in headers.items():
        key = f"headers.{str(name)[:100]}"
        if not HEADER_NAME.fullmatch(str(name)):
            errors[key] = ["a header name: letters, digits and !#$%&'*+.^_`|~- only"]
        elif name.lower() in RESERVED:
            errors[key] = ["the transport sets this header itself"]
        elif name.lower() in seen:
            errors[key] = ["given twice (header names are case-insensitive)"]
        elif problem := _value_problem(value):
            errors[key] = [problem]
        seen.add(str(name).lower())
    return errors


def check_credentials(data: dict[str, Any], transport: str) -> dict[str, str]:
    """The headers to send, from ``data``'s ``bearer_token`` and ``headers`` (both optional;
    ``{}`` when neither is given). Raises CredentialErrors naming each field at fault."""
    bearer, headers = data.get("bearer_token"), data.get("headers")
    if bearer is None and headers is None:
        return {}
    if transport != "http":
        field = "headers" if headers is not None else "bearer_token"
        raise CredentialErrors({field: ["only an http source sends credentials"]})
    errors = _header_errors(headers) if headers is not None else {}
    if bearer is not None and (problem := _value_problem(bearer)):
        errors["bearer_token"] = [problem]
    out = dict(headers or {})
    if bearer is not None:
        if any(name.lower() == "authorization" for name in out):
            errors["bearer_token"] = ["give a bearer token or an Authorization header, not both"]
        out["Authorization"] = f"Bearer {bearer}"
    if errors:
        raise CredentialErrors(errors)
    return out


class CredentialErrors(ValueError):
    """Credentials refused: ``errors`` ``{field: [reason]}``."""

    def __init__(self, errors: dict[str, list[str]]) -> None:
        super().__init__("; ".join(f"{field}: {reasons[0]}" for field, reasons in errors.items()))
        self.errors = errors
