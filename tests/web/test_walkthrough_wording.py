"""Wording an operator met on a walk through the Chinese pages (the audit filter, lists of
labels, the language switcher): each reads as one sentence of the page's language."""

from __future__ import annotations

import re

import pytest

ZH = {"HTTP_ACCEPT_LANGUAGE": "zh-hans"}
EN = {"HTTP_ACCEPT_LANGUAGE": "en"}


def _options(html: str, select_name: str) -> list[str]:
    """The visible texts of the ``<option>``s of the ``<select name=select_name>``."""
    select = re.search(rf'<select[^>]*name="{select_name}".*?</select>', html, re.DOTALL)
    assert select, f"no select {select_name}"
    return [re.sub(r"<[^>]+>", "", o).strip() for o in re.findall(r"<option[^>]*>(.*?)</option>", select.group(0))]


@pytest.mark.django_db
def test_the_audit_outcome_filter_says_each_choice_once(page_client, builtin):
    """The filter used to read "one task only only" / "仅 仅一个任务" (the outcome's label
    with "only" added); each choice now has its own words."""
    zh = _options(page_client.get("/config/changes/", **ZH).content.decode(), "outcome")
    assert zh == ["更改和拒绝", "只看已应用的", "只看被拒绝的", "只看单个任务的覆盖"]
    en = _options(page_client.get("/config/changes/", **EN).content.decode(), "outcome")
    assert en == ["changes and refusals", "applied only", "refused only", "one-task overrides only"]


@pytest.mark.django_db
def test_the_language_switcher_names_each_language_in_its_own_words(page_client):
    """On a Chinese page the way back is "English" (not "英语", which a reader of English
    cannot find), and the other way round."""
    for headers in (ZH, EN):
        html = page_client.get("/", **headers).content.decode()
        assert _options(html, "language") == ["English", "简体中文"]


def test_label_lists_use_the_chinese_enumeration_comma():
    """ "结构、客观性" rather than "结构, 客观性" on a Chinese page; English keeps ", "."""
    from django.template import Context, Template
    from django.utils import translation

    template = Template('{% load outcome_labels labels %}{{ checks|check_labels }}|{{ keys|labels:"config" }}')
    context = {"checks": ["structure", "objectivity"], "keys": ["cards", "constraints"]}
    with translation.override("zh-hans"):
        zh = template.render(Context(context))
    with translation.override("en"):
        en = template.render(Context(context))
    assert "、" in zh and ", " not in zh and zh.count("、") == 2
    assert en.count(", ") == 2 and "、" not in en


@pytest.mark.django_db
def test_the_mcp_form_shows_the_credentials_path_whole(page_client):
    """The hint named ``PUT /api/v1/mcp-sources/<id>/credentials`` unescaped, so the browser
    took ``<id>`` for a tag and showed "mcp-sources//credentials"."""
    for headers in (ZH, EN):
        html = page_client.get("/tools/mcp/", **headers).content.decode()
        assert "mcp-sources/&lt;id&gt;/credentials" in html
        assert "mcp-sources/<id>" not in html


def test_the_registered_mcp_source_notice_names_the_mode_in_chinese():
    """The notice "在你更改之前对每个角色均为 deny" left the tool mode in English; the matrix and the
    page's text call it "禁止"."""
    from django.utils import translation
    from django.utils.translation import gettext

    msgid = "Registered %(name)s: %(count)d tool(s), deny for every role until you change them."
    with translation.override("zh-hans"):
        shown = gettext(msgid) % {"name": "time", "count": 2}
    assert "禁止" in shown and "deny" not in shown


@pytest.mark.django_db
def test_the_task_list_shows_tokens_with_separators_and_says_when_they_are_estimated(page_client):
    """The list said "41815" where the task page says "≈ 41,815 token (估算)"."""
    from monitoring.models import Task

    Task.objects.create(
        id="t-offline", workflow="requirement_review", title="离线", executor="offline", tokens_used=41815
    )
    Task.objects.create(id="t-model", workflow="requirement_review", title="模型", executor="openai", tokens_used=1234)
    for headers, estimated in ((ZH, "（估算）"), (EN, "(est.)")):
        html = page_client.get("/tasks/", **headers).content.decode()
        cells = re.findall(r'<td data-field="task-tokens">(.*?)</td>', html, re.DOTALL)
        assert len(cells) == 2, cells
        offline, model = sorted(cells, key=lambda c: "41,815" not in c)
        assert offline.startswith("≈ 41,815 ") and estimated in offline
        assert model == "1,234"
