"""``manage.py run_workflow``: progress on the terminal, artifact paths at the end."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from tests.documents import PLAIN_TOOL


def test_run_workflow_writes_the_artifacts_and_prints_their_paths(transactional_db, builtin, tmp_path):
    source = tmp_path / "req.md"
    source.write_text(PLAIN_TOOL, encoding="utf-8")
    out = StringIO()
    call_command(
        "run_workflow", "requirement_review", "--input", str(source), "--output", str(tmp_path / "out"), stdout=out
    )
    text = out.getvalue()
    assert "%]" in text
    assert "expert_review" in text  # progress lines
    assert f"artifact: {tmp_path / 'out' / 'requirement_final.md'}" in text
    assert (tmp_path / "out" / "consolidation_report.json").is_file()
    assert "Completed:" in text


def test_run_workflow_refuses_a_missing_or_binary_file(transactional_db, builtin, tmp_path):
    with pytest.raises(CommandError, match="no such file"):
        call_command("run_workflow", "requirement_review", "--input", str(tmp_path / "none.md"))
    binary = tmp_path / "b.md"
    binary.write_bytes(b"\x00\x01\x02")
    with pytest.raises(CommandError, match="binary"):
        call_command("run_workflow", "requirement_review", "--input", str(binary))
