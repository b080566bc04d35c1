"""Agents' progress steps in the page's language (``monitoring.step_labels``): the steps the
workflows and the runtime report (``teamclaw.workflows.progress_steps``,
``teamclaw.runtime.progress``) are recorded in English and shown in Chinese on a Chinese
page, values and all; any other text stays as recorded, even a catalog word."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.template import Context, Template
from django.utils import translation

from monitoring.step_labels import step_label
from teamclaw.runtime.progress import (
    CALLING_PLUGIN,
    MODEL_ROUND,
    RESUMED,
    RUNTIME_TEMPLATES,
    SNAPSHOT_FIXED,
    SNAPSHOT_TEMPLATES,
)
from teamclaw.workflows.progress_steps import (
    EXPERT_ROUND,
    FIXED_STEPS,
    INTERVIEW_ROUND,
    POINTS_FOR_OPERATOR,
    REVIEW_WRITTEN,
    TEMPLATES,
)

pytestmark = pytest.mark.django_db  # a capability id reads as its card's name (capabilities.names)

PACKAGE = Path(__file__).resolve().parent.parent.parent / "teamclaw"


@pytest.mark.parametrize(
    ("step", "chinese"),
    [
        (REVIEW_WRITTEN, "评审已写好"),
        ("consolidating: the operator decides", "正在整合：由操作员决定"),
        (INTERVIEW_ROUND % {"number": 2}, "第 2 轮访谈"),
        (POINTS_FOR_OPERATOR % {"count": 4}, "4 个要点待操作员决定"),
        (EXPERT_ROUND["evaluate"] % {"count": 3}, "3 位专家互评"),
        (MODEL_ROUND % {"what": "expert_review", "round": 1, "rounds": 3}, "expert_review：第 1/3 轮模型调用"),
        (CALLING_PLUGIN % {"url": "https://plugins.example/x"}, "正在调用位于 https://plugins.example/x 的插件"),
        (RESUMED % {"attempt": 2}, "它的工作进程已停止；任务已恢复（第 2 次尝试）"),
    ],
)
def test_a_reported_step_is_shown_in_chinese_on_a_chinese_page_and_as_recorded_on_an_english_one(step, chinese):
    with translation.override("zh-hans"):
        assert step_label(step) == chinese
    with translation.override("en"):
        assert step_label(step) == step


@pytest.mark.parametrize(
    "step",
    [
        "",
        "calling plugin",
        "interview round two",
        "review written twice",
        # Capability ids shown while their call starts, which are also catalog entries.
        "search",
        "draft",
        "project",
    ],
)
def test_any_other_step_is_shown_as_recorded(step):
    with translation.override("zh-hans"):
        assert step_label(step) == step


def test_every_marked_step_is_known_to_the_pages_and_has_a_chinese_translation():
    """A step marked in the workflows or the runtime is one the pages know (a fixed step or a
    template), and has a translation: none would show English on a Chinese page."""
    known = set(FIXED_STEPS) | set(TEMPLATES) | set(RUNTIME_TEMPLATES) | SNAPSHOT_FIXED | set(SNAPSHOT_TEMPLATES)
    marked: set[str] = set()
    for source in PACKAGE.rglob("*.py"):
        marked |= set(re.findall(r'gettext_noop\("([^"\\]+)"\)', source.read_text(encoding="utf-8")))
    assert len(marked) > 25
    assert marked <= known, f"marked but unknown to the pages: {sorted(marked - known)}"
    with translation.override("zh-hans"):
        missing = sorted(text for text in known if translation.gettext(text) == text)
    assert not missing, f"steps without a Chinese translation: {missing}"


def test_the_context_card_shows_the_step_in_the_pages_language():
    card = Template("{% load live_tags %}{{ step|step_label }}")
    with translation.override("zh-hans"):
        assert card.render(Context({"step": "read 9 files"})) == "已读取 9 个文件"
        assert card.render(Context({"step": "<b>x</b>: answered"})) == "&lt;b&gt;x&lt;/b&gt;：已回答"


@pytest.mark.django_db
def test_a_capability_id_step_reads_as_its_cards_name(builtin):
    """The product manager's card ended on ``requirement_quality_check`` on a Chinese page;
    a step that is a card's id shows the card's name in the page's language."""
    from capabilities import names

    names.forget()
    card = Template("{% load live_tags %}{{ step|step_label }}")
    with translation.override("zh-hans"):
        assert card.render(Context({"step": "requirement_quality_check"})) == "需求质量检查"
        assert step_label("question_aggregation") == "问题汇总"
        assert step_label("no_such_capability") == "no_such_capability"
    with translation.override("en"):
        assert step_label("requirement_quality_check") == "Requirement quality check"
