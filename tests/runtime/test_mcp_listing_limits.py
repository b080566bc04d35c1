"""What a (possibly hostile) MCP server's tool listing may cost: schemas, duplicates, total size."""

from __future__ import annotations

from types import SimpleNamespace

from teamclaw.runtime.mcp_tools import MAX_LISTING_BYTES, MAX_SCHEMA_BYTES, ListedTool, _listed, _over_limits


def test_an_oversized_schema_is_skipped_with_a_note():
    huge = {"type": "object", "properties": {f"p{i}": {"type": "string"} for i in range(MAX_SCHEMA_BYTES // 10)}}
    listed, note = _listed(SimpleNamespace(name="big", input_schema=huge, description="x"))
    assert listed is None and "inputSchema" in note and "big" in note
    listed, note = _listed(SimpleNamespace(name="small", input_schema={"type": "object"}, description="x"))
    assert listed is not None and note == ""


def test_a_tool_listed_twice_or_past_the_listing_budget_is_not_recorded():
    tool = ListedTool("dup", "d", {"type": "object"})
    assert _over_limits(tool, set(), 0) == ""
    assert "twice" in _over_limits(tool, {"dup"}, 0)
    assert "passed" in _over_limits(tool, set(), MAX_LISTING_BYTES - 3)
