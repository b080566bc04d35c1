"""invoke (PRD §4.4; DESIGN.md §4): policy order, schemas, errors, timeouts, retries, cycles."""

from __future__ import annotations

import asyncio
import itertools

from teamclaw.runtime import (
    AgentFailure,
    CapabilityType,
    CardSpec,
    Constraints,
    ContextStatus,
    ErrorCode,
    InvokeRequest,
    Priority,
    RoleSpec,
    TaskStatus,
)
from teamclaw.runtime.config import ConfigSnapshot
from tests.factories import builtin_snapshot, echo_card, object_schema, small_snapshot
from tests.runtime.conftest import settle


async def echo(call):
    return {"text": call.params["text"]}


async def test_a_permitted_invoke_returns_the_result_latency_and_instance(harness_factory):
    h = harness_factory(small_snapshot())
    h.handle("echo", echo)
    result = await h.runtime.invoke(InvokeRequest("echo", {"text": "hi"}), from_role="a")
    assert result.success
    assert result.data == {"text": "hi"}
    assert result.error is None
    assert result.from_instance.startswith("b-")
    assert result.latency_ms > 0
    assert result.attempts == 1
    kinds = [(m.type.value, s) for m, s in h.messages()]
    assert ("invoke_request", "delivered") in kinds
    assert ("invoke_response", "delivered") in kinds


async def test_a_denied_invoke_never_reaches_a_mailbox(harness_factory):
    h = harness_factory(small_snapshot(allowed=[]))
    h.handle("echo", echo)
    result = await h.runtime.invoke(InvokeRequest("echo", {"text": "hi"}), from_role="a")
    assert not result.success
    assert result.error.code == ErrorCode.PERMISSION_DENIED
    assert h.runtime.instances == {}  # nothing was spawned, nothing was queued
    [(message, status)] = h.messages()
    assert status == "denied"
    assert message.payload["error"]["code"] == "permission_denied"


async def test_the_builtin_matrix_governs_the_prd_example(harness_factory):
    h = harness_factory(builtin_snapshot())
    ok = await h.runtime.invoke(
        InvokeRequest("schema_query", {"table": "users"}, target_role="dba"), from_role="coderA"
    )
    assert ok.success
    assert ok.data["columns"]
    denied = await h.runtime.invoke(
        InvokeRequest("deployment_config", {"service": "web", "environment": "staging"}, target_role="devops"),
        from_role="coderA",
    )
    assert denied.error.code == ErrorCode.PERMISSION_DENIED


async def test_unknown_capability_or_a_target_that_does_not_own_it_is_capability_not_found(harness_factory):
    h = harness_factory(small_snapshot(allowed=[("a", "b"), ("a", "a")]))
    missing = await h.runtime.invoke(InvokeRequest("nope", {}), from_role="a")
    assert missing.error.code == ErrorCode.CAPABILITY_NOT_FOUND
    not_owner = await h.runtime.invoke(InvokeRequest("echo", {"text": "x"}, target_role="a"), from_role="a")
    assert not_owner.error.code == ErrorCode.CAPABILITY_NOT_FOUND
    assert "does not offer" in not_owner.error.message
    bad_address = await h.runtime.invoke(InvokeRequest("cap://x", {}), from_role="a")
    assert bad_address.error.code == ErrorCode.CAPABILITY_NOT_FOUND


async def test_disabled_card_or_role_is_capability_disabled(harness_factory):
    disabled_card = small_snapshot(cards=[echo_card(enabled=False)])
    h = harness_factory(disabled_card)
    result = await h.runtime.invoke(InvokeRequest("echo", {"text": "x"}), from_role="a")
    assert result.error.code == ErrorCode.CAPABILITY_DISABLED
    snapshot = small_snapshot()
    roles = [RoleSpec("a", "A"), RoleSpec("b", "B", enabled=False)]
    h2 = harness_factory(
        ConfigSnapshot.build(
            version=1, roles=roles, cards=snapshot.cards.values(), invoke_allowed=snapshot.invoke_allowed, tool_modes={}
        )
    )
    result = await h2.runtime.invoke(InvokeRequest("echo", {"text": "x"}), from_role="a")
    assert result.error.code == ErrorCode.CAPABILITY_DISABLED
    assert "role b is disabled" in result.error.message


