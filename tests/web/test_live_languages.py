"""Live sockets in their operator's language (issue 17; docs/architecture.md "Translations").

The language is chosen from the handshake as ``LocaleMiddleware`` chooses a page's (the
``django_language`` cookie, then ``Accept-Language``, then ``LANGUAGE_CODE``); through the real
ASGI stack, channel layer and live sink, two sockets watching the same run get the same events,
one in Chinese and one in English, and each event is rendered once per language, not per socket.
"""

from __future__ import annotations

import re
from collections import Counter
from datetime import UTC, datetime

import pytest
from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer

from monitoring import live_events
from monitoring.live_items import config_change_item
from monitoring.live_sink import get_live_sink
from runs.tasks import start_task
from tests.live_helpers import close, collect_until, next_frame, open_socket, task_finished
from web.sockets.languages import socket_language

CJK = re.compile(r"[\u4e00-\u9fff]")
CHINESE = "django_language=zh-hans"
ENGLISH = "django_language=en"


def scope(*headers: tuple[bytes, bytes]) -> dict:
    return {"type": "websocket", "headers": list(headers)}


def test_the_cookie_comes_first_then_accept_language_then_language_code(settings):
    cookie_zh = (b"cookie", b"sessionid=abc; django_language=zh-hans")
    accept_zh = (b"accept-language", b"zh-CN,zh;q=0.9,en;q=0.8")
    accept_en = (b"accept-language", b"en-GB,en;q=0.9")
    assert socket_language(scope(cookie_zh, accept_en)) == "zh-hans"
    assert socket_language(scope((b"cookie", b"django_language=en"), accept_zh)) == "en"
    assert socket_language(scope(accept_zh)) == "zh-hans"
    assert socket_language(scope(accept_en)) == "en"
    # Unknown or malformed values fall through, as on a page.
    assert socket_language(scope((b"cookie", b"django_language=klingon"), accept_zh)) == "zh-hans"
    assert socket_language(scope((b"cookie", b"=;;\xff"), (b"accept-language", b"*;q=x,\xfe"))) == "en"
    assert socket_language(scope()) == "en"
    settings.LANGUAGE_CODE = "zh-hans"
    assert socket_language(scope()) == "zh-hans"
    assert socket_language(scope(accept_en)) == "en"


@pytest.mark.parametrize("spelling", ["zh-hans", "zh-Hans", "ZH-HANS", "zh"])
def test_a_socket_speaks_what_the_page_speaks_for_any_spelling_of_the_cookie(page_client, builtin, spelling):
    """The cookie's code in another case (or the bare ``zh``) gives the page Chinese; the
    socket of that page must agree, or its state frame would replace the page in English."""
    page_client.cookies["django_language"] = spelling
    page = page_client.get("/live/").content.decode()
    shown = re.search(r'<html lang="([^"]+)"', page).group(1)  # HTML's lang is case-blind
    assert shown.lower() == "zh-hans"
    assert socket_language(scope((b"cookie", f"django_language={spelling}".encode()))) == "zh-hans"


@pytest.mark.django_db(transaction=True)
async def test_the_same_run_reaches_a_chinese_and_an_english_socket_each_in_its_language(runtime_host, staff_user):
    chinese, connected, _ = await open_socket("/ws/live/", staff_user, cookies=CHINESE)
    assert connected
    # The cookie wins over the browser's Accept-Language, as it does for pages.
    english, connected, _ = await open_socket(
        "/ws/live/", staff_user, cookies=ENGLISH, headers=((b"accept-language", b"zh-CN,zh;q=0.9"),)
    )
    assert connected
    # The state frame on connect is rendered in the socket's language too.
    state_zh, state_en = await next_frame(chinese), await next_frame(english)
    assert state_zh["type"] == state_en["type"] == "state"
    fills_zh = {f["into"]: f["html"] for f in state_zh["fills"]}
    fills_en = {f["into"]: f["html"] for f in state_en["fills"]}
    assert "还没有消息" in fills_zh["message-log-rows"] and "没有告警" in fills_zh["alerts"]
    assert "No messages yet." in fills_en["message-log-rows"] and "No alerts." in fills_en["alerts"]
    assert not CJK.search(str(fills_en))
    assert get_live_sink().languages() == ["en", "zh-hans"]

    task = await sync_to_async(start_task)(workflow="generic", task_description="Plan the sprint", user=staff_user)
    events_zh = await collect_until(chinese, task_finished(task.id))
    events_en = await collect_until(english, task_finished(task.id))

    cards_zh = {e["key"]: e for e in events_zh if e["kind"] == "context"}
    cards_en = {e["key"]: e for e in events_en if e["kind"] == "context"}
    assert cards_zh
    common = cards_zh.keys() & cards_en.keys()
    assert common, "both sockets were sent the cards of the same contexts"
    for key in common:
        zh, en = cards_zh[key]["swap"]["html"], cards_en[key]["swap"]["html"]
        assert cards_zh[key]["data"]["id"] == cards_en[key]["data"]["id"]
        assert cards_zh[key]["swap"]["id"] == cards_en[key]["swap"]["id"]
        assert ">查看</button>" in zh and ">回放</a>" in zh and 'title="智能体实例"' in zh, zh
        assert ">Inspect</button>" in en and ">Replay</a>" in en and 'title="agent instance"' in en, en
        assert "Inspect" not in zh
        assert not CJK.search(en), en
    # A message row's summary is worded for its reader too; its data stays English for programs.
    rows_zh = {e["key"]: e for e in events_zh if e["kind"] == "message"}
    rows_en = {e["key"]: e for e in events_en if e["kind"] == "message"}
    request = next(k for k in rows_zh.keys() & rows_en.keys() if rows_zh[k]["data"]["type"] == "invoke_request")
    assert "参数 {" in rows_zh[request]["swap"]["html"] and "params {" not in rows_zh[request]["swap"]["html"]
    assert "params {" in rows_en[request]["swap"]["html"]
    assert rows_zh[request]["data"]["summary"] == rows_en[request]["data"]["summary"]
    assert rows_zh[request]["data"]["summary"].startswith("params {")
    chip_zh = [e for e in events_zh if e["kind"] == "task"][-1]["swap"]["html"]
    chip_en = [e for e in events_en if e["kind"] == "task"][-1]["swap"]["html"]
    # an offline estimate: no "used / budget", and the tooltip says why, in each language
    assert "不适用于估算值" in chip_zh and "（估算）" in chip_zh, chip_zh
    assert "is not applied to estimates" in chip_en and "(est.)" in chip_en, chip_en
    assert not CJK.search(chip_en), chip_en
    await close(chinese)
    await close(english)


