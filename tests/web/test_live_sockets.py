"""The live sockets through the real ASGI stack and channel layer (WebsocketCommunicator):
access, origin, group delivery after commit, reconnect state, slow clients (issue #6)."""

from __future__ import annotations

from html.parser import HTMLParser

import pytest
from asgiref.sync import sync_to_async
from django.test import Client

from monitoring.live_sink import get_live_sink
from monitoring.models import ExecutionContext, Message, Snapshot, Task
from runs.tasks import start_task
from tests.helpers import wait_for_task
from tests.live_helpers import (
    close,
    collect_until,
    next_frame,
    open_socket,
    start_deploying_task,
    task_finished,
    wait_for_confirmation,
)
from web.sockets.consumers import LiveConsumer, TaskConsumer

pytestmark = pytest.mark.django_db(transaction=True)


def fills_of(frame) -> dict[str, str]:
    assert frame["type"] == "state", frame
    return {f["into"]: f["html"] for f in frame["fills"]}


async def test_anonymous_sockets_are_refused(runtime_host):
    for path in ("/ws/live/", "/ws/tasks/abc/"):
        _, connected, code = await open_socket(path, user=None)
        assert not connected
        assert code == 4401


async def test_foreign_or_missing_origin_is_refused(runtime_host, staff_user):
    communicator, connected, _ = await open_socket("/ws/live/", staff_user, origin=(b"origin", b"http://evil.example"))
    assert not connected
    communicator, connected, _ = await open_socket("/ws/live/", staff_user, origin=None)
    assert not connected
    communicator, connected, _ = await open_socket("/ws/live/", staff_user)
    assert connected
    await close(communicator)


async def test_an_unknown_socket_path_is_refused_not_a_server_error(runtime_host, staff_user):
    for path in ("/ws/nope/", "/ws/", "/ws/live/extra/", "/elsewhere/"):
        _, connected, code = await open_socket(path, staff_user)
        assert (connected, code) == (False, 4404), path


async def test_bad_filters_and_unknown_tasks_are_refused(runtime_host, staff_user):
    _, connected, code = await open_socket("/ws/live/?type=gossip", staff_user)
    assert (connected, code) == (False, 4400)
    _, connected, code = await open_socket("/ws/live/?task=nope", staff_user)
    assert (connected, code) == (False, 4404)
    _, connected, code = await open_socket("/ws/tasks/nope/", staff_user)
    assert (connected, code) == (False, 4404)


async def test_a_user_cannot_watch_someone_elses_task(runtime_host, staff_user, viewer_user):
    task = await sync_to_async(start_task)(workflow="generic", task_description="Plan a sprint", user=staff_user)
    await sync_to_async(wait_for_task)(runtime_host, task.id)
    _, connected, code = await open_socket(f"/ws/tasks/{task.id}/", viewer_user)
    assert (connected, code) == (False, 4404)
    _, connected, code = await open_socket(f"/ws/live/?task={task.id}", viewer_user)
    assert (connected, code) == (False, 4404)
    communicator, connected, _ = await open_socket(f"/ws/tasks/{task.id}/", staff_user)
    assert connected
    await close(communicator)


async def test_connect_sends_the_current_state_so_a_reconnect_misses_nothing(runtime_host, staff_user):
    task = await sync_to_async(start_task)(
        workflow="generic", task_description="Summarise the backlog", user=staff_user
    )
    await sync_to_async(wait_for_task)(runtime_host, task.id)
    contexts = await sync_to_async(list)(ExecutionContext.objects.filter(task=task))
    messages = await sync_to_async(list)(Message.objects.filter(task_id=task.id))
    assert contexts
    assert messages

    communicator, connected, _ = await open_socket("/ws/live/", staff_user)
    assert connected
    fills = fills_of(await next_frame(communicator))
    for context in contexts:
        assert f'id="ctx-{context.id}"' in fills["context-cards"]
    newest = max(messages, key=lambda m: m.seq)
    assert f'id="msg-{newest.id}"' in fills["message-log-rows"]
    assert 'data-from="user" data-to="main" data-kind="invoke" data-count="1"' in fills["call-graph-box"]
    assert 'data-from="main" data-to="pm" data-kind="invoke" data-count="1"' in fills["call-graph-box"]
    await close(communicator)

    communicator, connected, _ = await open_socket(f"/ws/tasks/{task.id}/", staff_user)
    fills = fills_of(await next_frame(communicator))
    assert "completed" in fills["task-header"]
    assert "analysis.json" in fills["artifacts"]
    await close(communicator)


