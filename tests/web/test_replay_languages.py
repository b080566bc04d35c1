"""Issue 30 point 6: what the server says on the replay, live and prompt pages (refusals,
state changes, a project's use of a prompt) is in the page's language."""

from __future__ import annotations

from django.test import Client
from django.utils import translation

from monitoring.live_filters import FilterError, LiveFilters
from monitoring.replay import state_changes
from tests.monitoring.test_replay import main_context  # noqa: F401  (the fixture)

CHINESE = {"HTTP_ACCEPT_LANGUAGE": "zh-hans"}


def test_the_replay_refusals_are_in_chinese(staff_user, main_context):  # noqa: F811
    client = Client()
    client.force_login(staff_user)
    bad = client.get(f"/replay/{main_context.id}/?at=two", **CHINESE)
    assert bad.status_code == 400 and "必须是步骤编号（整数）" in bad.content.decode()
    half = client.get(f"/replay/{main_context.id}/?a=x", **CHINESE)
    assert "请选择两个要比较的快照" in half.content.decode()
    english = client.get(f"/replay/{main_context.id}/?a=x", HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert "choose two snapshots to compare" in english


def test_state_changes_and_live_filter_refusals_follow_the_language():
    with translation.override("zh-hans"):
        (change,) = state_changes({"a": [1]}, {"a": [1, 2]})
        assert (change["old"], change["new"]) == ("1 项", "2 项")
        try:
            LiveFilters.parse({"type": "nope", "task": "a b"})
        except FilterError as exc:
            assert exc.errors["type"][0].startswith("未知的消息类型")
            assert exc.errors["task"][0].startswith("任务 ID")
        else:
            raise AssertionError("bad filters were taken")
    (change,) = state_changes({"a": [1]}, {"a": [1, 2]})
    assert change["old"] == "1 item"


def test_the_prompt_impact_says_who_uses_a_version_in_chinese(staff_user, builtin):
    from capabilities.models import Project

    Project.objects.create(slug="shop", name="Shop")
    client = Client()
    client.force_login(staff_user)
    html = client.get("/prompts/pm/system_prompt/", **CHINESE).content.decode()
    assert "<code>shop</code>: 是</li>" in html