async def test_invalid_params_name_the_json_pointer_and_are_not_retried(harness_factory):
    h = harness_factory(small_snapshot())
    result = await h.runtime.invoke(InvokeRequest("echo", {"text": 5}), from_role="a")
    assert result.error.code == ErrorCode.INVALID_PARAMS
    assert result.attempts == 1
    assert result.error.details["errors"][0]["pointer"] == "/text"
    missing = await h.runtime.invoke(InvokeRequest("echo", {}), from_role="a")
    assert missing.error.details["errors"][0]["keyword"] == "required"


async def test_format_is_enforced(harness_factory):
    schema = object_schema(to={"type": "string", "format": "email"})
    mail = CardSpec(
        "mail", "Mail", "d", "communication", schema, object_schema(ok={"type": "boolean"}), "1.0.0", ("b",)
    )
    h = harness_factory(small_snapshot(cards=[mail]))
    result = await h.runtime.invoke(InvokeRequest("mail", {"to": "not an address"}), from_role="a")
    assert result.error.code == ErrorCode.INVALID_PARAMS
    assert result.error.details["errors"][0]["keyword"] == "format"
    ok = await h.runtime.invoke(InvokeRequest("mail", {"to": "ops@example.com"}), from_role="a")
    assert ok.success


async def test_a_result_that_breaks_the_output_schema_is_output_invalid(harness_factory):
    h = harness_factory(small_snapshot())

    async def wrong(call):
        return {"text": 42}

    h.handle("echo", wrong)
    result = await h.runtime.invoke(InvokeRequest("echo", {"text": "x"}), from_role="a")
    assert result.error.code == ErrorCode.OUTPUT_INVALID
    assert result.attempts == 1
    assert result.error.details["errors"][0]["pointer"] == "/text"


async def test_validators_are_compiled_once_per_card_version(harness_factory):
    h = harness_factory(small_snapshot())
    h.handle("echo", echo)
    for _ in range(5):
        await h.runtime.invoke(InvokeRequest("echo", {"text": "x"}), from_role="a")
    assert len(h.runtime.validators) == 1


async def test_an_executor_crash_becomes_executor_error_after_the_retries(harness_factory):
    h = harness_factory(small_snapshot(), backoff_base_s=0.5)
    calls = []

    async def crash(call):
        calls.append(h.clock.now())
        raise RuntimeError("boom")

    h.handle("echo", crash)
    task = asyncio.create_task(h.runtime.invoke(InvokeRequest("echo", {"text": "x"}), from_role="a"))
    await h.advance(10, step=0.25)
    result = await task
    assert result.error.code == ErrorCode.EXECUTOR_ERROR
    assert "boom" in result.error.message
    assert result.attempts == 4
    assert len(calls) == 4  # 1 try + 3 retries (PRD §4.7 default)
    gaps = [round(b - a, 2) for a, b in itertools.pairwise(calls)]
    assert gaps == sorted(gaps)
    assert gaps[0] >= 0.5  # exponential backoff


async def test_retries_follow_the_role_constraint(harness_factory):
    h = harness_factory(small_snapshot(constraints=Constraints(max_retries=1)), backoff_base_s=0.01)

    async def crash(call):
        raise RuntimeError("boom")

    h.handle("echo", crash)
    task = asyncio.create_task(h.runtime.invoke(InvokeRequest("echo", {"text": "x"}), from_role="a"))
    await h.advance(1, step=0.05)
    assert (await task).attempts == 2


async def test_an_agent_failure_keeps_its_code_and_is_not_retried_unless_retryable(harness_factory):
    h = harness_factory(small_snapshot())

    async def refuse(call):
        raise AgentFailure(ErrorCode.BUDGET_EXCEEDED, "spent", {"tokens_used": 9})

    h.handle("echo", refuse)
    result = await h.runtime.invoke(InvokeRequest("echo", {"text": "x"}), from_role="a")
    assert result.error.code == ErrorCode.BUDGET_EXCEEDED
    assert result.attempts == 1