async def test_events_reach_the_live_and_task_groups_only_after_they_are_committed(runtime_host, staff_user):
    live, connected, _ = await open_socket("/ws/live/", staff_user)
    assert connected
    await next_frame(live)
    task = await sync_to_async(start_task)(workflow="generic", task_description="Estimate the work", user=staff_user)
    per_task, connected, _ = await open_socket(f"/ws/tasks/{task.id}/", staff_user)
    assert connected
    await next_frame(per_task)

    async def in_database(event):
        # Publish after commit: whatever a browser is told, the database already holds.
        data = event["data"]
        if event["kind"] == "message":
            assert await sync_to_async(Message.objects.filter(pk=data["id"]).exists)()
        elif event["kind"] == "context":
            assert await sync_to_async(ExecutionContext.objects.filter(pk=data["id"]).exists)()
        elif event["kind"] == "snapshot":
            assert await sync_to_async(Snapshot.objects.filter(pk=data["id"]).exists)()

    events = await collect_until(live, task_finished(task.id), on_event=in_database)
    kinds = {e["kind"] for e in events}
    assert {"message", "context", "snapshot", "task"} <= kinds
    contexts = {e["data"]["id"]: e["data"] for e in events if e["kind"] == "context"}
    stored = await sync_to_async(list)(ExecutionContext.objects.filter(task=task))
    assert set(contexts) == {c.id for c in stored}
    for row in stored:
        assert contexts[row.id]["status"] == row.status == "completed"
        assert contexts[row.id]["progress"] == row.progress
    delivered = [e for e in events if e["kind"] == "message" and e["data"]["type"] == "invoke_response"]
    assert delivered
    assert all(e["data"]["status"] == "delivered" for e in delivered)
    assert all(e["swap"]["html"].strip().startswith(("<", "\n")) for e in events)

    task_events = await collect_until(per_task, task_finished(task.id))
    assert {e["kind"] for e in task_events} >= {"context", "artifact", "task"}
    assert all(e["task_id"] == task.id for e in task_events)
    await close(live)
    await close(per_task)


class ElementIds(HTMLParser):
    """Every element id of an HTML text, and the first element's."""

    def __init__(self, html: str):
        super().__init__()
        self.ids: list[str] = []
        self.first: str | None = None
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        found = dict(attrs).get("id")
        if self.first is None:
            self.first = found or ""
        if found:
            self.ids.append(found)


def page_ids(user, path: str) -> set[str]:
    client = Client()
    client.force_login(user)
    response = client.get(path)
    assert response.status_code == 200
    return set(ElementIds(response.content.decode()).ids)


async def test_pushed_ids_are_the_ids_the_pages_render(runtime_host, staff_user):
    # The element ids come from one place (monitoring.dom_ids): a pushed fragment's root has
    # the id its swap names, its container is on the page, and the page a browser loads
    # afterwards shows the same thing under the same id.
    task = await sync_to_async(start_task)(workflow="generic", task_description="Size the epic", user=staff_user)
    per_task, connected, _ = await open_socket(f"/ws/tasks/{task.id}/", staff_user)
    assert connected
    await next_frame(per_task)
    events = await collect_until(per_task, task_finished(task.id))
    await close(per_task)
    for event in events:
        assert ElementIds(event["swap"]["html"]).first == event["swap"]["id"], event["kind"]
    task_page = await sync_to_async(page_ids)(staff_user, f"/tasks/{task.id}/")
    live_page = await sync_to_async(page_ids)(staff_user, "/live/")
    for event in events:
        if event["kind"] in {"context", "artifact", "task"}:
            assert event["swap"]["id"] in task_page | live_page, event["swap"]["id"]
    for container in ("context-cards", "confirmations", "artifacts", "message-log-rows", "task-header"):
        assert container in task_page
    for container in ("live-tasks", "context-cards", "confirmations", "alerts", "config-changes", "call-graph-box"):
        assert container in live_page


