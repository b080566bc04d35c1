"""Debug replay (US-08): the timeline, stepping, state at a point, snapshot diffs, the
sequence diagram, and replay of contexts from before a restart."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from monitoring.models import ExecutionContext, Message, Snapshot, Task
from monitoring.replay import build_timeline, snapshot_diff, step
from monitoring.step_labels import snapshot_words
from runs import host as host_module
from runs.tasks import start_task
from tests.helpers import wait_for_task


@pytest.fixture
def main_context(runtime_host, staff_user) -> ExecutionContext:
    task = start_task(workflow="generic", task_description="Draft the onboarding guide", user=staff_user)
    wait_for_task(runtime_host, task.id)
    return ExecutionContext.objects.get(task=task, role="main")


def logged_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_timeline_interleaves_snapshots_and_messages_in_the_order_they_happened(main_context):
    timeline = build_timeline(main_context)
    labels = [(e.kind, e.ref.trigger if e.kind == "snapshot" else e.ref.type) for e in timeline.entries]
    snapshots = [label for kind, label in labels if kind == "snapshot"]
    assert snapshots == [s.trigger for s in main_context.snapshots.order_by("sequence")]
    assert labels[0] == ("snapshot", "start") or labels[1] == ("snapshot", "start")
    before = labels.index(("snapshot", "before invoke requirement_analysis"))
    request = next(
        i
        for i, e in enumerate(timeline.entries)
        if e.kind == "message" and e.ref.type == "invoke_request" and e.ref.from_instance == main_context.instance_id
    )
    response = next(
        i for i, e in enumerate(timeline.entries) if e.kind == "message" and e.ref.type == "invoke_response"
    )
    after = labels.index(("snapshot", "after invoke requirement_analysis"))
    assert before < request < response < after
    # Exact emit order (one counter for messages and snapshots), not just time.
    order = [e.ref.event_seq for e in timeline.entries]
    assert None not in order
    assert order == sorted(order)
    assert len(set(order)) == len(order)
    answer, final = timeline.entries[-2:]
    assert (answer.kind, answer.ref.type, answer.ref.to_role) == ("message", "invoke_response", "user")
    # Issue 17: the last step is the context's final state, not the one before its last invoke.
    assert (final.kind, final.ref.trigger, final.ref.label) == ("snapshot", "completed", "final state")
    assert step(timeline, len(timeline) - 1)["state"]["progress"] == 100
    stored = Message.objects.filter(task_id=main_context.task_id).filter(
        to_instance=main_context.instance_id
    ) | Message.objects.filter(task_id=main_context.task_id, from_instance=main_context.instance_id)
    assert sum(1 for e in timeline.entries if e.kind == "message") == stored.count()


def test_each_step_shows_the_state_of_the_latest_snapshot_at_or_before_it(main_context):
    timeline = build_timeline(main_context)
    for index, entry in enumerate(timeline.entries):
        point = step(timeline, index)
        earlier = [e for e in timeline.entries[: index + 1] if e.kind == "snapshot"]
        if not earlier:
            assert point["state"] is None
            continue
        expected = Snapshot.objects.get(pk=earlier[-1].ref.pk)
        assert point["snapshot"].pk == expected.pk
        assert point["state"] == expected.state
        if entry.kind == "message":
            assert point["message"]["row"].pk == entry.ref.pk


def test_snapshot_diff_names_the_fields_that_changed(main_context):
    first, *_, last = main_context.snapshots.order_by("sequence")
    diff = snapshot_diff(first, last)
    changed = {c["path"]: c for c in diff["changes"]}
    assert changed["status"]["new"] == last.state["status"]
    assert "input_context.messages" in changed
    assert changed["input_context.messages"]["note"].startswith("+")
    assert any(kind == "add" for kind, _ in diff["lines"])
    assert any(kind == "hunk" for kind, _ in diff["lines"])
    assert snapshot_diff(first, first)["changes"] == []


def test_replay_page_steps_forward_and_back_and_jumps(main_context, staff_user):
    client = logged_in(staff_user)
    timeline = build_timeline(main_context)
    count = len(timeline)
    html = client.get(f"/replay/{main_context.id}/").content.decode()
    # Issue 17: the header said 59 steps and the stepper 58; both read Timeline.step_count.
    assert f"{count} steps:" in html
    assert f'Step <strong id="replay-index">{count}</strong> of {count}' in html
    assert f'name="step" min="1" max="{count}" value="{count}"' in html
    html = client.get(f"/replay/{main_context.id}/?at=0").content.decode()
    assert f'Step <strong id="replay-index">1</strong> of {count}' in html
    assert 'data-step="next" href="?at=1"' in html
    assert 'data-step="prev"' not in html
    html = client.get(f"/replay/{main_context.id}/?at=999999").content.decode()
    assert f'id="replay-index">{count}<' in html
    html = client.get(f"/replay/{main_context.id}/?step=2").content.decode()
    assert 'id="replay-index">2<' in html and 'aria-current="step"' in html.split('data-index="1"')[1][:80]
    bad = client.get(f"/replay/{main_context.id}/?at=two")
    assert bad.status_code == 400
    assert "at: must be a step number" in bad.content.decode()
    snapshot = main_context.snapshots.order_by("sequence")[1]
    html = client.get(f"/replay/{main_context.id}/?snapshot={snapshot.id}").content.decode()
    index = timeline.index_of("snapshot", snapshot.id)
    assert f'id="replay-index">{index + 1}<' in html
    assert snapshot.trigger in html
    missing = client.get(f"/replay/{main_context.id}/?snapshot=gone")
    assert missing.status_code == 400
    assert "not part of this context" in missing.content.decode()


def test_replay_page_compares_two_snapshots_and_refuses_foreign_ones(main_context, staff_user):
    client = logged_in(staff_user)
    first, second = main_context.snapshots.order_by("sequence")[:2]
    html = client.get(f"/replay/{main_context.id}/?a={first.id}&b={second.id}").content.decode()
    # each trigger as the page words it (monitoring.step_labels: "call X" reads "Took the call X")
    one, two = snapshot_words(first.trigger), snapshot_words(second.trigger)
    assert f"Snapshot #{first.sequence} ({one}) → #{second.sequence} ({two})" in html
    other = Snapshot.objects.exclude(context=main_context).first()
    refused = client.get(f"/replay/{main_context.id}/?a={first.id}&b={other.id}")
    assert refused.status_code == 400
    assert f"snapshot {other.id} is not part of this context" in refused.content.decode()
    half = client.get(f"/replay/{main_context.id}/?a={first.id}")
    assert half.status_code == 400
    assert "choose two snapshots" in half.content.decode()


def test_sequence_diagram_draws_the_invokes_between_instances(main_context, staff_user):
    html = logged_in(staff_user).get(f"/replay/{main_context.id}/").content.decode()
    pm = ExecutionContext.objects.get(task_id=main_context.task_id, role="pm")
    assert main_context.instance_id in html
    assert pm.instance_id in html
    svg = html[html.index('<svg class="sequence"') :]
    arrows = re.findall(r'class="arrow ([a-z ]+)"', svg)
    assert "invoke" in arrows
    assert "invoke reply" in arrows


def test_manual_snapshot_appears_in_the_timeline_with_its_label(main_context, staff_user):
    client = logged_in(staff_user)
    client.post(f"/live/contexts/{main_context.id}/snapshots", {"label": "checkpoint Z"})
    timeline = build_timeline(main_context)
    last = timeline.entries[-1]
    assert last.kind == "snapshot"
    assert last.ref.type == "manual"
    assert last.ref.label == "checkpoint Z"
    html = client.get(f"/replay/{main_context.id}/").content.decode()
    assert "checkpoint Z" in html
    assert "snap-manual" in html


def test_replay_works_for_contexts_recorded_before_a_restart(main_context, staff_user, viewer_user):
    host_module.reset_host()  # the runtime that ran it is gone
    response = logged_in(staff_user).get(f"/replay/{main_context.id}/?at=1")
    assert response.status_code == 200
    assert host_module.current_host() is None  # reading a replay never starts a runtime
    assert logged_in(viewer_user).get(f"/replay/{main_context.id}/").status_code == 404
    task = Task.objects.get(pk=main_context.task_id)
    task.created_by = viewer_user
    task.save(update_fields=["created_by"])
    assert logged_in(viewer_user).get(f"/replay/{main_context.id}/").status_code == 200