async def test_timeout_defaults_to_60_s_and_the_hung_executor_is_cancelled(harness_factory):
    h = harness_factory(small_snapshot(constraints=Constraints(max_retries=0)))
    cancelled = []

    async def hang(call):
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.append(True)
            raise

    h.handle("echo", hang)
    task = asyncio.create_task(h.runtime.invoke(InvokeRequest("echo", {"text": "x"}), from_role="a"))
    await h.advance(59)
    assert not task.done()
    await h.advance(2)
    result = await task
    assert result.error.code == ErrorCode.TIMEOUT
    assert "60 s" in result.error.message
    assert cancelled == [True]
    # the instance survived and serves the next call
    h.handle("echo", echo)
    assert (await h.runtime.invoke(InvokeRequest("echo", {"text": "again"}), from_role="a")).success


async def test_card_and_request_timeouts_lower_the_limit(harness_factory):
    h = harness_factory(small_snapshot(cards=[echo_card(timeout_s=5)], constraints=Constraints(max_retries=0)))

    async def hang(call):
        await asyncio.Event().wait()

    h.handle("echo", hang)
    task = asyncio.create_task(h.runtime.invoke(InvokeRequest("echo", {"text": "x"}), from_role="a"))
    await h.advance(6)
    assert (await task).error.details["timeout_s"] == 5
    task = asyncio.create_task(h.runtime.invoke(InvokeRequest("echo", {"text": "x"}, timeout=2), from_role="a"))
    await h.advance(3)
    assert (await task).error.details["timeout_s"] == 2
    task = asyncio.create_task(h.runtime.invoke(InvokeRequest("echo", {"text": "x"}, timeout=500), from_role="a"))
    await h.advance(6)
    assert (await task).error.details["timeout_s"] == 5  # a request cannot raise the card's limit


async def test_timeouts_are_retried(harness_factory):
    h = harness_factory(small_snapshot(cards=[echo_card(timeout_s=1)]), backoff_base_s=0.01)
    attempts = []

    async def slow_once(call):
        attempts.append(call.message.payload["attempt"])
        if len(attempts) == 1:
            await asyncio.Event().wait()
        return {"text": "late but fine"}

    h.handle("echo", slow_once)
    task = asyncio.create_task(h.runtime.invoke(InvokeRequest("echo", {"text": "x"}), from_role="a"))
    await h.advance(3, step=0.1)
    result = await task
    assert result.success
    assert result.attempts == 2
    assert attempts == [1, 2]


async def test_an_agent_invoking_its_own_instance_fails_fast_instead_of_deadlocking(harness_factory):
    snapshot = small_snapshot(allowed=[("a", "b"), ("b", "b")])
    h = harness_factory(snapshot)
    seen = {}

    async def recurse(call):
        if call.params["text"] == "outer":
            inner = await call.invoke("echo", {"text": "inner"}, target_instance_id=call.instance.instance_id)
            seen["inner"] = inner
            return {"text": "outer done"}
        return {"text": "inner done"}

    h.handle("echo", recurse)
    result = await asyncio.wait_for(h.runtime.invoke(InvokeRequest("echo", {"text": "outer"}), from_role="a"), 5)
    assert result.success
    assert seen["inner"].error.code == ErrorCode.UNAVAILABLE
    assert seen["inner"].error.details["reason"] == "deadlock"
    assert seen["inner"].attempts == 1


async def test_a_cycle_a_b_a_does_not_deadlock(harness_factory):
    ping = echo_card("ping", owners=("a",))
    pong = echo_card("pong", owners=("b",))
    h = harness_factory(
        small_snapshot(
            cards=[ping, pong],
            allowed=[("a", "b"), ("b", "a"), ("user", "a")],
            constraints=Constraints(max_concurrent_instances=1),
        )
    )
    results = {}

    async def ping_handler(call):
        if call.params["text"] == "start":
            results["pong"] = await call.invoke("pong", {"text": "go"}, target_role="b")
        return {"text": "ping"}

    async def pong_handler(call):
        results["ping"] = await call.invoke("ping", {"text": "back"}, target_role="a")
        return {"text": "pong"}

    h.handle("ping", ping_handler)
    h.handle("pong", pong_handler)
    result = await asyncio.wait_for(h.runtime.invoke(InvokeRequest("ping", {"text": "start"}), from_role="user"), 5)
    assert result.success
    assert results["ping"].error.code == ErrorCode.UNAVAILABLE  # a's only instance waits on b: refused at once


