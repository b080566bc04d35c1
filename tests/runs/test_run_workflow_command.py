"""``manage.py run_workflow``: progress on the terminal, artifact paths at the end."""

from __future__ import annotations

import json
import re
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from tests.documents import PLAIN_TOOL


def test_run_workflow_writes_the_artifacts_and_ends_with_a_summary(transactional_db, builtin, tmp_path):
    """Captured (not a terminal), the output is a few plain lines, main's steps, without
    control characters, and ends with a summary: status, findings, open points, tokens
    marked as estimated (the offline executor), where the artifacts are."""
    source = tmp_path / "req.md"
    source.write_text(PLAIN_TOOL, encoding="utf-8")
    out = StringIO()
    call_command(
        "run_workflow", "requirement_review", "--input", str(source), "--output", str(tmp_path / "out"), stdout=out
    )
    text = out.getvalue()
    assert not re.search(r"[\x00-\x09\x0b-\x1f\x7f]", text), repr(text)  # no escape codes, no \r redraws
    lines = text.splitlines()
    assert len(lines) < 30, text  # one line per step of main, not one per agent change (about 100)
    assert "[ 40%] review by" in text and "[100%]" in text
    outcome = json.loads((tmp_path / "out" / "outcome.json").read_text(encoding="utf-8"))
    summary = text.split("\nSummary\n", 1)[1].splitlines()
    assert summary[0] == "  Status:        completed"
    assert f"  Open points:   {outcome['open_points']} for you to answer (the task page lists them)" in summary
    verdict = "clean pass" if outcome["clean"] else "completed with findings"
    assert f"  Outcome:       {verdict}" in summary
    tokens = next(line for line in summary if line.startswith("  Tokens:"))
    assert "estimated" in tokens and "≈" in tokens
    assert f"  Artifacts:     19 in {tmp_path / 'out'}" in summary
    assert f"  artifact: {tmp_path / 'out' / 'requirement_final.md'}" in summary
    assert (tmp_path / "out" / "consolidation_report.json").is_file()
    assert lines[-1].startswith("Completed:")


def test_run_workflow_on_a_terminal_draws_one_line_with_a_bar(transactional_db, builtin, tmp_path):
    """On a terminal the progress is one line redrawn in place (rich), not a line per change."""
    source = tmp_path / "req.md"
    source.write_text(PLAIN_TOOL, encoding="utf-8")

    class Terminal(StringIO):
        def isatty(self) -> bool:
            return True

    out = Terminal()
    call_command(
        "run_workflow", "requirement_review", "--input", str(source), "--output", str(tmp_path / "o"), stdout=out
    )
    text = out.getvalue()
    before_summary = text.split("\nSummary\n", 1)[0]
    assert "━" in before_summary and "\x1b[" in before_summary  # a bar, redrawn with cursor moves
    assert "[ 40%] review by" not in before_summary  # no line per step
    assert "  Status:        completed" in text


def test_run_workflow_refuses_a_missing_or_binary_file(transactional_db, builtin, tmp_path):
    with pytest.raises(CommandError, match="no such file"):
        call_command("run_workflow", "requirement_review", "--input", str(tmp_path / "none.md"))
    binary = tmp_path / "b.md"
    binary.write_bytes(b"\x00\x01\x02")
    with pytest.raises(CommandError, match="binary"):
        call_command("run_workflow", "requirement_review", "--input", str(binary))
