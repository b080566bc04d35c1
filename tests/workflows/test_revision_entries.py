"""The revised final document's open points' list (``teamclaw.workflows.revision``; issue 27
B): an answer takes its own point's entry off the list and no other, even when the other's
text begins with it (a point without a line and the same question asked of a line)."""

from __future__ import annotations

from teamclaw.workflows.revision import revise

FINAL = """# Refunds

## Requirements

- The system shall refund orders.
- Refunds above 500 EUR need approval.

## Open points

- Who approves a refund? _(added by the review)_
- Who approves a refund? (line 6) _(added by the review)_
"""

ROWS = (
    # (points: (id, line, answer)), the entries left in the list
    (
        (("a", None, "The shift manager approves each refund."), ("b", 6, None)),
        ["- Who approves a refund? (line 6) _(added by the review)_"],
    ),
    (
        (("a", None, None), ("b", 6, "The shift manager approves each refund.")),
        ["- Who approves a refund? _(added by the review)_"],
    ),
)


def _listed(text: str) -> list[str]:
    section = text.split("## Open points", 1)[1].split("\n## ", 1)[0]
    return [line for line in section.splitlines() if line.startswith("- ")]


def test_an_answer_takes_only_its_own_entry_off_the_list():
    for points, left in ROWS:
        given = [
            {"id": ident, "question": "Who approves a refund?", "line": line, "answer": answer, "answered_at": None}
            for ident, line, answer in points
        ]
        text, report = revise(FINAL, given, "en")
        assert report["resolved"] == 1, report
        assert _listed(text) == left, (points, text)
