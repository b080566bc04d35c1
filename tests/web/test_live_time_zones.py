"""Times in live fragments in each operator's zone (issue 17; docs/architecture.md "Translations").

The sink renders each pushed event once per language, in the server's zone; a socket whose
``teamclaw_tz`` cookie names another zone rewords the fragment's ``<time>`` elements
(``monitoring.live_times.in_zone``). What it sends must be exactly what a page in that zone
and language renders; its state frames are rendered in its zone directly. Real SQLite, the
project's ASGI application, the in-memory channel layer and a real run.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from django.template.loader import render_to_string
from django.utils import timezone, translation

from monitoring import live_events, live_items, live_times
from monitoring.models import Alert, Message
from runs.tasks import start_task
from tests.live_helpers import close, collect_until, next_frame, open_socket, task_finished
from web.sockets.languages import socket_time_zone

SHANGHAI = ZoneInfo("Asia/Shanghai")
NEW_YORK = ZoneInfo("America/New_York")
AT = datetime(2026, 12, 1, 22, 52, 13, 123456, tzinfo=UTC)
"""22:52 UTC on Dec 1 is 06:52 on Dec 2 in Shanghai and 17:52 on Dec 1 in New York."""
TIME = re.compile(r'<time datetime="([^"]+)" data-format="(\w+)" title="([^"]+)">([^<]*)</time>')


def epoch(value: datetime) -> float:
    return value.timestamp()


def items() -> list[tuple[str, dict]]:
    """One live thing of every kind whose fragment shows a time, built as the sink builds them
    (from the runtime's dicts), with times around ``AT``."""
    confirmation = {
        "id": "cf1",
        "context_id": "ctx1",
        "instance_id": "devops-1",
        "role": "devops",
        "task_id": "task-1",
        "project_id": None,
        "tool": "deployment",
        "args": {"target": "staging"},
        "status": "pending",
        "created_at": epoch(AT),
        "expires_at": epoch(AT + timedelta(minutes=5)),
    }
    question = {"id": "q1", "text": "Who uses it?", "topic": "users"}
    interview = {
        **confirmation,
        "id": "cf2",
        "role": "main",
        "kind": "input",
        "tool": "interview",
        "args": {"round": 1, "style": "business", "language": "en", "questions": [question]},
        "expires_at": epoch(AT + timedelta(hours=3)),
    }
    message = {
        "id": "msg1",
        "seq": 7,
        "type": "invoke_request",
        "from_role": "main",
        "from_instance": "main-1",
        "to_role": "pm",
        "to_instance": "pm-1",
        "capability_id": "requirement_writing",
        "task_id": "task-1",
        "project_id": None,
        "priority": "normal",
        "status": "delivered",
        "reason": "",
        "at": AT,
        "summary": "params {idea}",
        "summary_parts": ["params", {"keys": "idea"}],
    }
    snapshot = {"id": "s1", "context_id": "ctx1", "type": "auto", "trigger": "step", "sequence": 2}
    alert = {"kind": "queue_drop", "severity": "warning", "message": "dropped", "at": epoch(AT)}
    change = {"config_type": "role", "role": "pm", "old_version": 1, "new_version": 2}
    return [
        ("message", message),
        ("confirmation", live_items.confirmation_item(confirmation)),
        ("confirmation", live_items.confirmation_item(interview)),
        ("snapshot", {**live_items.snapshot_item({**snapshot, "created_at": epoch(AT)}), "task_id": "task-1"}),
        ("alert", live_items.alert_item(alert, "1")),
        ("config_change", live_items.config_change_item(change, AT)),
    ]


def page_html(kind: str, item: dict, zone: ZoneInfo, language: str) -> str:
    """The fragment as a page in ``zone`` and ``language`` renders it (first load, htmx)."""
    fragment = live_events.FRAGMENTS[kind]
    with translation.override(language), timezone.override(zone):
        return render_to_string(fragment.template, {fragment.var: item})


@pytest.mark.django_db
@pytest.mark.parametrize("language", ["en", "zh-hans"])
@pytest.mark.parametrize("zone", [SHANGHAI, NEW_YORK])
def test_a_reworded_fragment_is_exactly_what_a_page_in_that_zone_shows(builtin, zone, language):
    for index, (kind, item) in enumerate(items()):
        event = live_events.render_one(kind, f"{kind}:{index}", item, languages=["en", "zh-hans"])
        pushed = event.texts[language]
        reworded = json.loads(live_times.in_zone(pushed, zone, language))
        assert reworded["swap"]["html"] == page_html(kind, item, zone, language), kind
        assert reworded["swap"]["html"] != json.loads(pushed)["swap"]["html"], f"{kind} shows no time"
        assert reworded["data"] == json.loads(pushed)["data"]  # what programs read is untouched
    # What the operator reads: the local clock, the zone's name, Django's month names.
    message, confirmation, interview = (live_events.render_one(k, k, i).texts["en"] for k, i in items()[:3])
    if zone is SHANGHAI:
        assert ">06:52:13.123</time>" in live_times.in_zone(message, zone, language)
        assert ">06:57:13.123 Asia/Shanghai</time>" in live_times.in_zone(confirmation, zone, language)
        short = "12月2日 09:52" if language == "zh-hans" else "Dec 2, 09:52"
        assert f">{short} Asia/Shanghai</time>" in live_times.in_zone(interview, zone, language)
    else:
        assert ">17:52:13.123</time>" in live_times.in_zone(message, zone, language)
        row = json.loads(live_times.in_zone(message, zone, language))["swap"]["html"]
        assert 'title="2026-12-01T17:52:13.123456-05:00">17:52:13.123</time>' in row


@pytest.mark.django_db
def test_the_pushed_text_is_rendered_in_the_servers_zone_whatever_zone_is_active(builtin):
    kind, item = items()[0]
    with timezone.override(SHANGHAI):  # the sink's thread never activates one; still, never used
        text = live_events.render_one(kind, kind, item).texts["en"]
    (instant, time_format, title, shown) = TIME.findall(json.loads(text)["swap"]["html"])[0]
    assert (instant, time_format, shown) == ("2026-12-01T22:52:13.123456+00:00", "clock", "22:52:13.123")
    assert title == "2026-12-01T22:52:13.123456+00:00"
    assert live_times.in_zone(text, ZoneInfo("UTC"), "en") == text


def test_only_the_fragments_own_time_elements_are_reworded():
    element = '<time datetime="2026-12-01T22:52:13.123456+00:00" data-format="clock" title="x">22:52:13.123</time>'
    summary = f"someone typed {element}"
    payload = {"kind": "message", "data": {"summary": summary}, "swap": {"id": "m", "html": f"<td>{element}</td>"}}
    text = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
    reworded = json.loads(live_times.in_zone(text, SHANGHAI, "en"))
    assert reworded["data"]["summary"] == summary
    assert ">06:52:13.123</time>" in reworded["swap"]["html"]
    # An element this module did not write is left as it is; nothing raises.
    for odd in (
        element.replace("clock", "weekday"),
        element.replace("2026-12-01T22:52:13.123456+00:00", "2026-13-45T99:99:99+00:00"),
        element.replace("+00:00", ""),  # naive: no instant to convert
        element.replace("2026-12-01", "9999-12-31").replace("22:52", "23:59"),  # past the last year
    ):
        odd_text = json.dumps({**payload, "swap": {"html": odd}}, ensure_ascii=False, separators=(",", ":"))
        assert live_times.in_zone(odd_text, SHANGHAI, "en") == odd_text, odd
    bare = json.dumps({"kind": "task", "swap": {"html": "<a>no time</a>"}}, separators=(",", ":"))
    assert live_times.in_zone(bare, SHANGHAI, "en") is bare


def test_a_socket_takes_its_zone_from_the_cookie_a_page_does():
    def zone(cookie: bytes) -> ZoneInfo | None:
        return socket_time_zone({"type": "websocket", "headers": [(b"cookie", cookie)]})

    assert zone(b"sessionid=abc; teamclaw_tz=Asia/Shanghai") == SHANGHAI
    for refused in (b"teamclaw_tz=Mars/Olympus_Mons", b"teamclaw_tz=../../etc/passwd", b"=;;\xff", b""):
        assert zone(refused) is None, refused
    assert socket_time_zone({"type": "websocket"}) is None


def shown_times(html: str) -> list[tuple[datetime, str]]:
    """(instant, text shown) of every time element of a fragment."""
    return [(datetime.fromisoformat(instant), shown) for instant, _format, _title, shown in TIME.findall(html)]


def clock_in(zone: ZoneInfo, instant: datetime) -> str:
    local = instant.astimezone(zone)
    return local.strftime("%H:%M:%S.") + f"{local.microsecond // 1000:03d}"


def has_key(key: str):
    return lambda events: any(e["key"] == key for e in events)


@pytest.mark.django_db(transaction=True)
async def test_state_frames_and_pushed_rows_reach_each_socket_in_its_zone(runtime_host, staff_user):
    await sync_to_async(Alert.objects.create)(kind="queue_drop", severity="warning", message="dropped", created_at=AT)
    shanghai, connected, _ = await open_socket("/ws/live/", staff_user, cookies="teamclaw_tz=Asia/Shanghai")
    assert connected
    utc, connected, _ = await open_socket("/ws/live/", staff_user)
    assert connected
    # The state on connect: rendered in the socket's zone.
    alerts_shanghai = {f["into"]: f["html"] for f in (await next_frame(shanghai))["fills"]}["alerts"]
    alerts_utc = {f["into"]: f["html"] for f in (await next_frame(utc))["fills"]}["alerts"]
    assert shown_times(alerts_shanghai) == [(AT, "06:52:13.123")]
    assert shown_times(alerts_utc) == [(AT, "22:52:13.123")]

    # A real run through the recorder, the in-memory layer and the sink.
    task = await sync_to_async(start_task)(workflow="generic", task_description="Plan the sprint", user=staff_user)
    events_shanghai = await collect_until(shanghai, task_finished(task.id))
    events_utc = await collect_until(utc, task_finished(task.id))
    rows_shanghai = {e["key"]: e for e in events_shanghai if e["kind"] == "message"}
    rows_utc = {e["key"]: e for e in events_utc if e["kind"] == "message"}
    common = rows_shanghai.keys() & rows_utc.keys()
    assert common, "both sockets were sent the rows of the same messages"
    recorded = {
        f"message:{m.id}": datetime.fromtimestamp(m.timestamp_ms / 1000, tz=UTC)
        async for m in Message.objects.filter(task_id=task.id)
    }
    for key in common:
        row = rows_shanghai[key]
        [(instant, shown)] = shown_times(row["swap"]["html"])
        assert instant == recorded[key]  # the time the record holds...
        assert shown == clock_in(SHANGHAI, instant)  # ...read in Shanghai (UTC + 8 h)
        assert shown_times(rows_utc[key]["swap"]["html"]) == [(instant, clock_in(ZoneInfo("UTC"), instant))]
        assert row["data"] == rows_utc[key]["data"]

    # A batch as channels-redis carries it (its texts inside the message, from any process).
    kind, item = items()[1]
    event = await sync_to_async(live_events.render_one)(kind, "confirmation:cf1", item, languages=["en"])
    message = {"type": "live.batch", "sink": "elsewhere", "g": 1, **live_events.pack([event])}
    await get_channel_layer().group_send("live", message)
    for socket, expected in ((shanghai, "06:57:13.123 Asia/Shanghai"), (utc, "22:57:13.123 UTC")):
        events = await collect_until(socket, has_key("confirmation:cf1"))
        [pushed] = [e for e in events if e["key"] == "confirmation:cf1"]
        assert f">{expected}</time>" in pushed["swap"]["html"]
    await close(shanghai)
    await close(utc)


def test_the_audit_trail_shows_times_in_the_operators_zone(page_client, builtin):
    """The new operator saw raw UTC ('2026-12-04T22:52:59') on the audit page while the
    header said Asia/Shanghai (issue 32)."""
    from capabilities.models import ConfigChange

    change = ConfigChange.objects.order_by("pk").first()
    utc = change.created_at.strftime("%Y-%m-%d %H:%M:%S")
    assert utc in page_client.get("/config/changes/").content.decode()
    page_client.cookies["teamclaw_tz"] = "Asia/Shanghai"
    from zoneinfo import ZoneInfo

    local = change.created_at.astimezone(ZoneInfo("Asia/Shanghai")).strftime("%Y-%m-%d %H:%M:%S")
    import re

    shown = re.findall(
        r"<time datetime=\"[^\"]*\" title=\"[^\"]*\">([^<]*)</time>",
        page_client.get("/config/changes/").content.decode(),
    )
    assert local in shown and utc not in shown
