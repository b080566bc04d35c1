"""A browser's outbox: frame credits, coalescing, falling behind, resync (web.sockets.outbox);
and the live sink's coalescing of a committed batch (monitoring.live_events.extract)."""

from __future__ import annotations

import json

import pytest

from monitoring.live_events import extract
from teamclaw.runtime.context import ContextStatus, ExecutionContext
from teamclaw.runtime.events import ContextChanged, MessageSent, MessageStatusChanged, TaskFinished, TaskProgress
from teamclaw.runtime.messages import AgentMessage, DeliveryStatus, MessageContext, MessageType, Party
from web.sockets.outbox import Outbox


def event(key: str, n: int) -> str:
    return json.dumps({"key": key, "n": n})


def frame_events(frame: str) -> list[dict]:
    return json.loads(frame)["events"]


def test_frames_stop_when_the_window_is_full_and_resume_on_ack():
    box = Outbox(window=2, frame_events=2, max_pending=10)
    for i in range(5):
        box.push(f"k{i}", event(f"k{i}", i))
    first, second = box.next_frame(), box.next_frame()
    assert [e["n"] for e in frame_events(first)] == [0, 1]
    assert [e["n"] for e in frame_events(second)] == [2, 3]
    assert box.next_frame() is None
    assert box.in_flight == 2
    box.ack(json.loads(first)["seq"])
    third = box.next_frame()
    assert [e["n"] for e in frame_events(third)] == [4]
    assert box.next_frame() is None


def test_updates_of_the_same_thing_coalesce_in_place():
    box = Outbox(window=1, frame_events=10, max_pending=10)
    box.push("context:a", event("context:a", 10))
    box.push("message:x", event("message:x", 1))
    box.push("context:a", event("context:a", 90))
    assert box.coalesced == 1
    assert [(e["key"], e["n"]) for e in frame_events(box.next_frame())] == [("context:a", 90), ("message:x", 1)]


def test_a_client_past_the_limit_falls_behind_then_gets_a_state_frame():
    box = Outbox(window=1, frame_events=1, max_pending=3)
    state = box.state_frame([], resync=False)
    assert box.in_flight == 1
    assert [box.push(f"k{i}", event(f"k{i}", i)) for i in range(4)] == [False, False, False, True]
    assert box.behind
    assert not box.pending
    notice = json.loads(box.behind_frame())
    assert notice["type"] == "behind"
    assert notice["dropped"] == 4
    assert box.push("k9", event("k9", 9)) is False
    assert box.dropped == 5  # dropped while behind
    assert box.next_frame() is None
    assert not box.wants_resync
    box.ack(json.loads(state)["seq"])
    assert not box.wants_resync  # the behind notice is still unacknowledged
    box.ack(notice["seq"])
    assert box.wants_resync
    resync = json.loads(box.state_frame([{"into": "x", "html": "<p>now</p>"}], resync=True))
    assert resync["resync"] is True
    assert not box.behind


def test_acks_out_of_range_are_ignored():
    box = Outbox()
    box.state_frame([], resync=False)
    box.ack(99)
    box.ack("1")
    assert box.acked_seq == 0
    box.ack(1)
    assert box.acked_seq == 1


def test_bad_limits_are_refused():
    with pytest.raises(ValueError):
        Outbox(window=0)
    with pytest.raises(ValueError):
        Outbox(frame_events=10, max_pending=5)


def _message(kind=MessageType.INVOKE_REQUEST) -> AgentMessage:
    return AgentMessage(
        type=kind,
        sender=Party(role="main", instance_id="main-1"),
        recipient=Party(role="pm", instance_id="pm-1"),
        payload={"capability_id": "requirement_analysis", "params": {"requirement": "x"}},
        context=MessageContext("t1", "t1", "c1"),
        timestamp=1_700_000_000_000,
    )


def test_a_batch_coalesces_to_one_item_per_live_thing_with_its_latest_state():
    message = _message()
    context = ExecutionContext("pm-1", "pm", "t1", "task", "t1", None, 1, created_at=1_700_000_000.0)
    batch = [
        MessageSent(message, DeliveryStatus.QUEUED, at=1.0),
        ContextChanged(context, at=1.0),
        MessageStatusChanged(message, DeliveryStatus.DELIVERED, at=1.1),
    ]
    context.status = ContextStatus.EXECUTING
    context.progress = 40
    batch.append(ContextChanged(context, at=1.2))
    context.progress = 70
    items = extract(batch)
    assert [(i.kind, i.key) for i in items] == [
        ("message", f"message:{message.id}"),
        ("context", f"context:{context.id}"),
    ]
    assert items[0].item["status"] == "delivered"
    assert items[1].item["progress"] == 70
    assert items[1].item["status"] == "executing"
    assert items[0].item["summary"] == "params {requirement: x}"  # values inline (issue 30)


def test_a_task_chip_keeps_its_title_and_status_through_progress_and_its_end():
    """A TaskProgress says no status (the task runs) and both it and TaskFinished carry the
    description, so the chip neither loses its title nor shows an empty badge."""
    progress = TaskProgress("t1", None, "Plan the checkout", 1200, 50_000, True, at=1.0)
    [running] = extract([progress])
    assert running.item["title"] == "Plan the checkout" and running.item["status"] == "running"
    assert running.item["tokens_used"] == 1200 and running.item["tokens_estimated"]
    finished = TaskFinished("t1", "completed", None, None, 4000, 50_000, 2.0, True, "Plan the checkout", at=2.0)
    [done] = extract([progress, finished])
    assert (done.item["title"], done.item["status"], done.item["tokens_used"]) == (
        "Plan the checkout",
        "completed",
        4000,
    )


def test_merging_queued_batches_keeps_first_positions_and_latest_fields():
    from monitoring.live_events import LiveItem, merge

    items = [
        LiveItem("message", "message:a", {"status": "queued"}),
        LiveItem("context", "context:c", {"progress": 10}),
        LiveItem("message", "message:b", {"status": "delivered"}),
        LiveItem("message", "message:a", {"status": "delivered"}),
        LiveItem("context", "context:c", {"progress": 60}),
    ]
    merged = merge(items)
    assert [(i.key, i.item) for i in merged] == [
        ("message:a", {"status": "delivered"}),
        ("context:c", {"progress": 60}),
        ("message:b", {"status": "delivered"}),
    ]


def test_a_packed_batch_travels_as_strings_and_unpacks_whole():
    from copy import deepcopy

    from monitoring.live_events import LiveEvent, pack, unpack

    english = [json.dumps({"html": "<p>naïve \x00 \n 🦀</p>"}), json.dumps({"x": 1})]
    chinese = [json.dumps({"html": "<p>任务 \x00</p>"}, ensure_ascii=False), json.dumps({"x": 2})]
    events = [
        LiveEvent(
            "message:1", "message", "t1", "", 7, False, ["main", "pm"], "invoke_request", True,
            {"en": english[0], "zh-hans": chinese[0]},
        ),
        LiveEvent(
            "config_change:9", "config_change", "", "shop", None, True, [], "", False,
            {"en": english[1], "zh-hans": chinese[1]},
        ),
    ]  # fmt: skip
    message = {"type": "live.batch", **pack(events)}
    assert isinstance(message["meta"], str)
    assert set(message["texts"]) == {"en", "zh-hans"}
    assert all(isinstance(v, str) for v in message["texts"].values())
    assert unpack(deepcopy(message)) == events
    assert unpack({"meta": "[]", "texts": ""}) == []
    with pytest.raises(ValueError):  # a language short of one text is refused, not misaligned
        unpack({**message, "texts": {**message["texts"], "zh-hans": chinese[0]}})
