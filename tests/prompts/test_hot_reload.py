"""Hot reload boundary (PRD §4.8 当前正在执行的任务不受影响): a prompt saved while a task runs
reaches agents at their next task start; the task in flight keeps the prompt it began with.

Runs the real runtime host (its own thread and loop) with an offline brain for the main
agent's ``task_orchestration`` that reads its system prompt, waits, and reads it again.
"""

from __future__ import annotations

import asyncio
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from capabilities.models import AgentRole
from monitoring.models import Task
from prompts.actions import save_version
from runs import host as host_module
from teamclaw.runtime import ExecutorRegistry, OfflineExecutor
from teamclaw.runtime.executors.offline import synthesise
from tests.helpers import wait_for_task


def wait_until(predicate, timeout=20.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.02)
    raise AssertionError("condition not met in time")


@pytest.fixture
def prompt_recording_host(transactional_db, builtin):
    """A runtime host whose main agent records ``call.system_prompt()`` at the start and end
    of ``task_orchestration``; tasks titled "hold" wait for ``release`` in between."""
    seen: dict[str, dict[str, str]] = {}
    release = threading.Event()
    holder = ThreadPoolExecutor(max_workers=2, thread_name_prefix="hold")

    async def orchestrate(call):
        task_id = call.task.task_id
        seen.setdefault(task_id, {})["start"] = call.system_prompt()
        if call.params["task_description"].startswith("hold"):
            # Not the loop's default executor: the host keeps that single worker for loading
            # config snapshots, which the second task needs while this one holds.
            await asyncio.get_running_loop().run_in_executor(holder, release.wait, 30)
        seen[task_id]["end"] = call.system_prompt()
        return synthesise(call.card.output_schema, call.params, call.card.capability_id)

    brain = OfflineExecutor({"task_orchestration": orchestrate})
    host_module.reset_host()
    host = host_module.RuntimeHost("prompts-test", executors=ExecutorRegistry({"offline": brain})).start()
    host_module._host = host  # start_task (the API) uses this host
    yield host, seen, release
    release.set()
    host_module.reset_host()
    holder.shutdown(wait=True)


def start(api, description, **extra):
    response = api.post(
        "/api/v1/tasks", {"workflow": "generic", "task_description": description, **extra}, format="json"
    )
    assert response.status_code == 201, response.json()
    return response.json()["task_id"]


def test_a_task_in_flight_keeps_its_prompt_and_the_next_task_gets_the_new_one(prompt_recording_host, api, staff_user):
    host, seen, release = prompt_recording_host
    first = start(api, "hold: first task")
    wait_until(lambda: "start" in seen.get(first, {}))
    main = AgentRole.objects.get(role="main")
    assert seen[first]["start"].startswith(f"You are the {main.display_name} ({main.emoji}) of the TeamClaw project.")

    result = save_version(
        role=AgentRole.objects.get(role="main"),
        template_type="system_prompt",
        content="HOT RELOADED prompt for {{ project_name }}.",
        actor=staff_user,
        note="hot reload test",
    )
    wait_until(lambda: host.runtime.latest_version >= result.change.new_version)

    second = start(api, "second task")
    wait_until(lambda: "end" in seen.get(second, {}))
    release.set()
    assert wait_for_task(host, first).status == "completed"
    assert wait_for_task(host, second).status == "completed"

    assert "HOT RELOADED" not in seen[first]["start"]
    assert seen[first]["end"] == seen[first]["start"]  # same pinned snapshot from start to end
    assert seen[second]["start"].startswith("HOT RELOADED prompt for TeamClaw.")
    first_version = Task.objects.get(pk=first).config_version
    second_version = Task.objects.get(pk=second).config_version
    assert first_version < result.change.new_version <= second_version


def test_the_task_enhancement_reaches_the_agent_prompt(prompt_recording_host, api):
    host, seen, _release = prompt_recording_host
    task_id = start(api, "plain task", prompt_enhancement="Answer in haiku.")
    assert wait_for_task(host, task_id).status == "completed"
    assert seen[task_id]["start"].endswith("Answer in haiku.")
    assert "Current task: plain task" in seen[task_id]["start"]
