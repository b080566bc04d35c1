"""Agents' progress steps in the page's language (``monitoring.step_labels``): the steps the
workflows report (``teamclaw.workflows.progress_steps``) are recorded in English and shown
in Chinese on a Chinese page, numbers and all; a step no catalog knows stays as recorded."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.template import Context, Template
from django.utils import translation

from monitoring.step_labels import step_label
from teamclaw.workflows.progress_steps import EXPERT_ROUND, INTERVIEW_ROUND, POINTS_FOR_OPERATOR, TEMPLATES

WORKFLOWS = Path(__file__).resolve().parent.parent / "teamclaw" / "workflows"


@pytest.mark.parametrize(
    ("step", "chinese"),
    [
        ("review written", "评审已写好"),
        ("consolidating: the operator decides", "正在整合：由操作员决定"),
        (INTERVIEW_ROUND % {"number": 2}, "第 2 轮访谈"),
        (POINTS_FOR_OPERATOR % {"count": 4}, "4 个要点待操作员决定"),
        (EXPERT_ROUND["evaluate"] % {"count": 3}, "3 位专家互评"),
    ],
)
def test_a_workflow_step_is_shown_in_chinese_on_a_chinese_page_and_as_recorded_on_an_english_one(step, chinese):
    with translation.override("zh-hans"):
        assert step_label(step) == chinese
    with translation.override("en"):
        assert step_label(step) == step


@pytest.mark.parametrize(
    "step", ["", "calling plugin at https://example.org/x", "interview round two", "review written twice"]
)
def test_a_step_no_catalog_knows_is_shown_as_recorded(step):
    with translation.override("zh-hans"):
        assert step_label(step) == step


def test_every_step_the_workflows_report_has_a_chinese_translation():
    """A new ``gettext_noop("...")`` step or template in the workflows without a translation
    would show English on a Chinese page: each one is in the catalog."""
    marked = set(TEMPLATES)
    for source in WORKFLOWS.rglob("*.py"):
        marked |= set(re.findall(r'gettext_noop\("([^"\\]+)"\)', source.read_text(encoding="utf-8")))
    assert len(marked) > 20
    with translation.override("zh-hans"):
        missing = sorted(text for text in marked if translation.gettext(text) == text)
    assert not missing, f"steps without a Chinese translation: {missing}"


def test_the_context_card_shows_the_step_in_the_pages_language():
    card = Template("{% load live_tags %}{{ step|step_label }}")
    with translation.override("zh-hans"):
        assert card.render(Context({"step": "read 9 files"})) == "已读取 9 个文件"