async def test_by_role_self_invoke_spawns_another_instance(harness_factory):
    h = harness_factory(small_snapshot(allowed=[("a", "b"), ("b", "b")]))

    async def recurse(call):
        if call.params["text"] == "outer":
            inner = await call.invoke("echo", {"text": "inner"}, target_role="b")
            return {"text": f"outer+{inner.data['text']}"}
        return {"text": "inner"}

    h.handle("echo", recurse)
    result = await h.runtime.invoke(InvokeRequest("echo", {"text": "outer"}), from_role="a")
    assert result.data == {"text": "outer+inner"}
    assert len(h.runtime.pool.alive("b")) == 2


async def test_address_invocation_uses_query_parameters_as_default_params(harness_factory):
    card = echo_card(address="cap://echo-skill/echo", skill_id="echo-skill")
    h = harness_factory(small_snapshot(cards=[card]))
    h.handle("echo", echo)
    result = await h.runtime.invoke(InvokeRequest("cap://echo-skill/echo?text=from-query", {}), from_role="a")
    assert result.data == {"text": "from-query"}
    override = await h.runtime.invoke(InvokeRequest("cap://echo-skill/echo?text=q", {"text": "body"}), from_role="a")
    assert override.data == {"text": "body"}
    unknown = await h.runtime.invoke(InvokeRequest("cap://echo-skill/other", {}), from_role="a")
    assert unknown.error.code == ErrorCode.CAPABILITY_NOT_FOUND


async def test_internal_capabilities_are_invokable_only_from_their_own_skill(harness_factory):
    internal = echo_card("secret", skill_id="hr", capability_type=CapabilityType.INTERNAL)
    entry = echo_card("front", skill_id="hr", capability_type=CapabilityType.ENTRY)
    outsider = echo_card("outsider", skill_id="other")
    h = harness_factory(small_snapshot(cards=[internal, entry, outsider], allowed=[("a", "b"), ("b", "b")]))
    seen = {}

    async def call_secret(call):
        seen[call.card.capability_id] = await call.invoke("secret", {"text": "x"}, target_role="b")
        return {"text": "done"}

    h.handle("front", call_secret)
    h.handle("outsider", call_secret)
    h.handle("secret", echo)
    direct = await h.runtime.invoke(InvokeRequest("secret", {"text": "x"}), from_role="a")
    assert direct.error.code == ErrorCode.PERMISSION_DENIED
    assert "INTERNAL" in direct.error.message
    await h.runtime.invoke(InvokeRequest("front", {"text": "x"}), from_role="a")
    await h.runtime.invoke(InvokeRequest("outsider", {"text": "x"}), from_role="a")
    assert seen["front"].success
    assert seen["outsider"].error.code == ErrorCode.PERMISSION_DENIED


async def test_a_full_mailbox_refuses_with_queue_full(harness_factory):
    h = harness_factory(
        small_snapshot(constraints=Constraints(max_concurrent_instances=1, max_retries=0)), mailbox_capacity=1
    )
    gate = asyncio.Event()

    async def wait_gate(call):
        await gate.wait()
        return {"text": call.params["text"]}

    h.handle("echo", wait_gate)
    first = asyncio.create_task(h.runtime.invoke(InvokeRequest("echo", {"text": "1"}), from_role="a"))
    await settle()
    second = asyncio.create_task(h.runtime.invoke(InvokeRequest("echo", {"text": "2"}), from_role="a"))
    await settle()
    third = await h.runtime.invoke(InvokeRequest("echo", {"text": "3"}), from_role="a")
    assert third.error.code == ErrorCode.QUEUE_FULL
    urgent = asyncio.create_task(
        h.runtime.invoke(InvokeRequest("echo", {"text": "4"}, priority=Priority.URGENT), from_role="a")
    )
    await settle()
    gate.set()
    assert (await first).success
    evicted = await second
    assert evicted.error.code == ErrorCode.QUEUE_FULL
    assert "evicted" in evicted.error.message
    assert (await urgent).data == {"text": "4"}
    alerts = [e.alert_kind for e in h.sink.events if e.kind == "alert"]
    assert "queue_full" in alerts
    assert "queue_drop" in alerts


