"""SemVer numbering of prompt versions (PRD §4.5 遵循语义化版本): the highest version bumped."""

from __future__ import annotations

import pytest

from prompts.versions import FIRST_VERSION, VersionError, highest, next_version


@pytest.mark.parametrize(
    ("existing", "bump", "expected"),
    [
        (["1.0.0"], "patch", "1.0.1"),
        (["1.0.0"], "minor", "1.1.0"),
        (["1.0.0"], "major", "2.0.0"),
        (["1.0.0", "1.0.1", "1.2.3"], "patch", "1.2.4"),
        # a pre-release is released by the bump that made it
        (["1.0.0", "1.1.0-rc.1"], "patch", "1.1.0"),
        (["1.0.0", "1.1.0-rc.1"], "minor", "1.1.0"),
        (["1.0.0", "2.0.0-rc.1"], "major", "2.0.0"),
        (["1.0.0", "1.0.1-rc.3"], "minor", "1.1.0"),
        # pre-releases start after the highest release and count up
        (["1.0.0"], "prerelease", "1.0.1-rc.1"),
        (["1.0.0", "1.0.1-rc.1"], "prerelease", "1.0.1-rc.2"),
        (["1.0.0", "1.0.1-rc.9", "1.0.1-rc.10"], "prerelease", "1.0.1-rc.11"),
        # order is SemVer precedence, not creation or string order
        (["2.0.0", "10.0.0", "9.9.9"], "patch", "10.0.1"),
        (["1.0.0-alpha", "1.0.0-beta.3", "1.0.0-alpha.1"], "prerelease", "1.0.0-beta.4"),
        (["1.0.0", "2.0.0-zeta"], "prerelease", "2.0.0-zeta.0"),
    ],
)
def test_a_new_version_is_the_highest_existing_one_bumped(existing, bump, expected):
    assert next_version(existing, bump) == expected


def test_numeric_prerelease_identifiers_compare_as_numbers_and_releases_outrank_prereleases():
    assert str(highest(["1.0.0-rc.2", "1.0.0-rc.10"])) == "1.0.0-rc.10"
    assert str(highest(["1.0.0-rc.10", "1.0.0"])) == "1.0.0"
    assert str(highest(["0.9.0", "1.0.0-rc.1"])) == "1.0.0-rc.1"


def test_the_first_version_of_a_template_is_1_0_0_whatever_the_bump():
    assert FIRST_VERSION == "1.0.0"
    assert next_version([], "major") == "1.0.0"


def test_an_explicit_version_must_be_greater_than_every_existing_one():
    assert next_version(["1.0.0", "1.1.0"], explicit="2.0.0-rc.1") == "2.0.0-rc.1"
    assert next_version([], explicit="0.1.0") == "0.1.0"
    for stale in ("1.1.0", "1.0.5", "1.1.0-rc.1", "1.1.0+build.7"):
        with pytest.raises(VersionError, match=r"greater than the highest existing version 1\.1\.0"):
            next_version(["1.0.0", "1.1.0"], explicit=stale)


@pytest.mark.parametrize("bad", ["v1.0.0", "1.0", "01.0.0", "1.0.0-", "1" * 70 + ".0.0", "latest", "2.0.0 "])
def test_malformed_explicit_versions_are_refused(bad):
    with pytest.raises(VersionError):
        next_version(["1.0.0"], explicit=bad)


def test_an_unknown_bump_is_refused():
    with pytest.raises(VersionError, match=r"bump must be one of patch, minor, major, prerelease"):
        next_version(["1.0.0"], "huge")
