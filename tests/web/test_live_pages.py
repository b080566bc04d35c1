"""The live page, message log, context inspector and operator actions as server-rendered
pages (PRD §4.6, US-04, US-05)."""

from __future__ import annotations

import pytest
from django.test import Client

from monitoring.models import ExecutionContext, Message, Snapshot, Task, ToolConfirmation
from runs.tasks import start_task
from tests.helpers import wait_for_task
from tests.live_helpers import start_deploying_task, wait_for_confirmation


def login(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def finished_task(runtime_host, staff_user) -> Task:
    task = start_task(workflow="generic", task_description="Outline the release notes", user=staff_user)
    return wait_for_task(runtime_host, task.id)


def make_messages(task: Task, count: int, *, start_seq: int = 1) -> list[Message]:
    rows = [
        Message(
            id=f"m{task.id[:6]}{i:08d}",
            seq=start_seq + i,
            type="invoke_request" if i % 2 else "status_update",
            from_role="main" if i % 3 else "pm",
            to_role="dba",
            task_id=task.id,
            payload={"capability_id": "schema_query", "params": {"table": f"t{i}"}},
            capability_id="schema_query",
            priority="normal",
            ttl_ms=60000,
            timestamp_ms=1_700_000_000_000 + i,
            status="delivered",
        )
        for i in range(count)
    ]
    Message.objects.bulk_create(rows)
    return rows


def test_live_page_needs_a_login_and_shows_empty_states(client, builtin, staff_user):
    response = client.get("/live/")
    assert response.status_code == 302
    assert response["Location"].startswith("/login/")
    html = login(staff_user).get("/live/").content.decode()
    assert "No task is running" in html
    assert "No agent has worked" in html
    assert "No tool use is waiting" in html
    assert 'data-live-socket="/ws/live/"' in html
    assert "teamclaw/live.js" in html
    assert "cdn" not in html.lower()


def test_live_page_shows_cards_log_and_graph_of_a_finished_task(finished_task, staff_user):
    html = login(staff_user).get("/live/").content.decode()
    for context in finished_task.contexts.all():
        assert f'id="ctx-{context.id}"' in html
    newest = Message.objects.filter(task_id=finished_task.id).order_by("-seq").first()
    assert f'id="msg-{newest.id}"' in html
    assert 'data-from="main" data-to="pm" data-kind="invoke"' in html


def test_filters_are_checked_and_narrow_the_page(finished_task, staff_user):
    client = login(staff_user)
    bad = client.get("/live/?type=gossip&role=%3Cb%3E")
    assert bad.status_code == 400
    text = bad.content.decode()
    assert "type: unknown message type" in text
    assert "role: a role is a letter" in text
    html = client.get(f"/live/?role=pm&task={finished_task.id}").content.decode()
    pm = finished_task.contexts.get(role="pm")
    main = finished_task.contexts.get(role="main")
    assert f'id="ctx-{pm.id}"' in html
    assert f'id="ctx-{main.id}"' not in html
    assert f"/ws/live/?role=pm&amp;task={finished_task.id}" in html
    rows = Message.objects.filter(task_id=finished_task.id)
    for message in rows:
        involved = "pm" in (message.from_role, message.to_role)
        assert (f'id="msg-{message.id}"' in html) == involved


def test_message_log_pages_backwards_by_sequence(finished_task, staff_user):
    make_messages(finished_task, 120, start_seq=10_000)
    client = login(staff_user)
    first = client.get(f"/live/log/?task={finished_task.id}&type=invoke_request").content.decode()
    expected = list(
        Message.objects.filter(task_id=finished_task.id, type="invoke_request")
        .order_by("-seq")
        .values_list("id", "seq")
    )
    shown = [mid for mid, _ in expected if f'id="msg-{mid}"' in first]
    assert shown == [mid for mid, _ in expected[:50]]
    before = expected[49][1]
    assert f"before={before}" in first
    second = client.get(f"/live/log/?task={finished_task.id}&type=invoke_request&before={before}").content.decode()
    assert [mid for mid, _ in expected if f'id="msg-{mid}"' in second] == [mid for mid, _ in expected[50:100]]
    assert client.get("/live/log/?before=abc").status_code == 400
    assert client.get("/live/log/?before=99999999999999999999").status_code == 400  # past a database integer


def test_inspector_shows_the_context_and_hides_other_users_tasks(finished_task, staff_user, viewer_user):
    context = finished_task.contexts.get(role="pm")
    html = login(staff_user).get(f"/live/contexts/{context.id}/").content.decode()
    assert "Input artifacts" in html
    assert "Generated artifacts" in html
    assert "Pending questions" in html
    assert f'id="snapshots-{context.id}"' in html
    assert "start" in html
    assert "Take a manual snapshot" in html
    assert "instructions go to running agents" in html  # finished: no instruction box
    part = login(staff_user).get(f"/live/contexts/{context.id}/?part=state", HTTP_HX_REQUEST="true").content.decode()
    assert part.lstrip().startswith('<div id="inspector-state"')
    assert login(viewer_user).get(f"/live/contexts/{context.id}/").status_code == 404
    assert login(viewer_user).get(f"/tasks/{finished_task.id}/").status_code == 404
    assert finished_task.title not in login(viewer_user).get("/tasks/").content.decode()


def test_manual_snapshot_of_a_finished_context_comes_from_the_database(finished_task, staff_user, viewer_user):
    context = finished_task.contexts.get(role="main")
    before = context.snapshots.count()
    response = login(staff_user).post(f"/live/contexts/{context.id}/snapshots", {"label": "after the release"})
    assert response.status_code == 200
    assert "Manual snapshot" in response.content.decode()
    snapshot = context.snapshots.order_by("-sequence").first()
    assert context.snapshots.count() == before + 1
    assert (snapshot.type, snapshot.trigger, snapshot.label) == ("manual", "manual", "after the release")
    assert snapshot.state["status"] == "completed"
    assert snapshot.state["id"] == context.id
    too_long = login(staff_user).post(f"/live/contexts/{context.id}/snapshots", {"label": "x" * 301})
    assert too_long.status_code == 400
    assert "label" in too_long.content.decode()
    assert login(viewer_user).post(f"/live/contexts/{context.id}/snapshots", {"label": "x"}).status_code == 404
    assert context.snapshots.count() == before + 1


def test_instructions_go_only_to_running_agents(finished_task, staff_user):
    context = finished_task.contexts.get(role="main")
    client = login(staff_user)
    response = client.post(f"/live/contexts/{context.id}/instructions", {"text": "hurry"})
    assert response.status_code == 409
    assert "running agents" in response.content.decode()
    blank = client.post(f"/live/contexts/{context.id}/instructions", {"text": "   "})
    assert blank.status_code == 400
    assert "Write the instruction first." in blank.content.decode()


def test_an_operator_instructs_a_waiting_agent_and_approves_its_tool(runtime_host, staff_user):
    task = start_deploying_task(runtime_host, staff_user)
    confirmation = wait_for_confirmation(runtime_host, task.id)
    context = ExecutionContext.objects.get(pk=confirmation.context_id)
    assert context.status == "waiting_user"
    client = login(staff_user)
    html = client.get(f"/live/contexts/{context.id}/").content.decode()
    assert "Send an instruction to this agent" in html
    assert f'id="confirmation-{confirmation.id}"' in html

    response = client.post(f"/live/contexts/{context.id}/instructions", {"text": "Deploy only the API"})
    assert response.status_code == 200, response.content
    context.refresh_from_db()
    assert context.input_context["user_instructions"] == ["Deploy only the API"]
    snapshot = Snapshot.objects.filter(context=context, trigger="user_instruction").get()
    assert snapshot.label == "Deploy only the API"
    assert Message.objects.filter(task_id=task.id, type="context_sync", to_instance=context.instance_id).exists()

    manual = client.post(f"/live/contexts/{context.id}/snapshots", {"label": "before approving"})
    assert manual.status_code == 200
    assert Snapshot.objects.filter(context=context, type="manual", label="before approving").exists()

    assert client.post(f"/live/confirmations/{confirmation.id}", {"approve": "maybe"}).status_code == 400
    approved = client.post(f"/live/confirmations/{confirmation.id}", {"approve": "true"})
    assert approved.status_code == 200
    assert "approved" in approved.content.decode()
    assert wait_for_task(runtime_host, task.id).status == "completed"
    confirmation.refresh_from_db()
    assert (confirmation.status, confirmation.decided_by) == ("approved", "operator")
    again = client.post(f"/live/confirmations/{confirmation.id}", {"approve": "false"})
    assert again.status_code == 409
    assert "already approved" in again.content.decode()


def test_rejecting_a_tool_fails_the_task_with_tool_denied(runtime_host, staff_user):
    task = start_deploying_task(runtime_host, staff_user)
    confirmation = wait_for_confirmation(runtime_host, task.id)
    response = login(staff_user).post(f"/live/confirmations/{confirmation.id}", {"approve": "false"})
    assert response.status_code == 200
    assert "rejected" in response.content.decode()
    task = wait_for_task(runtime_host, task.id)
    assert task.status == "failed"
    assert task.error["code"] == "tool_denied"


def test_only_staff_decide_tool_confirmations(runtime_host, staff_user, viewer_user):
    from django.contrib.auth.models import Permission

    task = start_deploying_task(runtime_host, staff_user)
    confirmation = wait_for_confirmation(runtime_host, task.id)
    assert login(viewer_user).post(f"/live/confirmations/{confirmation.id}", {"approve": "true"}).status_code == 404
    viewer_user.user_permissions.add(Permission.objects.get(codename="view_task"))
    refused = login(viewer_user).post(f"/live/confirmations/{confirmation.id}", {"approve": "true"})
    assert refused.status_code == 403
    assert "only staff" in refused.content.decode()
    task.created_by = viewer_user  # starting a task does not make one an approver of its tools
    task.save(update_fields=["created_by"])
    assert login(viewer_user).post(f"/live/confirmations/{confirmation.id}", {"approve": "true"}).status_code == 403
    assert ToolConfirmation.objects.get(pk=confirmation.id).status == "pending"
    assert login(staff_user).post(f"/live/confirmations/{confirmation.id}", {"approve": "false"}).status_code == 200
    wait_for_task(runtime_host, task.id)


def test_unknown_ids_are_404s(builtin, staff_user):
    client = login(staff_user)
    assert client.get("/live/contexts/nope/").status_code == 404
    assert client.post("/live/confirmations/nope", {"approve": "true"}).status_code == 404
    assert client.post("/live/contexts/nope/snapshots", {"label": ""}).status_code == 404
    assert client.get("/tasks/nope/artifacts/x.json").status_code == 404
    assert client.get("/replay/nope/").status_code == 404


def test_whole_artifact_is_served_as_text_to_those_who_may_see_the_task(finished_task, staff_user, viewer_user):
    response = login(staff_user).get(f"/tasks/{finished_task.id}/artifacts/analysis.json")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain")
    assert response.content.decode() == finished_task.artifacts.get(name="analysis.json").content
    assert login(viewer_user).get(f"/tasks/{finished_task.id}/artifacts/analysis.json").status_code == 404


def test_task_page_uses_the_live_fragments(finished_task, staff_user):
    html = login(staff_user).get(f"/tasks/{finished_task.id}/").content.decode()
    assert f'data-live-socket="/ws/tasks/{finished_task.id}/"' in html
    assert f'id="task-{finished_task.id}"' in html
    assert f'id="artifact-{finished_task.id}-analysis.json"' in html
    for context in finished_task.contexts.all():
        assert f'id="ctx-{context.id}"' in html


def test_role_filter_pages_match_sender_or_receiver_in_send_order(finished_task, staff_user):
    from django.db.models import Q

    from monitoring.live_filters import LiveFilters
    from monitoring.message_log import message_page

    make_messages(finished_task, 90, start_seq=20_000)  # every third one is from pm
    expected = list(
        Message.objects.filter(Q(from_role="pm") | Q(to_role="pm")).order_by("-seq").values_list("id", flat=True)
    )
    assert len(expected) > 30
    first = message_page(staff_user, LiveFilters(role="pm"), size=15)
    second = message_page(staff_user, LiveFilters(role="pm"), before=first.older, size=15)
    assert first.older is not None
    assert second.older is not None
    assert [r["id"] for r in first.rows] + [r["id"] for r in second.rows] == expected[:30]


def test_call_graph_counts_one_task_the_latest_unless_filtered_by_task(finished_task, staff_user):
    """Issue 30: counts summed over every task said nothing about any of them."""
    from monitoring.call_graph import call_edges
    from monitoring.live_filters import LiveFilters

    other = Task.objects.create(id="later-task", title="later", status="completed")
    newest = Message.objects.order_by("-seq").values_list("seq", flat=True).first()
    make_messages(other, 10, start_seq=newest + 1)  # odd i: invoke_request, main|pm -> dba
    edges, shown = call_edges(staff_user, LiveFilters())
    assert shown == other.id
    later = Message.objects.filter(task_id=other.id, type__in=("invoke_request", "hook_event"))
    assert sum(e.count for e in edges) == later.count() == 5
    edges, shown = call_edges(staff_user, LiveFilters(task=finished_task.id))
    everything = Message.objects.filter(task_id=finished_task.id, type__in=("invoke_request", "hook_event"))
    assert shown == finished_task.id
    assert sum(e.count for e in edges) == everything.count()


def test_live_page_with_a_task_the_user_may_not_see_says_so(finished_task, viewer_user):
    response = login(viewer_user).get(f"/live/?task={finished_task.id}")
    assert response.status_code == 400
    html = response.content.decode()
    assert f"task: there is no task {finished_task.id}" in html
    assert 'data-live-socket="/ws/live/"' in html  # the page falls back to what the user may see


def test_operator_text_is_escaped_everywhere_it_is_shown(runtime_host, staff_user):
    task = start_deploying_task(runtime_host, staff_user)
    confirmation = wait_for_confirmation(runtime_host, task.id)
    client = login(staff_user)
    evil = "<img src=x onerror=alert(1)>"
    assert client.post(f"/live/contexts/{confirmation.context_id}/instructions", {"text": evil}).status_code == 200
    assert client.post(f"/live/contexts/{confirmation.context_id}/snapshots", {"label": evil}).status_code == 200
    pages = [
        client.get(f"/live/contexts/{confirmation.context_id}/").content.decode(),
        client.get(f"/live/?task={task.id}").content.decode(),
        client.get(f"/replay/{confirmation.context_id}/").content.decode(),
        client.get(f"/live/log/?task={task.id}").content.decode(),
    ]
    for html in pages:
        assert evil not in html
    assert "&lt;img src=x onerror=alert(1)&gt;" in pages[0]
    assert "&lt;img" in pages[2]
    assert "&lt;img" in pages[3]
    client.post(f"/live/confirmations/{confirmation.id}", {"approve": "false"})
    wait_for_task(runtime_host, task.id)


def test_each_task_gets_its_own_short_id_on_the_cards(runtime_host, staff_user):
    first, second = (
        wait_for_task(runtime_host, start_task(workflow="generic", task_description=text, user=staff_user).id)
        for text in ("Outline the release notes", "Outline the changelog")
    )
    assert first.id[:8] == second.id[:8], "ids of one process share their leading digits"
    client = login(staff_user)
    live = client.get("/live/").content.decode()
    for task in (first, second):
        page = client.get(f"/tasks/{task.id}/").content.decode()
        for html in (live, page):
            assert f'title="{task.id}">{task.id[-8:]}</a>' in html
            assert f">{task.id[:8]}</a>" not in html


def test_the_task_page_shows_its_tokens_once_in_the_live_status_chip(finished_task, staff_user):
    html = login(staff_user).get(f"/tasks/{finished_task.id}/").content.decode()
    header = html.split('id="task-header"')[1].split("<h2>")[0]
    shown = f"≈ {finished_task.tokens_used:,} tokens"
    assert finished_task.tokens_used > 0
    assert html.count(shown) == 1
    assert 'data-field="task-tokens"' in header and f"{shown} <abbr" in header
    assert "(est.)</abbr></span>" in header  # the offline brain's counts are estimates
