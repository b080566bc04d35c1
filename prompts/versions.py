"""Semantic versions of prompt templates (PRD §4.5 "遵循语义化版本（SemVer）").

The ``semver`` library does the parsing, ordering (pre-releases sort before their release:
``1.1.0-rc.1 < 1.1.0``; numeric identifiers compare as numbers: ``rc.2 < rc.10``; build
metadata is ignored) and bumping. A new version is the *highest* existing version bumped,
so history only ever moves forward, even after a rollback.
"""

from __future__ import annotations

from collections.abc import Iterable

import semver

BUMPS = ("patch", "minor", "major", "prerelease")
"""How a new version is derived from the highest one. ``patch`` of a pre-release releases it
(``1.1.0-rc.2`` -> ``1.1.0``), as does ``minor``/``major`` when the pre-release is already
that kind of bump (``2.0.0-rc.1`` -> ``2.0.0``); ``prerelease`` starts one (``1.0.0`` ->
``1.0.1-rc.1``) or continues the series in hand (``1.0.1-rc.1`` -> ``1.0.1-rc.2``,
``2.0.0-beta.3`` -> ``2.0.0-beta.4``)."""

FIRST_VERSION = "1.0.0"
"""The version of a template's first version (the built-in defaults and new overrides)."""

MAX_VERSION_CHARS = 64


class VersionError(ValueError):
    """A version string or bump that cannot be used; the message says why."""


def parse(text: str) -> semver.Version:
    """``text`` as a SemVer 2.0.0 version (``MAJOR.MINOR.PATCH[-pre][+build]``).

    Raises VersionError for anything else (``v1.0``, ``1.0``, leading zeros, over 64 chars).
    """
    if not isinstance(text, str) or not text or len(text) > MAX_VERSION_CHARS:
        raise VersionError(f"a version is MAJOR.MINOR.PATCH of at most {MAX_VERSION_CHARS} characters")
    try:
        return semver.Version.parse(text)
    except (ValueError, TypeError):
        raise VersionError(f"{text[:MAX_VERSION_CHARS]!r} is not a semantic version (MAJOR.MINOR.PATCH)") from None


def highest(versions: Iterable[str]) -> semver.Version | None:
    """The greatest of ``versions`` by SemVer precedence (None when there are none)."""
    parsed = [parse(v) for v in versions]
    return max(parsed) if parsed else None


def sort_key(version: str) -> semver.Version:
    """Key for sorting version strings by SemVer precedence."""
    return parse(version)


def next_version(existing: Iterable[str], bump: str = "patch", explicit: str | None = None) -> str:
    """The version a new save gets: ``explicit`` if given (it must be greater than every
    existing version), else the highest existing version bumped by ``bump``; the first
    version of a template is ``1.0.0`` unless ``explicit`` says otherwise.

    Raises VersionError for an unknown bump, a malformed ``explicit`` version or one that is
    not greater than the highest existing version.
    """
    if bump not in BUMPS:
        raise VersionError(f"bump must be one of {', '.join(BUMPS)}")
    top = highest(existing)
    if explicit:
        wanted = parse(explicit)
        if top is not None and wanted.compare(top) <= 0:
            raise VersionError(f"version {explicit} must be greater than the highest existing version {top}")
        return str(wanted)
    if top is None:
        return FIRST_VERSION
    if bump == "prerelease" and top.prerelease:
        # continue the pre-release series in hand (beta.3 -> beta.4), whatever its token
        bumped = top.next_version("prerelease", prerelease_token=top.prerelease.split(".")[0])
    else:
        bumped = top.next_version(bump)
    if bumped.compare(top) <= 0:  # cannot happen with SemVer rules; refuse rather than go backwards
        raise VersionError(f"bumping {top} by {bump} does not give a greater version")
    return str(bumped)