async def test_the_task_chip_pushed_at_the_end_carries_the_tokens_used_and_the_budget(runtime_host, staff_user):
    task = await sync_to_async(start_task)(workflow="generic", task_description="Size the epic", user=staff_user)
    per_task, connected, _ = await open_socket(f"/ws/tasks/{task.id}/", staff_user)
    assert connected
    await next_frame(per_task)
    events = await collect_until(per_task, task_finished(task.id))
    final = [e for e in events if e["kind"] == "task"][-1]
    row = await sync_to_async(Task.objects.get)(pk=task.id)
    assert row.tokens_used > 0
    assert row.token_budget == 50_000
    assert f"≈ {row.tokens_used:,} tokens" in final["swap"]["html"]  # offline: an estimate, no budget
    await close(per_task)


async def test_a_user_only_receives_events_of_tasks_they_may_see(runtime_host, staff_user, viewer_user):
    staff_socket, _, _ = await open_socket("/ws/live/", staff_user)
    viewer_socket, _, _ = await open_socket("/ws/live/", viewer_user)
    await next_frame(staff_socket)
    await next_frame(viewer_socket)

    theirs = await sync_to_async(start_task)(workflow="generic", task_description="Staff only", user=staff_user)
    await collect_until(staff_socket, task_finished(theirs.id))
    await sync_to_async(runtime_host.recorder.flush)()
    await sync_to_async(get_live_sink().flush)()
    assert await viewer_socket.receive_nothing(timeout=0.5)

    mine = await sync_to_async(start_task)(workflow="generic", task_description="The viewer's own", user=viewer_user)
    events = await collect_until(viewer_socket, task_finished(mine.id))
    assert {e["task_id"] for e in events if e["task_id"]} == {mine.id}
    await close(staff_socket)
    await close(viewer_socket)


async def test_filters_narrow_what_a_live_socket_receives(runtime_host, staff_user):
    socket, _, _ = await open_socket("/ws/live/?role=pm&type=invoke_request", staff_user)
    await next_frame(socket)
    task = await sync_to_async(start_task)(workflow="generic", task_description="Filtered", user=staff_user)
    events = await collect_until(socket, task_finished(task.id))
    messages = [e["data"] for e in events if e["kind"] == "message"]
    assert messages, "the pm's invoke_request should pass the filter"
    assert all(m["type"] == "invoke_request" and "pm" in (m["from_role"], m["to_role"]) for m in messages)
    assert all(e["data"]["role"] == "pm" for e in events if e["kind"] == "context")
    await close(socket)


async def test_a_stalled_client_is_told_it_fell_behind_and_is_resynchronised(runtime_host, staff_user, monkeypatch):
    monkeypatch.setattr(LiveConsumer, "outbox_options", {"window": 1, "frame_events": 2, "max_pending": 4})
    socket, _, _ = await open_socket("/ws/live/", staff_user)
    state = await next_frame(socket, ack=False)  # never acknowledged: the client is stalled
    assert state["type"] == "state"
    task = await sync_to_async(start_task)(workflow="generic", task_description="Busy", user=staff_user)
    behind = await next_frame(socket, ack=False)
    # Nothing but the notice was sent while the window was full.
    assert behind["type"] == "behind"
    assert behind["seq"] == state["seq"] + 1
    assert behind["dropped"] > 0
    await sync_to_async(wait_for_task)(runtime_host, task.id)
    assert await socket.receive_nothing(timeout=0.3)
    await socket.send_json_to({"type": "ack", "seq": behind["seq"]})
    resync = await next_frame(socket)
    assert resync["type"] == "state"
    assert resync["resync"] is True
    contexts = await sync_to_async(list)(ExecutionContext.objects.filter(task=task))
    html = fills_of(resync)["context-cards"]
    assert all(f'id="ctx-{c.id}"' in html for c in contexts)
    await close(socket)


