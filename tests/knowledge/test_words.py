"""The words knowledge is indexed and searched by (knowledge.words, issue 32): jieba's words for
Chinese, stems for English, the stop words of stop_words.yaml dropped from queries only; and the
questions of the issue answered by the passage that answers them, with distinct bm25 scores."""

from __future__ import annotations

import pytest
import yaml
from django.core.management import call_command

from knowledge import words
from knowledge.demo_knowledge import load_demo_knowledge
from knowledge.models import KnowledgeChunk, KnowledgeSource
from knowledge.search import search
from knowledge.sources import Upload, add_source
from tests.knowledge.helpers import librarian


def test_every_stop_word_is_dropped_from_a_query_that_holds_it():
    groups = yaml.safe_load(words.STOP_WORDS_FILE.read_text(encoding="utf-8"))["groups"]
    assert {g["language"] for g in groups} == {"zh", "en"} and all(g["why"].strip() for g in groups)
    for group in groups:
        for stop in group["words"]:
            # jieba cuts each listed word whole, so the list means what it says
            assert words.query_words(f"{stop} 苹果 apple") == ["苹果", "appl"], stop


def test_a_group_without_a_reason_or_with_a_word_yaml_reads_as_a_boolean_is_refused(tmp_path):
    bad = tmp_path / "stop.yaml"
    bad.write_text("groups:\n  - language: zh\n    words: [的]\n", encoding="utf-8")
    with pytest.raises(ValueError, match="group 1 needs a 'why'"):
        words.load_stop_words(bad)
    bad.write_text("groups:\n  - language: en\n    why: prepositions\n    words: [at, on]\n", encoding="utf-8")
    with pytest.raises(ValueError, match="group 1: True is not a string"):
        words.load_stop_words(bad)
    assert words.query_words("rights on production") == ["right", "product"]


def test_chinese_is_cut_into_words_and_english_into_stems():
    assert words.query_words("表名怎么命名") == ["表名", "命名"]
    assert words.index_words("所有表名使用 snake_case") == ["所有", "表名", "使用", "snake", "case"]
    assert words.query_words("How are tables named?") == ["tabl", "name"]
    assert words.index_words("Table names") == ["tabl", "name"]
    assert words.query_words("数据库用什么") == ["数据", "据库", "数据库"]  # search mode: the words inside too
    assert words.query_words("什么") == ["什么"]  # only stop words: kept


@pytest.mark.django_db
def test_stale_words_are_cut_again_by_the_command():
    role = librarian()
    add_source(
        Upload("a.md", "text/markdown", "所有表名使用 snake_case。".encode()),
        role=role.role,
        project=None,
        load_level="full",
    )
    KnowledgeChunk.objects.update(text_words="表 名", heading_words="", words_version=0)  # an older cutting
    assert search("表名怎么命名", roles=["librarian"]) == []
    call_command("index_knowledge_words", verbosity=0)
    assert KnowledgeChunk.objects.get().words_version == words.WORDS_VERSION
    assert len(search("表名怎么命名", roles=["librarian"])) == 1


@pytest.mark.django_db
def test_the_demo_knowledge_answers_the_issue_question_once(builtin):
    added = load_demo_knowledge()
    assert {s.role.role for s in added} == {"dba", "devops"}
    assert load_demo_knowledge() == []  # never added twice
    hits = search("表名怎么命名", roles=["dba"], k=1)
    assert hits and "所有表名使用 snake_case" in hits[0].chunk.text
    assert KnowledgeSource.objects.count() == 2


def test_the_rarest_words_choose_the_chunks_up_to_a_budget_and_the_rest_only_score_them():
    from knowledge.search import CHOOSING_ROWS, choosing

    assert choosing({"时候": 10_000, "工单": 40}) == {"工单"}  # 时候 beside 工单: scores only
    assert choosing({"end": 3_811, "test": 3_058}) == {"test"}  # no rare word: the rarest still chooses
    assert choosing({"a": 1_000, "b": 1_500, "c": 2_000}) == {"a", "b"}  # 2,500 <= 3,000 < 4,500
    assert choosing({"a": 200, "b": 1, "gone": 0}) == {"a", "b"}  # a small base: every word it holds
    assert CHOOSING_ROWS == 3000
