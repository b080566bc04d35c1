"""``manage.py eval_review DIR``: recall per category and false alarms on a labelled corpus (issue 27)."""

from __future__ import annotations

from io import StringIO
from pathlib import Path

import pytest
import yaml
from django.core.management import CommandError, call_command

CORPUS = Path(__file__).parent.parent / "data" / "review_corpus"
HELDOUT = Path(__file__).parent.parent / "data" / "review_heldout"
HELDOUT2 = Path(__file__).parent.parent / "data" / "review_heldout2"
TRAIN4 = Path(__file__).parent.parent / "data" / "review_train4"


def _metrics(text: str) -> dict[str, str]:
    pairs = [line.split(" ", 1) for line in text.splitlines() if line.startswith("review_") and " " in line]
    return dict(pairs)


def _corpus(tmp_path: Path, labels: str) -> Path:
    (tmp_path / "shop.md").write_text(
        "# Shop\n\n## Features\n- The export must be quick.\n- The export lists each order with its total.\n",
        encoding="utf-8",
    )
    (tmp_path / "shop.labels.yaml").write_text(labels, encoding="utf-8")
    return tmp_path


def test_eval_review_counts_a_found_defect_and_a_quiet_clean_line(tmp_path):
    corpus = _corpus(
        tmp_path,
        "document: shop.md\ndefects:\n  - {id: d1, line: 4, quote: x, category: vague_term}\nclean_lines: [5]\n",
    )
    out = StringIO()
    call_command("eval_review", str(corpus), stdout=out)
    metrics = _metrics(out.getvalue())
    assert metrics["review_recall_vague_term"] == "1.000"
    assert metrics["review_labels"] == "1"
    assert metrics["review_false_alarms"] == "0"
    assert "vague_term" in out.getvalue().split("\n\n", 1)[1]  # the table


def test_eval_review_counts_a_finding_on_a_clean_line_as_a_false_alarm_and_a_wrong_category_as_a_miss(tmp_path):
    corpus = _corpus(
        tmp_path,
        "document: shop.md\ndefects:\n  - {id: d1, line: 4, quote: x, category: missing_unit}\nclean_lines: [4]\n",
    )
    out = StringIO()
    call_command("eval_review", str(corpus), "--details", stdout=out)
    metrics = _metrics(out.getvalue())
    assert metrics["review_recall_missing_unit"] == "0.000"
    assert metrics["review_false_alarms"] == "1"
    assert "shop:4 vague-quality-word" in out.getvalue()


def test_eval_review_runs_on_the_labelled_documents_of_the_repository():
    out = StringIO()
    call_command("eval_review", str(CORPUS), stdout=out)
    metrics = _metrics(out.getvalue())
    assert metrics["review_documents"] == str(len(list(CORPUS.glob("*.labels.yaml"))))
    assert float(metrics["review_recall"]) > 0


@pytest.mark.parametrize("folder", [HELDOUT, HELDOUT2], ids=lambda f: f.name)
def test_eval_review_measures_the_held_out_documents_kept_aside_for_acceptance(folder):
    out = StringIO()
    call_command("eval_review", str(folder), stdout=out)
    metrics = _metrics(out.getvalue())
    assert metrics["review_documents"] == "8"
    assert int(metrics["review_clean_lines"]) >= 8 * 5


LABELS = [label for folder in (CORPUS, HELDOUT, HELDOUT2, TRAIN4) for label in sorted(folder.glob("*.labels.yaml"))]


@pytest.mark.parametrize("labels", LABELS, ids=[path.name for path in LABELS])
def test_each_label_quotes_its_line_verbatim_and_no_clean_line_carries_a_defect(labels):
    data = yaml.safe_load(labels.read_text(encoding="utf-8"))
    lines = (labels.parent / data["document"]).read_text(encoding="utf-8").splitlines()
    for defect in data["defects"]:
        assert defect["quote"] in lines[defect["line"] - 1], defect["id"]
    assert not {defect["line"] for defect in data["defects"]} & set(data["clean_lines"])


@pytest.mark.parametrize(
    ("labels", "reason"),
    [
        ("document: shop.md\ndefects: []\n", "clean_lines"),
        ("document: shop.md\ndefects:\n  - {line: 4, category: nonsense}\nclean_lines: []\n", "known category"),
        ("document: other.md\ndefects: []\nclean_lines: []\n", "document"),
        ("- not a mapping\n", "mapping"),
        # a label on a line the document does not have would count as missed (or as a quiet
        # clean line) without a word, skewing recall and the false-alarm rate (shop.md has 5 lines)
        ("document: shop.md\ndefects:\n  - {id: d1, line: 999, category: vague_term}\nclean_lines: []\n", "1 to 5"),
        ("document: shop.md\ndefects:\n  - {id: d1, line: 0, category: vague_term}\nclean_lines: []\n", "got 0"),
        ("document: shop.md\ndefects:\n  - {id: d1, line: true, category: vague_term}\nclean_lines: []\n", "got True"),
        ("document: shop.md\ndefects: []\nclean_lines: [2, -5, 100000]\n", r"clean_lines.*\[-5, 100000\]"),
    ],
)
def test_eval_review_refuses_a_bad_labels_file_naming_it(tmp_path, labels, reason):
    corpus = _corpus(tmp_path, labels)
    with pytest.raises(CommandError, match=reason) as error:
        call_command("eval_review", str(corpus))
    assert "shop.labels.yaml" in str(error.value)
    assert error.value.returncode == 2


def test_eval_review_refuses_a_missing_folder(tmp_path):
    with pytest.raises(CommandError, match="not a folder"):
        call_command("eval_review", str(tmp_path / "none"))


def test_a_bad_rule_file_is_refused_at_start_up_by_a_system_check(tmp_path, monkeypatch):
    from django.core.management import call_command as run

    from teamclaw.workflows import quality_rules

    source = (quality_rules.RULES_DIR / "absolute.yaml").read_text(encoding="utf-8")
    (tmp_path / "absolute.yaml").write_text(
        source.replace("category: absolute", "category: absolutes"), encoding="utf-8"
    )
    monkeypatch.setattr(quality_rules, "RULES_DIR", tmp_path)
    with pytest.raises(Exception, match=r"runs\.E001.*absolute\.yaml.*unknown category"):
        run("check")


def test_eval_review_with_the_model_reviewer_on_a_database_not_migrated_says_run_migrate(tmp_path):
    import os
    import subprocess
    import sys

    corpus = _corpus(tmp_path, "document: shop.md\ndefects: []\nclean_lines: [5]\n")
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{tmp_path / 'never-migrated.sqlite3'}"}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    manage = Path(__file__).parents[2] / "manage.py"
    result = subprocess.run(
        [sys.executable, str(manage), "eval_review", str(corpus), "--reviewer", "model"],
        capture_output=True, text=True, env=env, check=False, timeout=300,
    )  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert "manage.py migrate" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        # 5 MB: over the 1 MB a task takes; the engine would run for minutes on it
        ("- The export must be quick.\n" * 190_000, "limit is"),
        ("# Shop\x00\x01\x02\n", "binary"),
        ("\n\n", "empty"),
    ],
)
def test_eval_review_refuses_a_document_a_task_would_refuse_naming_it(tmp_path, content, reason):
    corpus = _corpus(tmp_path, "document: shop.md\ndefects: []\nclean_lines: []\n")
    (corpus / "shop.md").write_text(content, encoding="utf-8")
    with pytest.raises(CommandError, match=reason) as error:
        call_command("eval_review", str(corpus))
    assert "shop.labels.yaml: field 'document'" in str(error.value)
    assert error.value.returncode == 2