async def test_contexts_are_per_instance_and_task_and_finish_with_the_task(harness_factory):
    h = harness_factory(small_snapshot())
    h.handle("echo", echo)
    task = await h.runtime.begin_task(entry_role="a")
    for text in ("1", "2"):
        await h.runtime.invoke(InvokeRequest("echo", {"text": text}), from_role="a", task_id=task.task_id)
    [context] = task.contexts.values()
    assert context.status == ContextStatus.READY
    assert len(context.messages) == 4
    h.runtime.end_task(task.task_id, TaskStatus.COMPLETED)
    assert context.status == ContextStatus.COMPLETED
    assert context.progress == 100


async def test_a_skill_may_call_its_own_internal_capability_without_a_matrix_cell(harness_factory):
    internal = echo_card("secret", skill_id="hr", capability_type=CapabilityType.INTERNAL)
    entry = echo_card("front", skill_id="hr", capability_type=CapabilityType.ENTRY)
    h = harness_factory(small_snapshot(cards=[internal, entry], allowed=[("a", "b")]))  # no b -> b cell
    seen = {}

    async def call_secret(call):
        seen["inner"] = await call.invoke("secret", {"text": "x"}, target_role="b")
        return {"text": "done"}

    h.handle("front", call_secret)
    h.handle("secret", echo)
    assert (await h.runtime.invoke(InvokeRequest("front", {"text": "x"}), from_role="a")).success
    assert seen["inner"].success


async def test_a_request_that_expired_in_the_queue_says_so_keeping_the_timeout_code(harness_factory):
    h = harness_factory(
        small_snapshot(
            cards=[echo_card(timeout_s=30)], constraints=Constraints(max_concurrent_instances=1, max_retries=0)
        )
    )
    gate = asyncio.Event()

    async def wait_gate(call):
        await gate.wait()
        return {"text": call.params["text"]}

    h.handle("echo", wait_gate)
    busy = asyncio.create_task(h.runtime.invoke(InvokeRequest("echo", {"text": "1"}, timeout=30), from_role="a"))
    await settle()
    queued = asyncio.create_task(h.runtime.invoke(InvokeRequest("echo", {"text": "2"}, timeout=5), from_role="a"))
    await h.advance(6)
    result = await queued
    assert result.error.code == ErrorCode.TIMEOUT
    assert result.error.details.get("reason") == "expired_in_queue", result.error
    assert "expired in the queue" in result.error.message
    assert "5 s" in result.error.message
    gate.set()
    assert (await busy).success


async def test_a_request_that_timed_out_while_running_is_no_queue_expiry(harness_factory):
    h = harness_factory(small_snapshot(cards=[echo_card(timeout_s=5)], constraints=Constraints(max_retries=0)))

    async def hang(call):
        await asyncio.Event().wait()

    h.handle("echo", hang)
    task = asyncio.create_task(h.runtime.invoke(InvokeRequest("echo", {"text": "x"}), from_role="a"))
    await h.advance(6)
    result = await task
    assert result.error.code == ErrorCode.TIMEOUT
    assert "reason" not in result.error.details


async def test_a_card_that_is_not_idempotent_is_not_run_again_after_timing_out_while_running(harness_factory):
    h = harness_factory(small_snapshot(cards=[echo_card(timeout_s=1, idempotent=False)]), backoff_base_s=0.01)
    attempts = []

    async def slow(call):
        attempts.append(call.message.payload["attempt"])
        await asyncio.Event().wait()

    h.handle("echo", slow)
    task = asyncio.create_task(h.runtime.invoke(InvokeRequest("echo", {"text": "x"}), from_role="a"))
    await h.advance(5, step=0.1)
    result = await task
    assert result.error.code == ErrorCode.TIMEOUT
    assert result.attempts == 1
    assert attempts == [1]