async def test_a_task_socket_that_resynchronises_after_the_task_ended_shows_its_final_status(
    runtime_host, staff_user, monkeypatch
):
    monkeypatch.setattr(TaskConsumer, "outbox_options", {"window": 1, "frame_events": 2, "max_pending": 4})
    task = await sync_to_async(start_task)(workflow="generic", task_description="Busy", user=staff_user)
    socket, connected, _ = await open_socket(f"/ws/tasks/{task.id}/", staff_user)
    assert connected
    state = await next_frame(socket, ack=False)  # never acknowledged: the client is stalled
    assert state["type"] == "state"
    await sync_to_async(wait_for_task)(runtime_host, task.id)
    frames = [await next_frame(socket, ack=False)]
    while frames[-1]["type"] != "behind":
        frames.append(await next_frame(socket, ack=False))
    await socket.send_json_to({"type": "ack", "seq": frames[-1]["seq"]})
    resync = await next_frame(socket)
    assert resync["type"] == "state"
    assert resync["resync"] is True
    header = fills_of(resync)["task-header"]
    assert 'data-field="task-status">completed<' in header, header
    await close(socket)


async def test_a_confirmation_request_and_its_decision_are_pushed(runtime_host, staff_user, client):
    socket, _, _ = await open_socket("/ws/live/", staff_user)
    await next_frame(socket)
    task = await sync_to_async(start_deploying_task)(runtime_host, staff_user)

    def asked(events):
        return any(e["kind"] == "confirmation" and e["data"]["status"] == "pending" for e in events)

    events = await collect_until(socket, asked)
    request = next(e for e in events if e["kind"] == "confirmation")
    assert request["data"]["tool"] == "deployment"
    assert request["data"]["role"] == "main"
    assert 'name="approve"' in request["swap"]["html"]
    row = await sync_to_async(wait_for_confirmation)(runtime_host, task.id)
    assert row.id == request["data"]["id"]
    await sync_to_async(client.force_login)(staff_user)
    response = await sync_to_async(client.post)(f"/live/confirmations/{row.id}", {"approve": "true"})
    assert response.status_code == 200

    def decided(events):
        return any(e["kind"] == "confirmation" and e["data"]["status"] == "approved" for e in events)

    events = await collect_until(socket, lambda ev: decided(ev) and task_finished(task.id)(ev))
    final = [e for e in events if e["kind"] == "task"][-1]
    assert final["data"]["status"] == "completed"
    assert (await sync_to_async(Task.objects.get)(pk=task.id)).status == "completed"
    await close(socket)


async def test_a_standalone_invoke_updates_but_does_not_join_the_task_list(runtime_host, staff_user):
    from teamclaw.runtime.invocation import InvokeRequest

    socket, _, _ = await open_socket("/ws/live/", staff_user)
    await next_frame(socket)
    request = InvokeRequest("schema_query", {"table": "users"}, target_role="dba")
    result = await runtime_host.acall(runtime_host.runtime.invoke(request, from_role="main"))
    assert result.success, result.error
    events = await collect_until(socket, task_finished(result.task_id))
    task_events = [e for e in events if e["kind"] == "task"]
    assert task_events
    assert all(e["swap"]["into"] == "" for e in task_events)
    assert any(e["kind"] == "message" and e["data"]["capability_id"] == "schema_query" for e in events)
    await close(socket)


async def test_a_skipped_or_expired_batch_makes_the_socket_resynchronise(runtime_host, staff_user):
    from channels.layers import get_channel_layer

    socket, _, _ = await open_socket("/ws/live/", staff_user)
    await next_frame(socket)
    layer = get_channel_layer()
    empty = {"type": "live.batch", "sink": "other-process", "meta": "[]", "texts": ""}
    await layer.group_send("live", {**empty, "g": 1})
    await layer.group_send("live", {**empty, "g": 2})
    assert await socket.receive_nothing(timeout=0.3)  # consecutive: nothing to do
    await layer.group_send("live", {**empty, "g": 4})  # number 3 never arrived
    behind = await next_frame(socket)
    assert behind["type"] == "behind"
    state = await next_frame(socket)
    assert state["type"] == "state"
    assert state["resync"] is True
    # A shared batch that already left the sink's ring: same treatment.
    await layer.group_send("live", {"type": "live.batch", "sink": "gone", "g": 1, "n": 10**9})
    assert (await next_frame(socket))["type"] == "behind"
    assert (await next_frame(socket))["resync"] is True
    await close(socket)


async def test_events_the_sink_had_to_drop_resynchronise_their_sockets(runtime_host, staff_user):
    socket, _, _ = await open_socket("/ws/live/", staff_user)
    await next_frame(socket)
    get_live_sink()._lose({"live"})  # what an overflowing queue or a failed send records
    assert (await next_frame(socket))["type"] == "behind"
    assert (await next_frame(socket))["resync"] is True
    await close(socket)


