"""hook (PRD §4.3/§4.4): hook_event, hook_ack on enqueue, status_update, subscriptions."""

from __future__ import annotations

from teamclaw.runtime import EventSubscription, HookEvent, MessageType
from tests.factories import builtin_snapshot, echo_card, small_snapshot
from tests.runtime.conftest import settle


async def test_a_hook_to_named_roles_is_acked_on_enqueue_then_answered_with_a_status_update(harness_factory):
    h = harness_factory(builtin_snapshot())
    acks = await h.runtime.hook(
        HookEvent("code_completed", {"files": ["app.py"]}, target_roles=["devops"]), from_role="coderA"
    )
    [ack] = acks
    assert ack.role == "devops"
    assert ack.status == "received"
    await settle()
    types = [m.type for m, _ in h.messages()]
    assert types.count(MessageType.HOOK_EVENT) == 1
    assert types.count(MessageType.HOOK_ACK) == 1
    assert MessageType.STATUS_UPDATE in types


async def test_hooks_are_not_governed_by_the_invoke_matrix(harness_factory):
    h = harness_factory(builtin_snapshot())
    assert not h.runtime.config.cached[None].can_invoke("dba", "devops")
    acks = await h.runtime.hook(HookEvent("schema_changed", target_roles=["devops"]), from_role="dba")
    assert [a.status for a in acks] == ["received"]


async def test_broadcast_reaches_only_matching_subscriptions(harness_factory):
    h = harness_factory(small_snapshot(roles=["a", "b", "c"]))
    b = h.runtime.spawn("b")
    c = h.runtime.spawn("c")
    h.runtime.subscribe(EventSubscription(b.instance_id, ("code_completed",)))
    h.runtime.subscribe(EventSubscription(c.instance_id, ("hook_event",), from_roles=("x",)))
    acks = await h.runtime.hook(HookEvent("code_completed", broadcast=True), from_role="a")
    assert [a.instance_id for a in acks] == [b.instance_id]
    acks = await h.runtime.hook(HookEvent("anything", broadcast=True), from_role="x")
    assert [a.instance_id for a in acks] == [c.instance_id]
    assert await h.runtime.hook(HookEvent("other", broadcast=True), from_role="a") == []


async def test_a_subscription_can_filter_by_task(harness_factory):
    h = harness_factory(small_snapshot())
    b = h.runtime.spawn("b")
    task = await h.runtime.begin_task(entry_role="a")
    h.runtime.subscribe(EventSubscription(b.instance_id, ("hook_event",), task_ids=(task.task_id,)))
    assert len(await h.runtime.hook(HookEvent("e", broadcast=True), from_role="a", task_id=task.task_id)) == 1
    assert await h.runtime.hook(HookEvent("e", broadcast=True), from_role="a") == []


async def test_a_hook_with_a_capability_runs_it_and_reports_the_result(harness_factory):
    h = harness_factory(small_snapshot(cards=[echo_card()]))

    async def echo(call):
        return {"text": call.params["text"].upper()}

    h.handle("echo", echo)
    await h.runtime.hook(HookEvent("please", {"text": "ship"}, target_roles=["b"], capability_id="echo"), from_role="a")
    await settle()
    [update] = [m for m, _ in h.messages() if m.type == MessageType.STATUS_UPDATE]
    assert update.payload["status"] == "completed"
    assert update.payload["result"] == {"text": "SHIP"}


async def test_a_hook_with_bad_params_reports_failure_in_its_status_update(harness_factory):
    h = harness_factory(small_snapshot(cards=[echo_card()]))
    await h.runtime.hook(HookEvent("please", {"text": 1}, target_roles=["b"], capability_id="echo"), from_role="a")
    await settle()
    [update] = [m for m, _ in h.messages() if m.type == MessageType.STATUS_UPDATE]
    assert update.payload["status"] == "failed"
    assert update.payload["error"]["code"] == "invalid_params"
    assert update.payload["error"]["message"] == "hook payload does not match the input schema"
    assert update.payload["error"]["details"]["errors"][0]["pointer"] == "/text"


async def test_a_hooked_result_off_the_output_schema_is_output_invalid(harness_factory):
    h = harness_factory(small_snapshot(cards=[echo_card()]))

    async def wrong(call):
        return {"text": 5}

    h.handle("echo", wrong)
    await h.runtime.hook(HookEvent("please", {"text": "ship"}, target_roles=["b"], capability_id="echo"), from_role="a")
    await settle()
    [update] = [m for m, _ in h.messages() if m.type == MessageType.STATUS_UPDATE]
    assert update.payload["status"] == "failed"
    assert update.payload["error"]["code"] == "output_invalid"
    assert update.payload["error"]["message"] == "hook result does not match the output schema"


async def test_a_hook_naming_a_capability_obeys_the_invoke_matrix(harness_factory):
    h = harness_factory(builtin_snapshot())
    event = HookEvent(
        "please_destroy",
        {"environment": "production", "action": "destroy"},
        target_roles=["devops"],
        capability_id="environment_management",
    )
    [ack] = await h.runtime.hook(event, from_role="dba")  # dba may invoke nobody (PRD §4.7)
    assert ack.status == "rejected"
    assert ack.reason == "permission_denied"
    await settle()
    assert not [m for m, _ in h.messages() if m.type == MessageType.STATUS_UPDATE]
    [(_, status)] = [(m, s) for m, s in h.messages() if m.type == MessageType.HOOK_EVENT]
    assert status == "denied"
    [ok] = await h.runtime.hook(event, from_role="main")
    assert ok.status == "received"


async def test_a_hooked_capability_is_bounded_by_its_timeout(harness_factory):
    import asyncio

    h = harness_factory(small_snapshot(cards=[echo_card(timeout_s=5)]))

    async def hang(call):
        await asyncio.Event().wait()

    h.handle("echo", hang)
    await h.runtime.hook(HookEvent("go", {"text": "x"}, target_roles=["b"], capability_id="echo"), from_role="a")
    await h.advance(6)
    [update] = [m for m, _ in h.messages() if m.type == MessageType.STATUS_UPDATE]
    assert update.payload["status"] == "failed"
    assert update.payload["error"]["code"] == "timeout"
