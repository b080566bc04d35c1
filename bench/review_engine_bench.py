"""Requirement-quality engine figures (issue 27 robustness): milliseconds per document line.

Run: ``.venv/bin/python bench/review_engine_bench.py [--quick]``. Prints ``name value`` lines
only; no assertions. The documents are the requirement lines of the labelled documents of
``tests/data/review_{corpus,heldout,heldout2,train4,clean_traps}`` (never review_heldout3),
English and Chinese apart (a document has one language), repeated and renumbered to 100,
1,000 and 5,000 lines under one "Requirements" heading; plus one line of about 200 KB.
"""

from __future__ import annotations

import os
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "teamclaw.settings")

import django  # noqa: E402

django.setup()

from teamclaw.workflows.quality_engine import check_text, default_rules  # noqa: E402

SETS = ("review_corpus", "review_heldout", "review_heldout2", "review_train4", "review_clean_traps")
_REQUIREMENT = re.compile(r"^\s*\d+(?:\.\d+)+\.?\s+(.+)$")


def requirement_lines(language: str) -> list[str]:
    """The numbered requirement lines (number cut) of the labelled documents in ``language``."""
    out = []
    for name in SETS:
        for path in sorted((ROOT / "tests" / "data" / name).glob(f"*-{language}.md")):
            lines = path.read_text(encoding="utf-8").splitlines()
            out += [m.group(1) for line in lines if (m := _REQUIREMENT.match(line))]
    return out


def document(language: str, count: int) -> str:
    source = requirement_lines(language)
    title, heading = ("# 需求", "## 2. 需求") if language == "zh" else ("# Requirements", "## 2. Requirements")
    body = [f"2.{i + 1} {source[i % len(source)]}" for i in range(count)]
    return "\n".join([title, "", heading, *body, ""])


def long_line(language: str, size: int = 200_000) -> str:
    words = " " if language == "en" else "，"
    text, source = "", requirement_lines(language)
    while len(text) < size:
        text += words.join(source)
    heading = "## 2. 需求" if language == "zh" else "## 2. Requirements"
    return f"# T\n\n{heading}\n2.1 {text[:size]}\n"


def timed(text: str) -> float:
    start = time.perf_counter()
    check_text(text)
    return time.perf_counter() - start


def main() -> None:
    default_rules()
    check_text(document("zh", 20))  # loads jieba and the rule files
    sizes = (100, 1000) if "--quick" in sys.argv else (100, 1000, 5000)
    for language in ("en", "zh"):
        for count in sizes:
            per_line = timed(document(language, count)) * 1000 / count
            print(f"engine_{language}_ms_per_line_{count} {per_line:.3f}", flush=True)
    for language in ("en", "zh"):
        print(f"engine_{language}_one_200kb_line_s {timed(long_line(language)):.3f}", flush=True)


if __name__ == "__main__":
    main()
