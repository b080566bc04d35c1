"""Hot reload (PRD §4.8): a change bumps the version; new tasks use it; a task in flight keeps its config."""

from __future__ import annotations

import asyncio

from teamclaw.runtime import ErrorCode, EventKind, InvokeRequest, ManualClock, Runtime
from tests.factories import small_snapshot


async def test_a_task_in_flight_keeps_its_snapshot_and_the_next_task_uses_the_new_one():
    versions = {1: small_snapshot(version=1), 2: small_snapshot(version=2, allowed=[])}
    current = {"version": 1}
    loads = []

    def source(project_id):
        loads.append(current["version"])
        return versions[current["version"]]

    runtime = Runtime(config_source=source, clock=ManualClock())
    try:
        old_task = await runtime.begin_task(entry_role="a")
        current["version"] = 2
        runtime.apply_config_change(
            {
                "config_type": "permission",
                "role": "a",
                "old_version": "1",
                "new_version": "2",
                "changed_fields": ["invoke_matrix"],
            }
        )
        inside = await runtime.invoke(InvokeRequest("echo", {"text": "x"}), from_role="a", task_id=old_task.task_id)
        assert inside.success
        assert old_task.snapshot.version == 1
        after = await runtime.invoke(InvokeRequest("echo", {"text": "x"}), from_role="a")
        assert after.error.code == ErrorCode.PERMISSION_DENIED
        assert loads == [1, 2]  # loaded once per version, not per call
    finally:
        await runtime.stop()


async def test_config_change_events_are_published_to_sinks():
    from teamclaw.runtime import CollectingSink

    sink = CollectingSink()
    runtime = Runtime(snapshot=small_snapshot(), sinks=[sink])
    runtime.apply_config_change(
        {"config_type": "prompt", "role": "a", "new_version": "7", "old_version": "6", "changed_fields": ["content"]}
    )
    [event] = sink.of(EventKind.CONFIG_CHANGE)
    assert event.change["new_version"] == "7"
    assert runtime.latest_version == 7
    await asyncio.sleep(0)
