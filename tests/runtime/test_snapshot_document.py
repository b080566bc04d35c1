"""A pinned configuration survives its process: the snapshot's JSON document reads back equal."""

from __future__ import annotations

import json

import pytest

from team.snapshot import build_snapshot
from teamclaw.runtime.config import ToolSpec
from teamclaw.runtime.snapshot_document import DocumentFormatError, snapshot_from_document, snapshot_to_document

pytestmark = pytest.mark.django_db


def test_the_built_in_teams_snapshot_reads_back_equal(builtin):
    snapshot = build_snapshot(None)
    document = json.loads(json.dumps(snapshot_to_document(snapshot)))  # through real JSON
    assert snapshot_from_document(document) == snapshot


def test_external_tools_survive_too(builtin):
    from dataclasses import replace
    from types import MappingProxyType

    spec = ToolSpec("mcp:time/now", "now", "the time", {"type": "object"}, {"transport": "stdio", "command": "x"}, "t")
    snapshot = replace(build_snapshot(None), tool_specs=MappingProxyType({spec.name: spec}))
    back = snapshot_from_document(json.loads(json.dumps(snapshot_to_document(snapshot))))
    assert back.tool_specs == {spec.name: spec}


@pytest.mark.parametrize("document", [{}, {"format": 2}, {"format": 1}, {"format": 1, "roles": [{"x": 1}]}, []])
def test_another_format_or_a_damaged_document_is_refused(document):
    with pytest.raises(DocumentFormatError):
        snapshot_from_document(document)