@pytest.mark.django_db(transaction=True)
async def test_each_event_is_rendered_once_per_language_not_per_socket(runtime_host, staff_user, monkeypatch):
    renders: Counter[str] = Counter()
    real = live_events.render_to_string

    def counting(template, context):
        from django.utils import translation

        renders[translation.get_language()] += 1
        return real(template, context)

    monkeypatch.setattr(live_events, "render_to_string", counting)
    sockets = []
    for cookies in (CHINESE, CHINESE, CHINESE, ENGLISH):
        socket, connected, _ = await open_socket("/ws/live/", staff_user, cookies=cookies)
        assert connected
        await next_frame(socket)
        sockets.append(socket)
    assert get_live_sink().languages() == ["en", "zh-hans"]
    task = await sync_to_async(start_task)(workflow="generic", task_description="Count the renders", user=staff_user)
    received = [await collect_until(socket, task_finished(task.id)) for socket in sockets]
    await sync_to_async(get_live_sink().flush)()
    # Three Chinese sockets, one English: as many Chinese renders as English ones.
    assert renders["zh-hans"] == renders["en"] > 0
    assert set(renders) == {"en", "zh-hans"}
    assert all(len(events) > 0 for events in received)
    for socket in sockets[:3]:
        await close(socket)
    # Nobody reads Chinese any more: the sink stops rendering it.
    assert get_live_sink().languages() == ["en"]
    await close(sockets[3])


@pytest.mark.django_db(transaction=True)
async def test_a_batch_without_the_sockets_language_resynchronises_it_in_that_language(runtime_host, staff_user):
    """A socket that connected while a batch was being rendered for the languages in use
    before it gets the current state (in its language) instead of another language's text."""
    socket, connected, _ = await open_socket("/ws/live/", staff_user, cookies=CHINESE)
    assert connected
    await next_frame(socket)
    change = config_change_item(
        {"config_type": "role", "role": "pm", "project_id": "shop", "old_version": 1, "new_version": 2},
        datetime.now(UTC),
    )
    event = live_events.render_one("config_change", "config_change:2", change, languages=["en"])
    assert set(event.texts) == {"en"}
    message = {"type": "live.batch", "sink": "elsewhere", "g": 1, **live_events.pack([event])}
    await get_channel_layer().group_send("live", message)
    behind = await next_frame(socket)
    assert behind["type"] == "behind"
    state = await next_frame(socket)
    assert state["type"] == "state" and state["resync"] is True
    assert CJK.search(str(state["fills"]))
    # The same batch with Chinese in it is simply delivered, in Chinese.
    event = live_events.render_one("config_change", "config_change:3", change, languages=["en", "zh-hans"])
    message = {"type": "live.batch", "sink": "elsewhere", "g": 2, **live_events.pack([event])}
    await get_channel_layer().group_send("live", message)
    frame = await next_frame(socket)
    assert frame["type"] == "events"
    assert [e["key"] for e in frame["events"]] == ["config_change:3"]
    assert "· 项目 shop" in frame["events"][0]["swap"]["html"]
    await close(socket)


def test_the_sink_renders_the_languages_of_its_sockets_or_every_language_across_processes(monkeypatch, settings):
    from channels.layers import InMemoryChannelLayer

    from monitoring import live_sink

    sink = live_sink.LiveSink()
    monkeypatch.setattr(live_sink, "get_channel_layer", lambda: InMemoryChannelLayer())
    assert sink.languages() == ["en"]  # nobody connected: LANGUAGE_CODE
    sink.client_connected("zh-hans")
    assert sink.languages() == ["zh-hans"]
    sink.client_connected("en")
    sink.client_connected("zh-hans")
    sink.client_disconnected("zh-hans")
    assert sink.languages() == ["en", "zh-hans"]
    sink.client_disconnected("zh-hans")
    assert sink.languages() == ["en"]
    # A layer shared between processes (Redis): the readers may be anywhere, render them all.
    monkeypatch.setattr(live_sink, "get_channel_layer", lambda: object())
    assert sink.languages() == ["en", "zh-hans"]
    settings.LANGUAGES = [("en", "English"), ("zh-hans", "简体中文"), ("de", "Deutsch")]
    assert sink.languages() == ["de", "en", "zh-hans"]
