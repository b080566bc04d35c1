"""``cap://<skillId>/<capabilityName>[?query]`` addresses (seed 003, "CAP 地址").

Parsing is strict: the scheme must be ``cap``, both parts must be non-empty identifiers,
there is no port, user, fragment or extra path segment, and each query key appears once.
Query parameters become default params for the invoke.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from urllib.parse import parse_qsl

_SEGMENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,127}$")
_ADDRESS = re.compile(r"^cap://(?P<skill>[^/?#]*)/(?P<capability>[^/?#]*)(?:\?(?P<query>[^#]*))?$")


class AddressError(ValueError):
    """A malformed cap:// address; the message says which part is wrong."""


@dataclass(frozen=True, slots=True)
class CapAddress:
    """A parsed address: ``skill_id``, ``capability_name`` and default ``params`` (strings)."""

    skill_id: str
    capability_name: str
    params: dict[str, str] = field(default_factory=dict)

    @property
    def base(self) -> str:
        """The address without its query: ``cap://skill/capability``."""
        return f"cap://{self.skill_id}/{self.capability_name}"


def is_address(value: str) -> bool:
    """True when ``value`` looks like a cap:// address (it may still fail to parse)."""
    return value.startswith("cap://")


def parse_address(value: str) -> CapAddress:
    """Parse ``value`` strictly.

    Raises AddressError naming the offending part, e.g. ``missing capability name`` or
    ``duplicate query parameter 'x'``.
    """
    if not isinstance(value, str) or not value.startswith("cap://"):
        raise AddressError("an address starts with cap://")
    match = _ADDRESS.match(value)
    if match is None:
        raise AddressError("an address is cap://<skillId>/<capabilityName>[?query], with no other path or fragment")
    skill, capability, query = match.group("skill"), match.group("capability"), match.group("query")
    if not skill:
        raise AddressError("missing skill id")
    if not capability:
        raise AddressError("missing capability name")
    if not _SEGMENT.match(skill):
        raise AddressError(f"skill id {skill!r} may hold only letters, digits, '_', '-' and '.'")
    if not _SEGMENT.match(capability):
        raise AddressError(f"capability name {capability!r} may hold only letters, digits, '_', '-' and '.'")
    params: dict[str, str] = {}
    if query:
        try:
            pairs = parse_qsl(query, keep_blank_values=True, strict_parsing=True)
        except ValueError as exc:
            raise AddressError(f"malformed query: {exc}") from None
        for key, val in pairs:
            if key in params:
                raise AddressError(f"duplicate query parameter {key!r}")
            params[key] = val
    return CapAddress(skill, capability, params)
