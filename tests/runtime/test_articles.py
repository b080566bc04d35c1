"""Messages built from names get the right English article (an ACTIVATED skill, a pm)."""

from __future__ import annotations

import pytest

from teamclaw.runtime.articles import article, with_article


@pytest.mark.parametrize(
    ("word", "expected"),
    [
        ("ACTIVATED", "an"),
        ("ERROR", "an"),
        ("UNINSTALLED", "an"),
        ("urgent", "an"),
        ("invoke_request", "an"),
        ("ai_expert", "an"),
        ("architect", "an"),
        ("hour", "an"),
        ("DISCOVERED", "a"),
        ("pm", "a"),
        ("coderA", "a"),
        ("low", "a"),
        ("user", "a"),
        ("unit", "a"),
        ("", "a"),
    ],
)
def test_the_article_follows_the_sound_of_the_first_letters(word, expected):
    assert article(word) == expected


def test_with_article_puts_the_article_before_the_word_as_written():
    assert with_article("ACTIVATED") == "an ACTIVATED"
    assert with_article("int or float") == "an int or float"
