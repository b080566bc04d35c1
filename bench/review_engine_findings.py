"""Dump every engine finding on the labelled sets, one tab-separated line each: file, line,
rule, category, quote (issue 27: a speed change must leave them identical).

Run: ``.venv/bin/python bench/review_engine_findings.py > before.tsv``, change, run again, diff.
Never reads tests/data/review_heldout3.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "teamclaw.settings")

import django  # noqa: E402

django.setup()

from teamclaw.workflows.quality_engine import check_text  # noqa: E402

FOLDERS = (
    ROOT.parent / "shared" / "requirements" / "dev",
    *(ROOT / "tests" / "data" / name for name in
      ("review_corpus", "review_heldout", "review_heldout2", "review_train4", "review_clean_traps")),
)  # fmt: skip


def main() -> None:
    for folder in FOLDERS:
        for path in sorted(folder.glob("*.md")):
            for f in check_text(path.read_text(encoding="utf-8")):
                quote = f.quote.replace("\t", " ").replace("\n", " ")
                print(f"{folder.name}/{path.name}\t{f.line}\t{f.rule}\t{f.category}\t{quote}\t{f.message}\t{f.pair}")


if __name__ == "__main__":
    main()
