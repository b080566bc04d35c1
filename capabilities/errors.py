"""Why a config save is refused: bad input, or a stale version (``DomainError`` kinds).

Both carry what the API and the pages show: ``ConfigInvalid.errors`` is
``{field path: [reasons]}`` (every problem at once, nothing applied); ``StaleVersion``
holds the current version and the changes made since the version the operator loaded.
"""

from __future__ import annotations

from typing import Any

from teamclaw.errors import DomainError
from teamclaw.labels import worded


class ConfigInvalid(DomainError, ValueError):
    """The input is refused (400); ``errors`` maps each field path (``matrix.coderA.dba``) to its reasons."""

    def __init__(self, errors: dict[str, list[str]], detail: str = "") -> None:
        first = next(iter(errors.items()), ("", ["invalid input"]))
        joined = worded("%(field)s: %(reason)s", field=first[0], reason=first[1][0]) if first[0] else first[1][0]
        self.detail = detail or joined
        super().__init__(self.detail, errors=errors)


class StaleVersion(DomainError):
    """A save based on ``expected`` while the document is at ``current`` (HTTP 409).

    ``changes`` lists what was saved in between, newest last:
    ``[{version, config_type, actor, at, note, changes: {field: {old, new}}}]`` restricted to
    this document's fields, so the operator sees the difference before saving again.
    """

    status = 409
    code = "stale_version"

    def __init__(self, document: str, expected: int, current: int, changes: list[dict[str, Any]]) -> None:
        self.document = document
        self.expected = expected
        self.current = current
        self.changes = changes
        who = sorted({c["actor"] or "an import or the system" for c in changes})
        by = f" by {', '.join(who)}" if who else ""
        if expected > current:
            # A version this document never had: often the config version (from a "saved as
            # config version N" message) sent for the document's own.
            message = (
                f"{document}: the document is at version {current}, not {expected}; send the version of "
                "the document you loaded (its 'version' field), not the config version; nothing was saved"
            )
        else:
            message = (
                f"{document} changed{by} since you loaded it (your version {expected}, now {current}); "
                "review the difference and save again"
            )
        super().__init__(message, extra={"current_version": current, "your_version": expected, "changes": changes})


class Problems:
    """Collects ``{path: [reasons]}`` while checking input, then raises them all at once."""

    def __init__(self) -> None:
        self.errors: dict[str, list[str]] = {}

    def add(self, path: str, reason: str) -> None:
        self.errors.setdefault(path, []).append(reason)

    def extend(self, errors: dict[str, list[str]]) -> None:
        """Add every reason of ``errors`` (``{path: [reasons]}``)."""
        for path, reasons in errors.items():
            for reason in reasons:
                self.add(path, reason)

    def __bool__(self) -> bool:
        return bool(self.errors)

    def raise_if_any(self) -> None:
        """Raise ConfigInvalid with everything collected, if anything was."""
        if self.errors:
            raise ConfigInvalid(self.errors)
