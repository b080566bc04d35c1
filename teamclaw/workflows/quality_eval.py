"""Measuring a reviewer on labelled requirement documents (issue 27, ``manage.py eval_review``).

A corpus folder holds one ``NAME.labels.yaml`` per document::

    document: NAME.md            # beside the labels file
    language: zh
    defects:                     # what a reviewer must find
      - {id: d1, line: 15, quote: "…", category: limit_without_overflow, severity: major}
    clean_lines: [13, 14, 18]    # lines that must draw no finding

A finding counts for a defect when its ``category`` equals the defect's and its line or its
exact quote is the defect's; any finding on a clean line is a false alarm. Recall is per
category (found / labelled); the false-alarm rate is flagged clean lines / clean lines.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from teamclaw.workflows.quality_engine import check_text
from teamclaw.workflows.quality_rules import CATEGORIES

Reviewer = Callable[[str], list[dict[str, Any]]]
"""Markdown text -> findings as dicts with ``category``, ``location.line`` (or ``line``) and ``quote``."""


class CorpusError(ValueError):
    """A labels file that cannot be read: ``str()`` names the file and the field."""


@dataclass
class Labelled:
    """One labelled document: its ``name``, Markdown ``text``, ``defects`` and ``clean_lines``."""

    name: str
    text: str
    defects: list[dict[str, Any]]
    clean_lines: list[int]


@dataclass
class Score:
    """Totals over a corpus: labels and hits per category, flagged clean lines, misses."""

    labels: dict[str, int] = field(default_factory=dict)
    hits: dict[str, int] = field(default_factory=dict)
    clean_lines: int = 0
    false_alarms: int = 0
    findings: int = 0
    misses: list[str] = field(default_factory=list)
    alarms: list[str] = field(default_factory=list)

    def recall(self, category: str | None = None) -> float:
        """Found / labelled for ``category`` (all categories when None); 1.0 with no label."""
        labels = self.labels.get(category, 0) if category else sum(self.labels.values())
        hits = self.hits.get(category, 0) if category else sum(self.hits.values())
        return hits / labels if labels else 1.0

    def false_alarm_rate(self) -> float:
        return self.false_alarms / self.clean_lines if self.clean_lines else 0.0


def engine_reviewer(text: str) -> list[dict[str, Any]]:
    """The offline requirement-quality engine as a reviewer."""
    return [{"category": f.category, "line": f.line, "quote": f.quote, "rule": f.rule} for f in check_text(text)]


def _field(path: Path, data: dict[str, Any], key: str, kind: type) -> Any:
    value = data.get(key)
    if not isinstance(value, kind):
        raise CorpusError(f"{path.name}: field {key!r} must be a {kind.__name__}")
    return value


def _is_line(value: Any, lines: int) -> bool:
    """Whether ``value`` is a line number of a document of ``lines`` lines (1-based; a bool is no number)."""
    return isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= lines


def _defect(path: Path, item: Any, lines: int) -> dict[str, Any]:
    if not isinstance(item, dict):
        raise CorpusError(f"{path.name}: each defect must be a mapping")
    line, category = item.get("line"), item.get("category")
    if not _is_line(line, lines) or category not in CATEGORIES:
        raise CorpusError(
            f"{path.name}: defect {item.get('id')!r} needs a line of the document (1 to {lines}, got {line!r}) "
            f"and a known category (got {category!r})"
        )
    return {"id": str(item.get("id", "")), "line": line, "category": category, "quote": str(item.get("quote", ""))}


def read_labelled(path: Path) -> Labelled:
    """One ``*.labels.yaml`` and its document. Raises ``CorpusError`` naming the file and field,
    also for a defect line or a clean line that is not a line of the document (1 to its line
    count): such a label would count as missed, or as clean and never flagged, skewing recall
    and the false-alarm rate without a word."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as error:
        raise CorpusError(f"{path.name}: cannot be read: {error}") from None
    if not isinstance(data, dict):
        raise CorpusError(f"{path.name}: a labels file is a mapping")
    document = path.parent / _field(path, data, "document", str)
    try:
        text = document.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise CorpusError(f"{path.name}: field 'document': {error}") from None
    lines = len(text.splitlines())
    defects = [_defect(path, item, lines) for item in _field(path, data, "defects", list)]
    clean = _field(path, data, "clean_lines", list)
    outside = [n for n in clean if not _is_line(n, lines)]
    if outside:
        raise CorpusError(
            f"{path.name}: field 'clean_lines' must list lines of the document (1 to {lines}); not: {outside[:5]!r}"
        )
    return Labelled(path.name.removesuffix(".labels.yaml"), text, defects, clean)