async def test_a_failing_batch_never_stops_the_sink(runtime_host, staff_user, monkeypatch):
    from monitoring import live_events

    real_render = live_events.render
    calls = {"n": 0}

    def render_failing_once(items, tasks, languages=()):
        calls["n"] += 1
        if calls["n"] == 1:
            raise RuntimeError("a template blew up")
        return real_render(items, tasks, languages)

    monkeypatch.setattr(live_events, "render", render_failing_once)
    socket, _, _ = await open_socket("/ws/live/", staff_user)
    await next_frame(socket)
    first = await sync_to_async(start_task)(workflow="generic", task_description="Survive", user=staff_user)
    await sync_to_async(wait_for_task)(runtime_host, first.id)
    # The batch that failed is not silently lost: the socket is resynchronised from the database.
    frame = await next_frame(socket)
    while frame["type"] != "state":
        frame = await next_frame(socket)
    assert frame["resync"] is True
    contexts = await sync_to_async(list)(ExecutionContext.objects.filter(task=first))
    cards = fills_of(frame)["context-cards"]
    assert contexts
    assert all(f'id="ctx-{c.id}"' in cards and "completed" in cards for c in contexts)
    # ...and the sink's thread carries on with the next batches.
    second = await sync_to_async(start_task)(workflow="generic", task_description="Next", user=staff_user)
    await collect_until(socket, task_finished(second.id))
    assert calls["n"] > 1
    assert get_live_sink()._thread.is_alive()
    await close(socket)


def test_sends_to_a_loop_that_stopped_are_given_up_and_resynchronised(monkeypatch):
    import asyncio
    import threading
    import time

    from channels.layers import InMemoryChannelLayer

    from monitoring import live_sink

    monkeypatch.setattr(live_sink, "SEND_TIMEOUT_S", 3600)  # only the stopped loop can end the wait
    monkeypatch.setattr(live_sink, "get_channel_layer", lambda: InMemoryChannelLayer())
    sink = live_sink.LiveSink()
    loop = asyncio.new_event_loop()
    runner = threading.Thread(target=loop.run_forever, daemon=True)
    runner.start()
    sink.bind_loop(loop)
    loop.call_soon_threadsafe(time.sleep, 0.5)  # the loop is busy: our send cannot run yet
    sink._send([("task.t1", {"type": "live.batch"})])
    loop.call_soon_threadsafe(loop.stop)
    waiter = threading.Thread(target=sink._drain_sends)
    waiter.start()
    waiter.join(30)
    assert not waiter.is_alive()
    assert sink.failed_sends == 1
    assert sink._resyncs() == [("task.t1", {"type": "live.resync"})]
    runner.join(5)
    loop.close()


async def test_logging_out_closes_that_sessions_sockets_only(runtime_host, staff_user, client):
    from channels.testing import WebsocketCommunicator

    from teamclaw.asgi import application
    from tests.live_helpers import HOST, ORIGIN

    await sync_to_async(client.force_login)(staff_user)
    cookie = f"sessionid={client.cookies['sessionid'].value}".encode()
    mine = WebsocketCommunicator(application, "/ws/live/", headers=[HOST, ORIGIN, (b"cookie", cookie)])
    assert (await mine.connect(timeout=15))[0]
    await next_frame(mine)
    other, connected, _ = await open_socket("/ws/live/", staff_user)  # another login of the same user
    assert connected
    await next_frame(other)

    response = await sync_to_async(client.post)("/logout/")
    assert response.status_code == 302
    closed = await mine.receive_output(timeout=5)
    assert closed == {"type": "websocket.close", "code": 4401}
    # The other session is untouched and still streams.
    task = await sync_to_async(start_task)(workflow="generic", task_description="Still here", user=staff_user)
    events = await collect_until(other, task_finished(task.id))
    assert any(e["kind"] == "task" for e in events)
    await close(other)
    # Reconnecting with the logged-out session is refused.
    again = WebsocketCommunicator(application, "/ws/live/", headers=[HOST, ORIGIN, (b"cookie", cookie)])
    connected, _ = await again.connect(timeout=15)
    assert not connected
