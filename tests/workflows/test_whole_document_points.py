"""A point about the whole document ("（全文）", ``change.scope: document``) is anchored on the
title, but no expert says it found a problem "on line 1" (issue 27 walkthrough)."""

from __future__ import annotations

from teamclaw.workflows.debate import evaluate


def _review(language: str, line: int, scope: str = "") -> dict:
    issue = {"id": "i1", "category": "untestable", "severity": "minor", "location": {"line": line},
             "problem": "文档没有验收标准" if language == "zh" else "No acceptance criteria",
             "change": {"scope": scope} if scope else {}}  # fmt: skip
    return {"language": language, "issues": [issue]}


def test_agreeing_on_a_whole_document_point_names_the_whole_document_not_line_1():
    for language, whole, line in (("zh", "全文", "第 1 行"), ("en", "whole document", "line 1")):
        mine = _review(language, 1, "document")
        said = evaluate("qa", mine, {"pm": ("pm.json", _review(language, 1, "document"))})
        comments = [r["my_comment"] for r in said["responses"]]
        assert comments and all(whole in c and line not in c for c in comments), comments
        # A point on a real line still names its line.
        said = evaluate("qa", _review(language, 7), {"pm": ("pm.json", _review(language, 7))})
        assert any(("第 7 行" if language == "zh" else "line 7") in r["my_comment"] for r in said["responses"])