def read_corpus(directory: Path) -> list[Labelled]:
    """Every labelled document of ``directory`` (sorted by name)."""
    if not directory.is_dir():
        raise CorpusError(f"{directory}: not a folder")
    return [read_labelled(path) for path in sorted(directory.glob("*.labels.yaml"))]


def _line(finding: dict[str, Any]) -> int | None:
    location = finding.get("location")
    line = location.get("line") if isinstance(location, dict) else finding.get("line")
    return line if isinstance(line, int) else None


def _matches(finding: dict[str, Any], defect: dict[str, Any]) -> bool:
    if finding.get("category") != defect["category"]:
        return False
    return _line(finding) == defect["line"] or (bool(defect["quote"]) and finding.get("quote") == defect["quote"])


def score_document(score: Score, document: Labelled, findings: list[dict[str, Any]]) -> None:
    """Add ``findings`` on ``document`` to ``score``."""
    score.findings += len(findings)
    for defect in document.defects:
        category = defect["category"]
        score.labels[category] = score.labels.get(category, 0) + 1
        if any(_matches(f, defect) for f in findings):
            score.hits[category] = score.hits.get(category, 0) + 1
        else:
            score.misses.append(f"{document.name}:{defect['line']} {category} {defect['quote']}")
    flagged = {_line(f) for f in findings}
    score.clean_lines += len(document.clean_lines)
    for number in document.clean_lines:
        if number in flagged:
            score.false_alarms += 1
            rules = sorted({str(f.get("rule", f.get("category"))) for f in findings if _line(f) == number})
            score.alarms.append(f"{document.name}:{number} {', '.join(rules)}")


def evaluate(documents: Iterable[Labelled], reviewer: Reviewer = engine_reviewer) -> Score:
    """Run ``reviewer`` on each document and score its findings."""
    score = Score()
    for document in documents:
        score_document(score, document, reviewer(document.text))
    return score


def metric_lines(score: Score, prefix: str = "review") -> list[str]:
    """``name value`` lines: recall per labelled category, the totals and the false alarms."""
    lines = [f"{prefix}_recall_{c} {score.recall(c):.3f}" for c in CATEGORIES if c in score.labels]
    lines += [
        f"{prefix}_labels {sum(score.labels.values())}",
        f"{prefix}_found {sum(score.hits.values())}",
        f"{prefix}_recall {score.recall():.3f}",
        f"{prefix}_clean_lines {score.clean_lines}",
        f"{prefix}_false_alarms {score.false_alarms}",
        f"{prefix}_false_alarm_rate {score.false_alarm_rate():.3f}",
        f"{prefix}_findings {score.findings}",
    ]
    return lines


def table(score: Score) -> list[str]:
    """A readable table: category, labelled, found, recall; then the totals."""
    rows = [f"{'category':<24} {'labels':>6} {'found':>6} {'recall':>7}"]
    for category in CATEGORIES:
        if category in score.labels:
            labels, hits = score.labels[category], score.hits.get(category, 0)
            rows.append(f"{category:<24} {labels:>6} {hits:>6} {score.recall(category):>7.2f}")
    rows.append(f"{'total':<24} {sum(score.labels.values()):>6} {sum(score.hits.values()):>6} {score.recall():>7.2f}")
    rows.append(
        f"false alarms on clean lines: {score.false_alarms} of {score.clean_lines} ({score.false_alarm_rate():.1%})"
    )
    return rows


def experts_reviewer(text: str) -> list[dict[str, Any]]:
    """The four offline experts of seed 002 §6.2 as one reviewer (their findings together)."""
    from teamclaw.workflows.document import parse_document, reviewable  # noqa: PLC0415 (review_rules imports this module's engine)
    from teamclaw.workflows.review_rules import review  # noqa: PLC0415

    document = reviewable(parse_document(text))
    return [issue for perspective in ("dev", "pm", "ai", "domain") for issue in review(document, perspective)]
