"""What each call retrieved and what each agent remembers, as the operator sees them: a task
on the real runtime host (offline agents, the recorder, the database retriever) records the
pm's retrieval per call; the contexts API, the inspector and replay show it, and the memory
with the budget set by ``TEAMCLAW_MEMORY_TOKENS``."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from knowledge.sources import Upload, add_source
from runs.tasks import start_task
from tests.helpers import wait_for_task

NOTE = b"# Changelog rules\n\nEvery changelog entry names the billing export version it ships in."


@pytest.fixture
def memory_budget(settings) -> int:
    """The memory budget the host's runtime is built with (set before ``runtime_host``)."""
    settings.TEAMCLAW = {**settings.TEAMCLAW, "MEMORY_TOKENS": 1234, "DEMO_THINK_MS": 0}
    return 1234


def test_the_retrieval_of_an_offline_call_is_recorded_and_shown(memory_budget, runtime_host, staff_user, client):
    add_source(Upload("changelog.md", "text/markdown", NOTE), role="pm", project=None, load_level="basic")
    task = start_task(workflow="generic", task_description="Write the changelog of the billing export", user=staff_user)
    task = wait_for_task(runtime_host, task.id)
    pm = task.contexts.get(role="pm")

    client.force_login(staff_user)
    api = APIClient()
    api.force_authenticate(staff_user)
    body = api.get(f"/api/v1/contexts/{pm.id}").json()
    [retrieval] = [r for r in body["knowledge"] if r["chunks"]]
    assert retrieval["capability_id"] == "requirement_analysis"
    assert retrieval["message_id"] and "billing export" in retrieval["query"]
    assert retrieval["chunks"][0]["source"] == "changelog.md"
    assert retrieval["chunks"][0]["heading"] == "Changelog rules"
    assert body["memory"]["budget_tokens"] == memory_budget
    assert body["memory"]["history"] == []  # offline agents remember nothing (no model turns)
    main = api.get(f"/api/v1/contexts/{task.contexts.get(role='main').id}").json()
    assert all(not r["chunks"] for r in main["knowledge"])  # main has no sources

    inspector = client.get(f"/live/contexts/{pm.id}/").content.decode()
    assert "Every changelog entry names the billing export version" in inspector
    assert "replays up to 1234" in inspector and "Nothing remembered yet" in inspector
    snapshot = pm.snapshots.get(trigger="knowledge for requirement_analysis")
    replay = client.get(f"/replay/{pm.id}/", {"snapshot": snapshot.id}).content.decode()
    assert "changelog.md" in replay and "Every changelog entry names the billing export version" in replay


def test_with_no_source_at_all_a_call_records_no_retrieval(memory_budget, runtime_host, staff_user, monkeypatch):
    """A team without documents: no call searches, so no context shows a retrieval (before,
    every call recorded an empty one, up to 50 per context, in every snapshot). Once a source
    exists, the calls search again and record what they found, nothing included."""
    from knowledge import retrieval
    from monitoring.models import ExecutionContext

    retrieval.SOURCE_PRESENCE.note(True)  # whatever an earlier test's look found: look again
    monkeypatch.setattr(retrieval, "PRESENCE_TTL_S", 600.0)  # one look for the whole task, however slow
    task = start_task(workflow="generic", task_description="Write the changelog of the billing export", user=staff_user)
    task = wait_for_task(runtime_host, task.id)
    contexts = ExecutionContext.objects.filter(task_id=task.id)
    assert contexts.count() >= 2
    # The first call looks once and finds the database empty; it records that look.
    assert sum(len(c.knowledge) for c in contexts) == 1

    add_source(Upload("changelog.md", "text/markdown", NOTE), role="pm", project=None, load_level="basic")
    again = wait_for_task(
        runtime_host,
        start_task(workflow="generic", task_description="Write the changelog again", user=staff_user).id,
    )
    main = again.contexts.get(role="main")
    assert main.knowledge and all(not r["chunks"] for r in main.knowledge)  # searched, nothing in scope
