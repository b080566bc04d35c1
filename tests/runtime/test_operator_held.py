"""An instance waiting for an operator (PRD §4.6 waiting_user) does not hold up its role:
it is not counted against ``max_concurrent_instances`` (PRD §4.7), and a request queued
behind it before it started waiting moves to another instance (recorded as moved)."""

from __future__ import annotations

import asyncio

from teamclaw.runtime import Constraints, InvokeRequest
from teamclaw.runtime.messages import DeliveryStatus
from tests.factories import small_snapshot
from tests.runtime.conftest import settle


def one_instance_team(harness_factory):
    h = harness_factory(small_snapshot(constraints=Constraints(max_retries=0, max_concurrent_instances=1)))
    gate = asyncio.Event()

    async def echo(call):
        if call.params["text"] == "ask":
            await gate.wait()  # busy, not yet waiting for anyone
            answer = await call.ask_operator(
                "interview",
                {"questions": [{"id": "q", "text": "?"}], "answer_schema": {"type": "object"}},
                timeout_s=3600,
                question="Answer q",
            )
            return {"text": answer.values["answers"]["q"] if answer else "none"}
        return {"text": call.params["text"]}

    h.handle("echo", echo)
    return h, gate


async def test_a_request_queued_behind_an_instance_that_starts_waiting_for_an_operator_moves(harness_factory):
    h, gate = one_instance_team(harness_factory)
    asking = asyncio.create_task(h.runtime.invoke(InvokeRequest("echo", {"text": "ask"}), from_role="a"))
    await settle()
    # The only instance of b (limit 1) is busy: the next request is queued behind it.
    other = asyncio.create_task(h.runtime.invoke(InvokeRequest("echo", {"text": "hello"}), from_role="a"))
    await settle()
    assert not other.done()
    gate.set()  # the busy instance now waits for an operator (for an hour, say)
    result = await asyncio.wait_for(other, 5)
    assert result.success and result.data == {"text": "hello"}
    held = next(i for i in h.runtime.instances.values() if i.waiting_operator)
    assert result.from_instance != held.instance_id
    moved = [e for e in h.sink.events if getattr(e, "status", None) == DeliveryStatus.EXPIRED]
    assert moved and "waits for an operator" in moved[0].reason
    [confirmation] = h.runtime.confirmations.values()
    h.runtime.resolve_confirmation(confirmation.id, True, "ops", {"answers": {"q": "yes"}})
    assert (await asyncio.wait_for(asking, 5)).data == {"text": "yes"}


async def test_new_requests_get_a_new_instance_while_the_others_wait_for_operators(harness_factory):
    h, gate = one_instance_team(harness_factory)
    gate.set()
    asking = [
        asyncio.create_task(h.runtime.invoke(InvokeRequest("echo", {"text": "ask"}), from_role="a")) for _ in range(3)
    ]
    await settle()
    result = await asyncio.wait_for(h.runtime.invoke(InvokeRequest("echo", {"text": "hi"}), from_role="a"), 5)
    assert result.success
    assert len(h.runtime.confirmations) == 3  # each waiting one sits on an instance of its own
    for confirmation in list(h.runtime.confirmations.values()):
        h.runtime.resolve_confirmation(confirmation.id, True, "ops", {"answers": {"q": "ok"}})
    assert [r.data for r in await asyncio.gather(*asking)] == [{"text": "ok"}] * 3
